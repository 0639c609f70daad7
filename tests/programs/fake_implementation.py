"""A stand-in implementation for the stdio transport tests: a JSON-RPC 2.0 server on stdin/stdout that
behaves, or misbehaves on command.

It is deliberately simple and synchronous (standard library only).  Misbehaviour is chosen per call by
the method the kit sends, or for the whole run by a command-line option:

methods   ``echo`` (answer the params), ``callback`` (call the kit back with ``kit.compute`` and answer
          what it said; requests the kit sends meanwhile are served first), ``notify`` (send the kit a
          ``kit.note`` notification, then answer), ``crash`` (say why on stderr, exit 3, no answer),
          ``hang`` (never answer), ``garbage`` (write a line that is not JSON), ``huge`` (answer a
          result of ``params.bytes`` characters on one line), ``exit`` (answer, then exit 0),
          ``stderr`` (write ``params.lines`` lines to stderr, then answer); the ``bye`` notification
          ends the process with code 0, the end of input without ``bye`` with code 4.
options   ``--protocol-version V`` (answered to hello), ``--hello MODE`` (``answer``, ``hang``,
          ``garbled``, ``refuse``, ``crash``), ``--stderr-noise N`` (before and after every message,
          N lines of stderr noise, some shaped like JSON-RPC answers), ``--ignore-bye`` (and the end of
          input: keep running until signalled), ``--ignore-term``
          (survive SIGTERM, so only SIGKILL stops it).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any

OUT = sys.stdout
ERR = sys.stderr


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message, ensure_ascii=False) + "\n")
    OUT.flush()


def answer(request_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def noise(count: int) -> None:
    for index in range(count):
        if index % 3 == 0:
            ERR.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": "stderr is not the protocol"}) + "\n")
        elif index % 3 == 1:
            ERR.write(f"warning {index}: " + "x" * 150 + "\n")
        else:
            ERR.write("not json at all {{{\n")
    ERR.flush()


class Server:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.next_id = 1

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.readline()
        if not line:
            return None
        noise(self.options.stderr_noise)
        message: dict[str, Any] = json.loads(line)
        return message

    def call_kit(self, method: str, params: Any) -> Any:
        """Send a request to the kit and wait for its answer, serving the kit's own requests meanwhile."""
        request_id = self.next_id
        self.next_id += 1
        send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message is None:
                sys.exit(4)
            if "method" in message:
                self.serve(message)
            elif message.get("id") == request_id:
                return message.get("result", {"error": message.get("error")})

    def serve(self, message: dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params", {})
        request_id = message.get("id")
        options = self.options
        if method == "bye" and request_id is None:
            if not options.ignore_bye:
                sys.exit(0)
            return
        if method == "hello":
            self.hello(request_id, params)
        elif method == "echo":
            answer(request_id, params)
        elif method == "callback":
            answer(request_id, {"fromKit": self.call_kit("kit.compute", params)})
        elif method == "notify":
            send({"jsonrpc": "2.0", "method": "kit.note", "params": params})
            answer(request_id, "noted")
        elif method == "crash":
            ERR.write("fatal: simulated crash in the middle of a request\n")
            ERR.flush()
            sys.exit(3)
        elif method == "hang":
            while True:
                time.sleep(3600)
        elif method == "garbage":
            OUT.write("this line is not JSON {\n")
            OUT.flush()
        elif method == "huge":
            answer(request_id, "y" * int(params["bytes"]))
        elif method == "exit":
            answer(request_id, "exiting")
            sys.exit(0)
        elif method == "stderr":
            for index in range(int(params["lines"])):
                ERR.write(f"stderr line {index}\n")
            ERR.flush()
            answer(request_id, "written")
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})
        noise(options.stderr_noise)

    def hello(self, request_id: Any, params: Any) -> None:
        mode = self.options.hello
        if mode == "hang":
            while True:
                time.sleep(3600)
        elif mode == "garbled":
            answer(request_id, {"version": "whatever"})
        elif mode == "refuse":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "too old"}})
        elif mode == "crash":
            ERR.write("cannot start: missing configuration\n")
            ERR.flush()
            sys.exit(2)
        else:
            answer(
                request_id,
                {"protocolVersion": self.options.protocol_version, "name": "fake", "received": params},
            )

    def run(self) -> None:
        while (message := self.read()) is not None:
            self.serve(message)
        while self.options.ignore_bye:  # a stuck child: only a signal ends it
            time.sleep(3600)
        sys.exit(4)  # the input ended without a bye


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol-version", default="1.0")
    parser.add_argument("--hello", default="answer", choices=["answer", "hang", "garbled", "refuse", "crash"])
    parser.add_argument("--stderr-noise", type=int, default=0)
    parser.add_argument("--ignore-bye", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    options = parser.parse_args()
    if options.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    noise(options.stderr_noise)
    Server(options).run()


if __name__ == "__main__":
    main()
