"""Broken HTTP provider dialects: the reference engine with one wire behaviour of its HTTP client changed.

Each is caught by the ``wire/*`` cases citing its clauses, played by the kit's loopback server
(:mod:`relavium_conformance._run.dialect_server`); see :mod:`relavium_conformance._selftest.proofs`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference._host.dialect_client import HttpEndpoint, HttpProvider
from relavium_reference._model.llm import LlmError, StopChunk, StreamChunk, Usage
from relavium_reference._model.vocabulary import LlmErrorKind, StopReason
from relavium_reference._rules.dialect_gemini import GeminiStream
from relavium_reference._rules.sse import SseDecoder, SseEvent

__all__ = ["HTTP_BREAKS"]


class _PerReadDecoder(SseDecoder):
    """Takes every network read for whole lines: a frame split across two reads is lost."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        fresh = SseDecoder()
        return fresh.feed(chunk) + fresh.close()


class _FramesPerRead(HttpProvider):
    decoder = _PerReadDecoder


class _TokensMeanOverflow(HttpProvider):
    """The careless classifier: any failure whose message mentions tokens is a context overflow."""

    def failed(self, status: int | None, body: Any) -> LlmError:
        error = super().failed(status, body)
        if "token" in error.message.lower():
            return error.model_copy(update={"kind": LlmErrorKind.CONTEXT_OVERFLOW})
        return error


class _EndIsSuccess(HttpProvider):
    """A stream that stops sending is taken as a finished reply, end-of-stream signal or not."""

    def ended(self, reader: Any) -> list[StreamChunk]:
        reader.finished = True
        return [StopChunk(stop_reason=StopReason.STOP)]


class _TrustsEveryEndpoint(HttpProvider):
    """Takes every endpoint for the vendor's own: a custom host's overflow is never downgraded."""

    def __init__(self, endpoint: HttpEndpoint, client: Any = None) -> None:
        super().__init__(replace(endpoint, official=True), client)


class _AuthorityFromBaseUrl(HttpProvider):
    """Decides an endpoint's authority from its base URL alone, ignoring the host's ``official`` flag: a
    loopback URL is never the vendor's host, so every overflow is downgraded and none recovers."""

    def __init__(self, endpoint: HttpEndpoint, client: Any = None) -> None:
        super().__init__(replace(endpoint, official=None), client)


class _SummingGeminiStream(GeminiStream):
    """Adds every chunk's ``usageMetadata`` up, as if each were a delta (it is a running total)."""

    def usage(self, metadata: Any) -> None:
        before = self._usage
        super().usage(metadata)
        if isinstance(metadata, dict):
            self._usage = Usage(
                input_tokens=before.input_tokens + self._usage.input_tokens,
                output_tokens=before.output_tokens + self._usage.output_tokens,
            )


class _GeminiSumsUsage(HttpProvider):
    def reader(self) -> Any:
        return _SummingGeminiStream() if self.endpoint.dialect == "gemini" else super().reader()


_TOKEN_COUNT = re.compile(r"input.token.count", re.IGNORECASE)


class _GeminiTokenCountMeansOverflow(HttpProvider):
    """Matches Gemini's overflow on its prose alone: any failure naming an input token count, any status."""

    def failed(self, status: int | None, body: Any) -> LlmError:
        error = super().failed(status, body)
        if self.endpoint.dialect == "gemini" and _TOKEN_COUNT.search(error.message):
            return error.model_copy(update={"kind": LlmErrorKind.CONTEXT_OVERFLOW})
        return error


def _with(provider: type[HttpProvider]) -> type[ReferenceImplementation]:
    return type(f"Reference{provider.__name__}", (ReferenceImplementation,), {"http_provider": provider})


HTTP_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "http-frames-per-read",
        "the HTTP client parses each network read as whole SSE lines, losing frames split across reads",
        ("AS-SESS-006",),
        implementation=_with(_FramesPerRead),
    ),
    BrokenImplementation(
        "http-tokens-mean-overflow",
        "the HTTP client classifies any error mentioning tokens (a 429 among them) as a context overflow",
        ("AS-OVF-002",),
        implementation=_with(_TokensMeanOverflow),
    ),
    BrokenImplementation(
        "http-trusts-custom-endpoints",
        "the HTTP client ignores the endpoint's custom flag: a custom host's overflow counts as official",
        ("AS-OVF-016",),
        implementation=_with(_TrustsEveryEndpoint),
    ),
    BrokenImplementation(
        "http-end-of-body-is-success",
        "the HTTP client takes a stream that ends without message_stop or [DONE] as a completed reply",
        ("AS-CAP-020",),
        implementation=_with(_EndIsSuccess),
    ),
    BrokenImplementation(
        "http-authority-from-base-url",
        "the HTTP client ignores the endpoint's official flag and judges authority by the base URL alone",
        ("AS-OVF-006",),
        implementation=_with(_AuthorityFromBaseUrl),
    ),
    BrokenImplementation(
        "http-gemini-sums-usage",
        "the Gemini client adds up every chunk's usageMetadata, a running total, as if each were a delta",
        ("AS-CAP-014",),
        implementation=_with(_GeminiSumsUsage),
    ),
    BrokenImplementation(
        "http-gemini-token-count-means-overflow",
        "the Gemini client takes any failure naming an input token count (a quota 429 too) for an overflow",
        ("AS-OVF-002",),
        implementation=_with(_GeminiTokenCountMeansOverflow),
    ),
)
