"""Hostile vendors on 127.0.0.1: real HTTP servers that misbehave, for the engine's dialect client.

Each server is an asyncio server on a free loopback port; its handler reads the request head (and the
body its ``Content-Length`` declares) and then writes whatever the test wants, as slowly or as much as it
wants.  Nothing is mocked: the engine's httpx client talks to it over TCP.  Also the bombs' payloads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from relavium_reference._host.dialect_client import HttpEndpoint, HttpLimits, HttpProvider
from relavium_reference._model.llm import LlmMessage, LlmRequest, LlmTextPart, StreamChunk

Handler = Callable[[asyncio.StreamWriter], Awaitable[None]]

REQUEST = LlmRequest(model="model-a", messages=[LlmMessage(role="user", content=[LlmTextPart(text="hi")])])
SMALL = HttpLimits(
    error_body_bytes=4096, reply_bytes=1 << 20, sse_line_chars=64 * 1024, sse_event_chars=128 * 1024
)


@dataclass
class Served:
    """What the hostile server did: how many requests it saw, how many body bytes it got written."""

    requests: int = 0
    written: int = 0
    closed_early: int = 0  # writes that failed because the client had gone
    done: list[bool] = field(default_factory=list)


@contextlib.asynccontextmanager
async def hostile(handler: Handler) -> AsyncIterator[tuple[str, Served]]:
    """A server answering every request with ``handler``, on its own thread and loop (so a handler that
    writes as fast as it can never starves the client's loop); yields its base URL and its tally."""
    served = Served()
    ready: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Server]] = (
        concurrent.futures.Future()
    )
    tasks: set[asyncio.Task[None]] = set()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            await reader.readexactly(length)
            served.requests += 1
            await handler(writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            served.closed_early += 1
        except asyncio.CancelledError:
            pass  # the test is over
        finally:
            writer.close()
            tasks.discard(task)

    async def serve() -> None:
        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        ready.set_result((asyncio.get_running_loop(), server))
        with contextlib.suppress(asyncio.CancelledError):
            await server.serve_forever()
        for task in list(tasks):
            task.cancel()
        for task in list(tasks):
            with contextlib.suppress(BaseException):
                await task

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    loop, server = await asyncio.wrap_future(ready)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", served
    finally:
        loop.call_soon_threadsafe(server.close)
        await asyncio.to_thread(thread.join, 10)


def provider(base: str, dialect: str = "openai", limits: HttpLimits = SMALL) -> HttpProvider:
    url = base + "/v1" if dialect == "openai" else base
    return HttpProvider(HttpEndpoint(dialect, base_url=url, api_key="k", limits=limits))  # type: ignore[arg-type]


async def collect(chunks: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [chunk async for chunk in chunks]


def head(status: int, *headers: str, chunked: bool = False, length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", *headers, "connection: close"]
    if chunked:
        lines.append("transfer-encoding: chunked")
    if length is not None:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def send(writer: asyncio.StreamWriter, served: Served, data: bytes) -> None:
    writer.write(data)
    await writer.drain()
    served.written += len(data)


@functools.cache
def gzip_zeros(size: int, line: bytes = b"") -> bytes:
    """``size`` zero bytes (or ``size`` bytes of ``line`` repeated), gzipped: about a thousandfold smaller."""
    block = line * ((1 << 20) // len(line)) if line else bytes(1 << 20)
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(packer.compress(block) for _ in range(size >> 20)) + packer.flush()


def openai_frame(text: str) -> bytes:
    body = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"
