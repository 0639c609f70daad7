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

What a client sends cannot exhaust the kit either: a request body over :data:`MAX_REQUEST_BODY` is
refused unread (its declared size is never buffered) and fails the case naming the cap; past
:data:`MAX_RECORDED_REQUESTS` a case's requests are only counted (one difference says how many more came);
connections left open, idle or half-sent are dropped quietly when the case ends.
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
from relavium_conformance._wire.protocol_messages import ProviderEndpoint

__all__ = ["RECORDED_HEADERS", "DialectServer", "start_dialect_server", "stop_dialect_server"]

KIT_API_KEY: str = ProviderEndpoint.model_fields["api_key"].default  # expected on every request

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
    413: "Content Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_HEAD = 64 * 1024
MAX_REQUEST_BODY = 8 * 1024 * 1024
"""The largest request body the server reads (a case's requests are a few kilobytes): a request declaring
more is refused unread (413) and fails the case, naming this cap."""
MAX_RECORDED_REQUESTS = 200
"""The most requests one case's server records; the ones after it are refused (429) and counted, and
the case gets one difference saying how many more arrived."""


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
        take: Callable[[], Sequence[Any] | Reply | None],
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
        self._closing = False
        self._unrecorded = 0  # requests that arrived after MAX_RECORDED_REQUESTS

    @classmethod
    async def start(
        cls, providers: dict[str, str], observed: _Recorder, take: Callable[[], Sequence[Any] | Reply | None]
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
                # every field KD-WIRE-1 lists, so a port need not apply the schema's default to find it
                "apiKey": KIT_API_KEY,
            }
            for name, kind in sorted(self._providers.items())
        ]

    async def close(self) -> None:
        """Stop serving; the connections still open (half-open, idle, mid-request) are dropped quietly."""
        self._closing = True
        if self._unrecorded:
            message = (
                f"{self._unrecorded} more provider request(s) arrived after the first "
                f"{MAX_RECORDED_REQUESTS}, not recorded (the kit records at most {MAX_RECORDED_REQUESTS})"
            )
            self._violation(f"provider_requests[{MAX_RECORDED_REQUESTS}]", message, form=DifferenceForm.EXTRA)
            self._unrecorded = 0
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
        except asyncio.CancelledError:
            if not self._closing:
                raise
            # closed by close(): end normally (a cancelled handler is reported by asyncio on Python 3.11)
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
        if length < 0:
            return
        if length > MAX_REQUEST_BODY:  # never buffered: refused unread, and the connection closed
            reply = self._refuse(method, target, headers, length)
        else:
            raw = await reader.readexactly(length) if length else b""
            reply = self._answer(method, target, headers, raw)
        await _write(writer, reply)

    def _refuse(self, method: str, target: str, headers: dict[str, str], length: int) -> Reply:
        if self._full():
            return Reply(status=429, body=b'{"error": {"message": "kit: too many requests"}}')
        provider, _, below = target.lstrip("/").partition("/")
        number = len(self._observed.provider_requests)
        self._observed.provider_requests.append(
            {
                "provider": provider,
                "model": None,
                "http": {
                    "method": method,
                    "path": "/" + below,
                    "headers": {k: headers[k] for k in RECORDED_HEADERS if k in headers},
                    "body": None,
                },
            }
        )
        message = (
            f"{method} {target} declared a {length}-byte body, over the kit's cap of {MAX_REQUEST_BODY} bytes"
            " (not read)"
        )
        self._violation(f"provider_requests[{number}]", message)
        return Reply(status=413, body=b'{"error": {"message": "kit: request body over the cap"}}')

    def _full(self) -> bool:
        """Whether the log is full (then this request is only counted)."""
        if len(self._observed.provider_requests) < MAX_RECORDED_REQUESTS:
            return False
        self._unrecorded += 1
        return True

    def _answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Reply:
        if self._full():
            return Reply(status=429, body=b'{"error": {"message": "kit: too many requests"}}')
        provider, _, below = target.lstrip("/").partition("/")
        path = "/" + below
        try:
            body: Any = json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
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
        if isinstance(steps, Reply):  # already written out (a recorded stream, replayed as recorded)
            return steps
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
