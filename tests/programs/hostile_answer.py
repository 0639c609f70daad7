"""A program that shakes hands properly, then answers ``session.create`` with one hostile line.

``python hostile_answer.py MODE`` where MODE picks the line (each is its own answer to the request, so the
kit must blame the case that sent it):

``deep``     a result nested 200,000 deep (the reader's recursion would not survive decoding it)
``utf8``     a line that is not UTF-8
``nan``      a result holding the ``NaN`` literal
``repeated`` an object that repeats the key ``sessionId``
``digits``   an integer of 5,000 digits
``huge``     a line of 17 MiB (past the 16 MiB line limit)
``array``    a JSON array of no messages (``[]``)
``scalar``   a bare JSON number
``late``     a sound answer, and a second answer to the same request sent only when the next
             ``session.create`` arrives (a late duplicate: the earlier case's fault, not the next one's)

Standard library only; any other method is answered ``{}``; ``bye`` ends the program.
"""

from __future__ import annotations

import json
import sys

HELLO = {
    "protocolVersion": "1.1",
    "implementation": {"name": "hostile", "version": "0", "language": "python"},
    "capabilities": ["core"],
}


def hostile_line(mode: str, request_id: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"result":' % request_id
    if mode == "deep":
        depth = 200_000
        return head + b'{"sessionId":"s","x":' + b"[" * depth + b"]" * depth + b"}}"
    if mode == "utf8":
        return head + b'{"sessionId":"s\xff\xfe"}}'
    if mode == "nan":
        return head + b'{"sessionId":"s","x":NaN}}'
    if mode == "repeated":
        return head + b'{"sessionId":"s","sessionId":"t"}}'
    if mode == "digits":
        return head + b'{"sessionId":"s","x":' + b"7" * 5000 + b"}}"
    if mode == "huge":
        return head + b'{"sessionId":"' + b"x" * (17 * 1024 * 1024) + b'"}}'
    if mode == "array":
        return b"[]"
    if mode == "scalar":
        return b"42"
    raise SystemExit(f"unknown mode {mode}")


def created(request_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "s"}}).encode() + b"\n"


def main() -> int:
    mode = sys.argv[1]
    out = sys.stdout.buffer
    earlier: int | None = None  # mode late: the session.create to answer a second time
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if not isinstance(message, dict):
            continue
        method = message.get("method")
        if method == "bye":
            return 0
        if "id" not in message:
            continue
        if method == "session.create" and mode == "late":
            if earlier is not None:
                out.write(created(earlier))  # the earlier case's request, answered a second time
            earlier = message["id"]
            out.write(created(earlier))
        elif method == "session.create":
            out.write(hostile_line(mode, message["id"]) + b"\n")
        else:
            result = HELLO if method == "hello" else {}
            out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
