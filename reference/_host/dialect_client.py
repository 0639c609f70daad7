"""Providers that talk to the vendors' HTTP APIs over httpx, in their own streaming dialects.

:class:`HttpProvider` is an :class:`~relavium_reference._model.llm.LlmProvider`: one ``stream`` call is one
POST.  What the body is and how the server-sent events read back as seam chunks is pure and lives in the
rules room (``dialect_anthropic``, ``dialect_openai``, ``dialect_gemini``, ``sse``); this shell moves bytes:

* a non-200 reply is read up to :attr:`HttpLimits.error_body_bytes` and classified from its status and
  JSON error envelope (``_rules/overflow.py``, KD-OVF-1), then ends the stream as one ``error`` chunk; a
  redirect is never followed and, like any other status that is neither the stream nor a failure, is a
  ``transport`` error;
* a 200 reply is decoded as it arrives, read by read, so a vendor's chunking never matters; its content
  encoding is undone in bounded pieces (``_rules/dialect_body.py``) and its size, lines and events are
  capped (:class:`HttpLimits`): a reply passing a cap is cut there, a ``transport`` error;
* a connection that fails, times out or drops mid-stream is a ``transport`` (or ``timeout``) error, and so is
  a stream that ends cleanly but without the dialect's end-of-stream signal.

How long an attempt may take is the session's to bound (``_host/attempt_deadline.py``), for every provider.
Failures are never raised: they arrive as an ``error`` chunk, as the seam requires.  The endpoint says
whether it is the vendor's official one (``official``; by default decided from the base URL), which is what
an overflow's authority rests on: every ``context_overflow`` leaves with ``evidence`` ``official`` from an
authoritative endpoint and ``downgraded`` from any other (KD-OVF-1, KD-OVF-3).
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import LlmError, LlmProvider, LlmRequest, StreamChunk, StreamErrorChunk
from relavium_reference._model.vocabulary import LlmErrorKind, ProviderId
from relavium_reference._rules import dialect_anthropic, dialect_gemini, dialect_openai
from relavium_reference._rules.dialect_body import (
    ACCEPTED_ENCODINGS,
    BodyEncodingError,
    BodyLimitError,
    BoundedBody,
)
from relavium_reference._rules.dialect_errors import (
    error_from_reply,
    parse_json,
    transport_error,
    unexpected_status,
)
from relavium_reference._rules.overflow import Dialect, is_official_base_url
from relavium_reference._rules.sse import (
    DEFAULT_MAX_EVENT,
    DEFAULT_MAX_LINE,
    SseDecoder,
    SseEvent,
    SseLimitError,
)

if TYPE_CHECKING:  # httpx (with its http, email and idna) is imported by the first stream: about a tenth
    import ssl  # of the stdio server's start, which a run against scripted providers never needs

    import httpx

__all__ = [
    "DEFAULT_BASE_URLS",
    "HTTP_DIALECTS",
    "HttpEndpoint",
    "HttpLimits",
    "HttpProvider",
    "http_resolver",
    "reader_for",
]

DEFAULT_BASE_URLS: dict[str, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "deepseek": "https://api.deepseek.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
HTTP_DIALECTS: tuple[Dialect, ...] = ("anthropic", "openai", "deepseek", "gemini")
"""The dialects this engine speaks over HTTP (DeepSeek is the OpenAI dialect with its own overflow)."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying TLS context, built once per process and shared by every client.

    A client left to build its own loads the CA bundle each time (~0.1 s of CPU), once per request here.
    Verification is unchanged (certifi, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as read at first use).
    """
    import httpx

    return httpx.create_ssl_context()


def _positive(value: Any, location: str, *, whole: bool = False) -> None:
    number = isinstance(value, int) or (not whole and isinstance(value, float))
    if isinstance(value, bool) or not number or not math.isfinite(value) or value <= 0:
        kind = "a positive integer" if whole else "a positive finite number"
        raise InvalidInputError(f"must be {kind}", location=location)


@dataclass(frozen=True)
class HttpLimits:
    """How much of a reply one attempt reads at most: what a server sends beyond it ends the attempt
    (a ``transport`` error), never the engine's memory.  Sizes are counted after content decoding."""

    error_body_bytes: int = 64 * 1024
    """A failed reply's body is read up to this many bytes (a vendor's error envelope is a few hundred);
    the rest is left unread and the classification rests on the status."""
    reply_bytes: int = 64 * 1024 * 1024
    """A streamed reply's whole body (a long reply of 128k output tokens is about half of it)."""
    sse_line_chars: int = DEFAULT_MAX_LINE
    sse_event_chars: int = DEFAULT_MAX_EVENT

    def __post_init__(self) -> None:
        for name in ("error_body_bytes", "reply_bytes", "sse_line_chars", "sse_event_chars"):
            _positive(getattr(self, name), f"limits.{name}", whole=True)


@dataclass(frozen=True)
class HttpEndpoint:
    """Where one provider is reached: the dialect, the base URL (``None``: the vendor's own), the key, and
    whether the host states the endpoint official (``None``: decided from the base URL)."""

    dialect: Dialect
    base_url: str | None = None
    api_key: str = ""
    official: bool | None = None
    timeout: float = 600.0
    """The longest wait for any one read (httpx's read timeout); the whole attempt is bounded by the
    session's attempt deadline (:class:`~relavium_reference.AttemptDeadline`)."""
    limits: HttpLimits = HttpLimits()

    def __post_init__(self) -> None:
        if not isinstance(self.dialect, str):
            raise InvalidInputError("must be a dialect name", location="dialect")
        if self.base_url is not None and (
            not isinstance(self.base_url, str) or not self.base_url.startswith(("http://", "https://"))
        ):
            raise InvalidInputError("must be an http(s) URL or None", location="base_url")
        if not isinstance(self.api_key, str) or not self.api_key.isascii() or not self.api_key.isprintable():
            raise InvalidInputError("must be printable ASCII", location="api_key")
        if self.official is not None and not isinstance(self.official, bool):
            raise InvalidInputError("must be a boolean or None", location="official")
        _positive(self.timeout, "timeout")
        if not isinstance(self.limits, HttpLimits):
            raise InvalidInputError("must be HttpLimits", location="limits")

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URLS[self.dialect]).rstrip("/")

    @property
    def authoritative(self) -> bool:
        """Whether an overflow from here is authoritative (KD-OVF-1)."""
        if self.official is not None:
            return self.official
        return is_official_base_url(self.dialect, self.base_url)


class _Reader(Protocol):
    finished: bool

    def event(self, sse: SseEvent) -> list[StreamChunk]: ...

    def end(self) -> list[StreamChunk]: ...


def reader_for(dialect: Dialect) -> _Reader:
    """A fresh stream reader of ``dialect`` (pure, from the rules room)."""
    if dialect == "anthropic":
        return dialect_anthropic.AnthropicStream()
    if dialect == "gemini":
        return dialect_gemini.GeminiStream()
    return dialect_openai.OpenAiStream(dialect)


def _prepare(endpoint: HttpEndpoint, request: LlmRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
    key = endpoint.api_key
    if endpoint.dialect == "anthropic":
        url = endpoint.url + dialect_anthropic.MESSAGES_PATH
        return url, dialect_anthropic.request_headers(key), dialect_anthropic.build_request(request)
    if endpoint.dialect in ("openai", "deepseek"):
        url = endpoint.url + dialect_openai.CHAT_PATH
        return url, dialect_openai.request_headers(key), dialect_openai.build_request(request)
    if endpoint.dialect == "gemini":
        url = endpoint.url + dialect_gemini.stream_path(request.model)
        return url, dialect_gemini.request_headers(key), dialect_gemini.build_request(request)
    raise LookupError(f"no HTTP dialect for {endpoint.dialect!r}")


def _json(raw: bytes) -> Any:
    try:
        return parse_json(raw)
    except ValueError:
        return None


async def _read_head(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` decoded bytes of a failed reply's body (the rest is never read): enough for any
    vendor's JSON error envelope; a longer body is cut, and its classification rests on the status."""
    kept = bytearray()
    try:
        body = BoundedBody(response.headers.get("content-encoding", ""), limit)
        async for raw in response.aiter_raw():
            for piece in body.feed(raw):
                kept += piece
                await asyncio.sleep(0)
    except (BodyLimitError, BodyEncodingError):
        pass
    return bytes(kept[:limit])


class HttpProvider:
    """One vendor endpoint as a seam provider; ``client`` is shared when given, else one per stream.

    The seams a subclass may change (the kit's broken implementations do): ``decoder`` (how bytes
    become events), :meth:`reader` (how events become chunks), :meth:`failed` (how a failed reply is
    classified) and :meth:`ended` (what a stream that stops sending means)."""

    decoder: type[SseDecoder] = SseDecoder

    def __init__(self, endpoint: HttpEndpoint, client: httpx.AsyncClient | None = None) -> None:
        if not isinstance(endpoint, HttpEndpoint):
            raise InvalidInputError("must be an HttpEndpoint", location="endpoint")
        if endpoint.dialect not in HTTP_DIALECTS:
            raise LookupError(f"no HTTP dialect for {endpoint.dialect!r}")
        self.endpoint = endpoint
        self._client = client

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._attest(self._run(request))

    async def _attest(self, chunks: AsyncGenerator[StreamChunk, None]) -> AsyncIterator[StreamChunk]:
        """An overflow says where it came from (KD-OVF-3): ``official`` only from an authoritative one."""
        evidence = "official" if self.endpoint.authoritative else "downgraded"
        try:
            async for chunk in chunks:
                if isinstance(chunk, StreamErrorChunk) and chunk.error.kind is LlmErrorKind.CONTEXT_OVERFLOW:
                    error = chunk.error.model_copy(update={"evidence": evidence})
                    chunk = chunk.model_copy(update={"error": error})
                yield chunk
        finally:
            await chunks.aclose()  # an abandoned stream closes its HTTP response now, not at collection

    async def _run(self, request: LlmRequest) -> AsyncGenerator[StreamChunk, None]:
        import httpx

        url, headers, body = _prepare(self.endpoint, request)
        headers = {**headers, "accept-encoding": ACCEPTED_ENCODINGS}
        reader = self.reader()
        dialect = self.endpoint.dialect
        client = self._client or httpx.AsyncClient(
            timeout=httpx.Timeout(self.endpoint.timeout, connect=5.0), verify=_tls_context()
        )
        try:
            async with client.stream(
                "POST", url, json=body, headers=headers, follow_redirects=False
            ) as response:
                async for chunk in self._reply(response, reader):
                    yield chunk
        except httpx.TimeoutException:
            if not reader.finished:
                yield StreamErrorChunk(error=transport_error(dialect, "the request timed out", timeout=True))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # refused, reset, dropped, a broken chunked body
            if not reader.finished:
                message = f"the connection failed: {type(exc).__name__}"
                yield StreamErrorChunk(error=transport_error(dialect, message))
        except (SseLimitError, BodyLimitError, BodyEncodingError) as exc:  # the reply cut where it broke
            if not reader.finished:
                yield StreamErrorChunk(error=transport_error(dialect, f"the reply was cut: {exc}"))
        finally:
            if self._client is None:
                await client.aclose()

    async def _reply(self, response: httpx.Response, reader: _Reader) -> AsyncGenerator[StreamChunk, None]:
        """One reply read within the endpoint's limits: the stream's chunks, or one classified error."""
        limits = self.endpoint.limits
        status = response.status_code
        if status != 200:
            unexpected = unexpected_status(self.endpoint.dialect, status)
            if unexpected is not None:
                yield StreamErrorChunk(error=unexpected)
                return
            raw = await _read_head(response, limits.error_body_bytes)
            yield StreamErrorChunk(error=self.failed(status, _json(raw)))
            return
        body = BoundedBody(response.headers.get("content-encoding", ""), limits.reply_bytes)
        decoder = self.decoder(max_line=limits.sse_line_chars, max_event=limits.sse_event_chars)
        async for raw in response.aiter_raw():
            for piece in body.feed(raw):  # one read may inflate to many pieces
                for chunk in self._read(reader, decoder.feed(piece)):
                    yield chunk
                if reader.finished:
                    return
                await asyncio.sleep(0)  # at most one piece's work between two turns of the loop
        for chunk in [*self._read(reader, decoder.close()), *self.ended(reader)]:
            yield chunk

    def reader(self) -> _Reader:
        """The stream reader of this endpoint's dialect."""
        return reader_for(self.endpoint.dialect)

    def failed(self, status: int | None, body: Any) -> LlmError:
        """The classified error of a non-200 reply (``_rules/overflow.py``, KD-OVF-1)."""
        return error_from_reply(self.endpoint.dialect, status, body)

    def ended(self, reader: _Reader) -> list[StreamChunk]:
        """The byte stream ended cleanly: whatever the dialect's reader says that means."""
        return reader.end()

    @staticmethod
    def _read(reader: _Reader, events: list[SseEvent]) -> list[StreamChunk]:
        chunks: list[StreamChunk] = []
        for event in events:
            if reader.finished:
                break
            chunks.extend(reader.event(event))
        return chunks


def http_resolver(
    endpoints: Mapping[str, HttpEndpoint], client: httpx.AsyncClient | None = None
) -> Callable[[ProviderId, str], LlmProvider]:
    """A ``resolve_provider`` for :class:`~relavium_reference.SessionDeps`: a provider without an endpoint
    is refused before any invocation (``LookupError``); endpoints that are not a mapping of names to
    :class:`HttpEndpoint` are refused here (``InvalidInputError``)."""
    if not isinstance(endpoints, Mapping) or not all(
        isinstance(name, str) and isinstance(endpoint, HttpEndpoint) for name, endpoint in endpoints.items()
    ):
        raise InvalidInputError("must map provider names to HttpEndpoint", location="endpoints")
    endpoints = dict(endpoints)  # a copy: later changes to the caller's mapping reach nothing

    def resolve(provider: ProviderId, model: str) -> LlmProvider:
        endpoint = endpoints.get(getattr(provider, "value", provider))
        if endpoint is None:
            raise LookupError(f"no endpoint for provider {provider!r}")
        return HttpProvider(endpoint, client)

    return resolve
