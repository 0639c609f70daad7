"""One broken store served over stdio, so the store profile's replica cases can run it in processes:
``python -m relavium_conformance._selftest.stores.serve NAME`` (the selftest starts it; exit 2 for an
unknown name).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from relavium_conformance._selftest.stores import BROKEN_STORES

__all__ = ["serve_command", "serve_store"]


def serve_command(name: str) -> list[str]:
    """The command line that serves the broken store ``name``."""
    return [sys.executable, "-m", "relavium_conformance._selftest.stores.serve", name]


def serve_store(name: str) -> int:
    from relavium_conformance._reference.stdio_server import serve_stdio

    found = [b for b in BROKEN_STORES if b.name == name]
    if not found:
        print(f"serve: no broken store is named {name!r}", file=sys.stderr)
        return 2

    class Served:
        """The broken store alone: ``hello`` answers its declaration, the rest is the store's."""

        def __init__(self, _callback: Any) -> None:
            self.store = found[0].implementation()

        def hello_result(self) -> Any:
            return self.store.hello_result()

        async def handle(self, method: str, params: dict[str, Any]) -> Any:
            if method == "hello":
                return self.store.hello_result().to_wire()
            return await self.store.handle(method, params)

    return asyncio.run(serve_stdio(Served))


if __name__ == "__main__":
    sys.exit(serve_store(sys.argv[1] if len(sys.argv) > 1 else ""))
