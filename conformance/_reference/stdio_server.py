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
import os
import sys
from pathlib import Path
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._wire.handshake import answer_protocol_version
from relavium_conformance._wire.jsonrpc import DEFAULT_LINE_LIMIT, JsonRpcPeer, open_stdio_streams

__all__ = ["MISBEHAVIOURS", "register", "serve_stdio"]


MISBEHAVIOURS = ("crash", "hang", "garbage", "stderr-noise", "wrong-version")


async def serve_stdio(
    implementation_factory: Any = ReferenceImplementation,
    *,
    misbehave: str | None = None,
    once_marker: Path | None = None,
) -> int:
    """Serve until the kit says ``bye`` or closes stdin.

    ``misbehave`` makes the server break the protocol on purpose (for ``selftest``): ``crash`` exits,
    ``hang`` never answers, ``garbage`` writes a line that is not JSON, all three at the first
    ``session.send``; ``stderr-noise`` floods stderr with protocol-looking lines but behaves;
    ``wrong-version`` answers ``hello`` with another major version.  With ``once_marker``, the crash,
    hang or garbage happens only if the marker file does not exist yet (it is created first), so a
    restarted server behaves.
    """
    reader, writer = await open_stdio_streams(line_limit=DEFAULT_LINE_LIMIT)
    peer: JsonRpcPeer | None = None

    async def callback(method: str, params: dict[str, Any]) -> Any:
        assert peer is not None
        return await peer.request(method, params, timeout=None)  # the kit may hold a callback on purpose

    implementation = implementation_factory(callback)
    closing: list[asyncio.Future[None]] = []

    async def _close_soon() -> None:
        await asyncio.sleep(0)
        if peer is not None:
            await peer.aclose()

    async def handler(method: str, params: dict[str, Any]) -> Any:
        if method == "bye":
            closing.append(asyncio.ensure_future(_close_soon()))
            return None
        if misbehave is not None:
            await _misbehave(misbehave, method, once_marker, writer)
        result = await implementation.handle(method, params)
        if method == "hello":  # the newest version both sides speak (docs/protocol.md, the handshake)
            result = {**result, "protocolVersion": answer_protocol_version(params.get("protocolVersion"))}
        if misbehave == "wrong-version" and method == "hello":
            result = {**result, "protocolVersion": "99.0"}
        return result

    peer = JsonRpcPeer(reader, writer, handler=handler, line_limit=DEFAULT_LINE_LIMIT)
    await peer.wait_failure()  # the kit said bye (we closed) or went away (end of input)
    await peer.aclose()
    return 0


async def _misbehave(mode: str, method: str, once_marker: Path | None, writer: asyncio.StreamWriter) -> None:
    if mode == "stderr-noise":
        noise = ('{"jsonrpc": "2.0", "id": 1, "result": {}}', "Traceback (most recent call last):", "x" * 500)
        for line in noise:
            print(line, file=sys.stderr, flush=True)
        return
    if method != "session.send" or mode not in ("crash", "hang", "garbage"):
        return
    if once_marker is not None:
        if once_marker.exists():
            return
        once_marker.touch()
    if mode == "crash":
        print("stdio-server: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)
    if mode == "hang":
        await asyncio.Event().wait()
    writer.write(b"this line is not JSON-RPC\n")
    await writer.drain()


def _main(args: argparse.Namespace) -> int:
    from relavium_conformance._reference.session_store_impl import both_profiles_factory

    if args.store == "pg":  # a clear line and exit 3 (not started), never a traceback
        from relavium_conformance._reference.session_store_pg import check_kit_dsn
        from relavium_reference._model.errors import RelaviumError

        try:
            check_kit_dsn()
        except RelaviumError as exc:
            print(f"stdio-server: {exc}", file=sys.stderr, flush=True)
            return 3

    factory: Any = both_profiles_factory(args.store)
    if args.capabilities is not None:
        declared = tuple(name for name in args.capabilities.split(",") if name)

        def factory(callback: Any) -> ReferenceImplementation:
            return ReferenceImplementation(callback, capabilities=declared)

    code = asyncio.run(serve_stdio(factory, misbehave=args.misbehave, once_marker=args.once_marker))
    # Served and closed: every answer is written and every store write committed.  The interpreter's
    # own teardown (freeing every module and cache, 0.1-0.4 s here) is skipped: the kit waits for this
    # exit, and nothing is left that a teardown would save.
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "stdio-server",
        help="serve the reference engine over the kit's JSON-RPC stdio protocol (for reference-stdio)",
        description=(
            "Serve the reference engine on stdin/stdout: one JSON-RPC 2.0 message per line, hello first, "
            "stderr for diagnostics only. This is the program behind --adapter reference-stdio, and a "
            "worked example for adapter authors."
        ),
    )
    parser.add_argument("--misbehave", choices=MISBEHAVIOURS, help="break the protocol on purpose (selftest)")
    parser.add_argument(
        "--once-marker",
        type=Path,
        metavar="FILE",
        help="misbehave only while FILE does not exist (it is created first), so a restarted server behaves",
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "ttl", "pg"),
        default="sqlite",
        help="the session store served beside the engine (session-store profile): the durable SQLite "
        "store (default), the in-memory TTL store, or the PostgreSQL store on the server RELAVIUM_PG_DSN "
        "names (a libpq connection string)",
    )
    parser.add_argument(
        "--capabilities",
        metavar="A,B",
        help="declare only these capabilities (comma-separated) instead of all the reference has",
    )
    parser.set_defaults(handler=_main)
