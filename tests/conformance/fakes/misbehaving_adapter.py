"""A small misbehaving implementation for the runner's reliability tests (plain blocking stdio).

``python misbehaving_adapter.py MODE``: answers ``hello`` properly, then misbehaves in ``MODE``:

* ``stop-reading``: starts a child that calls ``setsid`` (its pid goes to ``$FAKE_PIDFILE``), floods the
  kit with callbacks it never reads the answers of, and stops reading its input for good;
* ``odd-value``: answers every operation with ``$FAKE_VALUE`` (a JSON text) as its result;
* ``flood-events``: on ``session.create`` emits ``$FAKE_EVENTS`` (default 100000) ``host.emit`` calls without
  waiting for their answers (a thread throws the answers away);
* ``secret``: prints a provider key and a bearer token on stderr, then exits at ``session.create``;
* ``control-name``: names itself with ESC and BEL characters, and exits at ``session.create``;
* ``close-stdout``: at ``session.create`` closes its stdout and keeps running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
OUT = sys.stdout.buffer


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message).encode("ascii") + b"\n")  # a lone surrogate travels as a legal escape
    OUT.flush()


def hello(request: dict[str, Any]) -> None:
    name = "fake\x1b[31m-red\x07" if MODE == "control-name" else "fake"
    implementation = {"name": name, "version": "0", "language": "py"}
    capabilities = ["core", "user-commands", "resume", "export", "persistence"]
    result = {"protocolVersion": "1.0", "implementation": implementation, "capabilities": capabilities}
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def stop_reading(request: dict[str, Any]) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"], start_new_session=True
    )
    pidfile = os.environ.get("FAKE_PIDFILE")
    if pidfile:
        with open(pidfile, "a", encoding="utf-8") as handle:
            handle.write(f"{child.pid}\n")
    for n in range(20000):  # each answer the kit writes back stays in its buffer: we never read again
        send(
            {"jsonrpc": "2.0", "id": n, "method": "host.sleep", "params": {"handle": "nobody", "seconds": 0}}
        )
    while True:
        time.sleep(1)


def flood(request: dict[str, Any]) -> None:
    def discard() -> None:
        for _ in sys.stdin.buffer:
            pass

    threading.Thread(target=discard, daemon=True).start()
    handle = request["params"]["handle"]
    for n in range(int(os.environ.get("FAKE_EVENTS", "100000"))):
        event = {"type": "session:tick", "sessionId": "s", "seq": n, "padding": "x" * 64}
        send(
            {
                "jsonrpc": "2.0",
                "id": f"e{n}",
                "method": "host.emit",
                "params": {"handle": handle, "event": event},
            }
        )
    while True:
        time.sleep(1)


def main() -> None:
    if MODE == "secret":
        print(
            "provider said: invalid key sk-proj-AbCdEf0123456789AbCdEf0123456789", file=sys.stderr, flush=True
        )
        print("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.abcdefghijkl", file=sys.stderr, flush=True)
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        method = request.get("method")
        if "id" not in request or method is None:
            continue
        if method == "hello":
            hello(request)
        elif MODE == "stop-reading":
            stop_reading(request)
        elif MODE == "flood-events" and method == "session.create":
            flood(request)
        elif MODE == "close-stdout":
            os.close(1)
            while True:
                time.sleep(1)
        elif MODE == "odd-value":
            value = json.loads(os.environ["FAKE_VALUE"])
            result = {"sessionId": value} if method == "session.create" else value
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        else:
            sys.exit(7)


if __name__ == "__main__":
    main()
