"""A port frozen at protocol 1.0: what an adapter written before batch lines does with today's kit.

Protocol 1.0 has one JSON object per line and nothing else, and this adapter reads it so: a line that is
not a JSON object (a batch line of 1.1, a JSON array) is ignored, with a note on stderr, exactly as a
port written then would drop it; its ``hello`` answer says ``1.0`` whatever the kit offers (1.0 told
ports to answer their own version).  The engine behind it is the reference engine (``stdio-server``),
relayed line by line, so every case that does not need 1.1 has a real engine to judge.

Never change what this program does: it stands for every 1.0 port in the field, and the test that
runs it (``tests/conformance/wire/test_protocol_versions.py``) holds the kit to serving them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO, Any

VERSION = "1.0"


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _kit_to_engine(kit: IO[bytes], engine: IO[bytes], hello_ids: set[Any]) -> None:
    for line in kit:
        message = _parse(line)
        if not isinstance(message, dict):
            sys.stderr.write(f"frozen-1.0: ignored a line that is not a JSON object: {line[:80]!r}\n")
            sys.stderr.flush()
            continue
        if message.get("method") == "hello":
            hello_ids.add(message.get("id"))
        engine.write(line)
        engine.flush()
    engine.close()


def _engine_to_kit(engine: IO[bytes], kit: IO[bytes], hello_ids: set[Any]) -> None:
    for line in engine:
        message = _parse(line)
        if (
            isinstance(message, dict)
            and "method" not in message
            and message.get("id") in hello_ids
            and isinstance(message.get("result"), dict)
        ):
            hello_ids.discard(message["id"])
            message["result"]["protocolVersion"] = VERSION
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        kit.write(line)
        kit.flush()


def main() -> int:
    engine = subprocess.Popen(
        [sys.executable, "-m", "relavium_conformance", "stdio-server", *sys.argv[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert engine.stdin is not None
    assert engine.stdout is not None
    hello_ids: set[Any] = set()
    inbound = threading.Thread(
        target=_kit_to_engine, args=(sys.stdin.buffer, engine.stdin, hello_ids), daemon=True
    )
    inbound.start()
    _engine_to_kit(engine.stdout, sys.stdout.buffer, hello_ids)
    return engine.wait()


if __name__ == "__main__":
    sys.exit(main())
