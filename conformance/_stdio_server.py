"""``relavium-conformance stdio-server``: the reference engine served over the kit's stdio protocol.

This is the program behind the ``reference-stdio`` adapter, and a worked example for authors of
adapters in other languages: read one JSON-RPC message per line on stdin, write one per line on
stdout, answer ``hello`` first, serve the kit's operations, call the kit back for the provider,
tools and host, and keep stderr for diagnostics only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from ._jsonrpc import DEFAULT_LINE_LIMIT, JsonRpcPeer
from ._reference_impl import ReferenceImplementation

__all__ = ["register", "serve_stdio"]


async def serve_stdio(implementation_factory: Any = ReferenceImplementation) -> int:
    """Serve until the kit says ``bye`` or closes stdin."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=DEFAULT_LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    finished = asyncio.Event()
    peer: JsonRpcPeer | None = None

    async def callback(method: str, params: dict[str, Any]) -> Any:
        assert peer is not None
        return await peer.request(method, params, timeout=None)  # the kit may hold a callback on purpose

    implementation = implementation_factory(callback)

    async def handler(method: str, params: dict[str, Any]) -> Any:
        if method == "bye":
            finished.set()
            return None
        return await implementation.handle(method, params)

    peer = JsonRpcPeer(reader, writer, handler=handler, line_limit=DEFAULT_LINE_LIMIT)
    while not finished.is_set() and peer.failure is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finished.wait(), 0.1)
    await peer.aclose()
    return 0


def _main(_args: argparse.Namespace) -> int:
    return asyncio.run(serve_stdio())


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "stdio-server",
        help="serve the reference engine over the kit's JSON-RPC stdio protocol (for reference-stdio)",
    )
    parser.set_defaults(handler=_main)
