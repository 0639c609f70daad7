"""The kit's loopback HTTP server: the case's provider scripts played in the vendors' dialects.

Capability ``wire``.  For a case whose setup lists providers under ``wire``, the kit starts one server on
``127.0.0.1`` (a free port) and tells the implementation, in ``session.create``'s ``deps.providerEndpoints``,
one base URL per provider (``http://127.0.0.1:<port>/<provider>``, plus ``/v1`` for OpenAI) and whether that
endpoint stands for the vendor's official API or a custom host (KD-WIRE-1).  The implementation's own HTTP
client then talks to it as it would to the vendor.

Every request is recorded as the observed provider request: ``{provider, model, http: {method, path,
headers, body}}`` (the path below the provider's prefix with its query, a fixed set of headers, the JSON
body; ``model`` from the body, or from the path for Gemini, whose URL names it).  Each one
takes the next invocation of the case's provider script, in order, shared with ``provider.open``; the reply
is rendered by :mod:`relavium_conformance._run.dialect_render` and written as HTTP/1.1: an error with its
status and ``Content-Length``, or a ``text/event-stream`` 200 in chunked transfer encoding, every SSE frame
split across two chunks (so a reader that assumes one frame per read fails), ended by the zero chunk unless
the script drops the connection.  A request for no scripted invocation, to an unknown path or without a
JSON body is a violation.  The server writes as fast as the client reads: nothing depends on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import Difference, DifferenceForm
from relavium_conformance._run.dialect_render import DIALECT_PATHS, Reply, endpoint_model, render

__all__ = ["RECORDED_HEADERS", "DialectServer", "start_dialect_server", "stop_dialect_server"]

RECORDED_HEADERS = (
    "content-type",
    "accept",
    "anthropic-version",
    "x-api-key",
    "authorization",
    "x-goog-api-key",
)
"""The request headers a case can see (the others vary with the client and the port)."""

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_HEAD = 64 * 1024


class _Recorder:
    """Where the server books what it saw: the case's observation (duck-typed, see ``execute``)."""

    provider_requests: list[dict[str, Any]]
    violations: list[Difference]


class DialectServer:
    """One case's server; :meth:`start` binds it, :meth:`close` stops it and its open connections."""

    def __init__(
        self,
        providers: dict[str, str],
        observed: _Recorder,
        take: Callable[[], Sequence[Any] | None],
    ) -> None:
        unknown = sorted(set(providers) - set(DIALECT_PATHS))
        if unknown:
            raise KitUsageError(f"setup.wire: the kit serves no HTTP dialect for {', '.join(unknown)}")
        self._providers = providers
        self._observed = observed
        self._take = take
        self._server: asyncio.Server | None = None
        self._port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    async def start(
        cls, providers: dict[str, str], observed: _Recorder, take: Callable[[], Sequence[Any] | None]
    ) -> DialectServer:
        server = cls(providers, observed, take)
        server._server = await asyncio.start_server(server._accept, "127.0.0.1", 0)
        server._port = server._server.sockets[0].getsockname()[1]
        return server

    def endpoints(self) -> list[dict[str, Any]]:
        """``deps.providerEndpoints`` for ``session.create``."""
        return [
            {
                "provider": name,
                "baseUrl": f"http://127.0.0.1:{self._port}/{name}" + ("/v1" if name == "openai" else ""),
                "official": kind == "official",
            }
            for name, kind in sorted(self._providers.items())
        ]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away or spoke no HTTP: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _MAX_HEAD:
            return
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        raw = await reader.readexactly(length) if length else b""
        reply = self._answer(method, target, headers, raw)
        await _write(writer, reply)

    def _answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Reply:
        provider, _, below = target.lstrip("/").partition("/")
        path = "/" + below
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        number = len(self._observed.provider_requests)
        known, model = endpoint_model(provider, path, body)
        self._observed.provider_requests.append(
            {
                "provider": provider,
                "model": model,
                "http": {
                    "method": method,
                    "path": path,
                    "headers": {k: headers[k] for k in RECORDED_HEADERS if k in headers},
                    "body": body,
                },
            }
        )
        where = f"provider_requests[{number}]"
        if provider not in self._providers or not known:
            self._violation(where, f"{method} {target} is no provider endpoint the kit serves")
            return Reply(status=404, body=b'{"error": {"message": "kit: not found"}}')
        if method != "POST" or not isinstance(body, dict):
            self._violation(where, f"{method} {target} carried no JSON request body")
            return Reply(status=400, body=b'{"error": {"message": "kit: no JSON body"}}')
        steps = self._take()
        if steps is None:
            message = f"provider request #{number + 1} was not scripted"
            self._violation(where, message, form=DifferenceForm.EXTRA)
            return Reply(status=400, body=b'{"error": {"message": "kit: not scripted"}}')
        return render(provider, steps, model or "")

    def _violation(self, path: str, message: str, form: DifferenceForm | None = None) -> None:
        extra = {"form": form} if form is not None else {}
        self._observed.violations.append(Difference(path=path, message=message, **extra))


async def _write(writer: asyncio.StreamWriter, reply: Reply) -> None:
    if reply.silent:
        return  # the connection closes with no reply: a transport failure for the client
    if reply.status != 200:
        head = (
            f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Error')}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(reply.body)}\r\n"
            "x-should-retry: false\r\n"
            "connection: close\r\n\r\n"
        )
        writer.write(head.encode("latin-1") + reply.body)
        await writer.drain()
        return
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    for frame in reply.frames:
        middle = max(1, len(frame) // 2)
        for piece in (frame[:middle], frame[middle:]):
            if piece:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await writer.drain()
    if not reply.disconnect:
        writer.write(b"0\r\n\r\n")
    await writer.drain()


async def start_dialect_server(case: Any, world: Any) -> DialectServer | None:
    """Start the server of a ``wire`` case and hand its endpoints to ``session.create``; ``None`` otherwise.

    The server takes invocations from the world's own script iterator, the one ``provider.open`` takes
    from, so a case mixing HTTP and seam-level providers keeps one order."""
    providers = case.setup.wire
    if providers is None:
        return None
    calls = world._provider_calls  # the CaseWorld's script of invocations (one iterator, two doors)
    server = await DialectServer.start(providers, world.observed, lambda: next(calls, None))
    world.create_params["deps"]["providerEndpoints"] = server.endpoints()
    return server


async def stop_dialect_server(server: DialectServer | None) -> None:
    if server is not None:
        await server.close()
