"""An implementation built on the kit's own JSON-RPC peer, serving on its stdin/stdout.

It answers ``hello``; on ``session.send`` it pulls ``provider.next`` from the kit until the kit answers
``null``, and reports whether a ``session.abort`` arrived while it was waiting; ``bye`` ends it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from relavium_conformance._wire.jsonrpc import METHOD_NOT_FOUND, JsonRpcPeer, RpcError, open_stdio_streams


async def main() -> int:
    peer: JsonRpcPeer
    aborted: list[str] = []
    bye = asyncio.Event()

    async def handle(method: str, params: dict[str, Any]) -> Any:
        if method == "hello":
            return {"protocolVersion": "1.0", "name": "peer-server"}
        if method == "bye":
            bye.set()
            return None
        if method == "session.abort":
            aborted.append(params.get("reason", ""))
            return {"accepted": True}
        if method == "session.send":
            chunks: list[str] = []
            while (chunk := await peer.request("provider.next", {"turn": params["turn"]})) is not None:
                chunks.append(chunk)
            return {"text": "".join(chunks), "abortedDuringTurn": aborted}
        raise RpcError(METHOD_NOT_FOUND, f"no method {method}")

    peer = JsonRpcPeer(*await open_stdio_streams(), handler=handle)
    print("peer-server ready", file=sys.stderr, flush=True)
    failure = asyncio.create_task(peer.wait_failure())
    await asyncio.wait({failure, asyncio.create_task(bye.wait())}, return_when=asyncio.FIRST_COMPLETED)
    await peer.aclose()
    return 0 if bye.is_set() else 5


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
