"""Classifying what a provider sent back: one pure function per question, no I/O (KD-OVF-1).

A provider failure arrives as an HTTP status and a JSON body (the dialect's error envelope), or as an
error frame inside a stream that had answered 200.  :func:`classify_provider_error` gives the seam's
:class:`~relavium_reference._model.vocabulary.LlmErrorKind` for it; ``context_overflow`` only for the
official overflow payloads of the dialect, as the wire facts record them:

* Anthropic: 400 ``invalid_request_error`` whose message is ``prompt is too long: N tokens > M maximum``
  or ``input length and `max_tokens` exceed context limit: I + O > L``;
* OpenAI: 400 (or a stream error frame) whose ``code`` is ``context_length_exceeded``;
* Gemini: 400 ``INVALID_ARGUMENT`` whose message is ``The input token count (N) exceeds the maximum
  number of tokens allowed (M).``;
* DeepSeek: 400 ``invalid_request_error`` whose message is ``This model's maximum context length is N
  tokens. However, you requested ...``.

Look-alikes never classify as overflow: a 429 (rate limit or exhausted quota), a spend limit, a
``max_tokens`` or temperature range error, a 413 about bytes.  The same official payload from a custom
base URL is downgraded (:func:`overflow_evidence`): it still is an overflow, but not an authoritative
one, so it never starts recovery.  Anthropic's native ``model_context_window_exceeded`` stop reason is a
success-shaped overflow of its own (:func:`is_native_context_stop`).

What the session does with an overflow is decided here too: the terminal's fixed wording
(:func:`overflow_message`, KD-OVF-2) and whether the turn may run its one recovery
(:func:`may_recover`, over the private :class:`RecoveryFacts` of the current invocation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from relavium_reference._model.vocabulary import LlmErrorKind

__all__ = [
    "DIALECTS",
    "OFFICIAL_BASE_URLS",
    "WINDOW_SIZE_UNKNOWN",
    "Dialect",
    "OverflowEvidence",
    "RecoveryFacts",
    "classify_provider_error",
    "is_native_context_stop",
    "is_official_base_url",
    "may_recover",
    "overflow_evidence",
    "overflow_message",
]

Dialect = Literal["anthropic", "openai", "gemini", "deepseek"]
DIALECTS: tuple[Dialect, ...] = ("anthropic", "openai", "gemini", "deepseek")

OFFICIAL_BASE_URLS: dict[Dialect, tuple[str, ...]] = {
    "anthropic": ("https://api.anthropic.com",),
    "openai": ("https://api.openai.com",),
    "gemini": ("https://generativelanguage.googleapis.com",),
    "deepseek": ("https://api.deepseek.com",),
}
"""The vendors' own endpoints (scheme and host); any other base URL is a custom endpoint."""

_ANTHROPIC_OVERFLOW = (
    re.compile(r"^prompt is too long: \d+ tokens > \d+ maximum$"),
    re.compile(r"^input length and `max_tokens` exceed context limit: \d+ \+ \d+ > \d+"),
)
_GEMINI_OVERFLOW = re.compile(
    r"^The input token count \(\d+\) exceeds the maximum number of tokens allowed \(\d+\)\.?$"
)
_DEEPSEEK_OVERFLOW = re.compile(
    r"^This model's maximum context length is \d+ tokens\. However, you requested "
)

_NATIVE_CONTEXT_STOP = "model_context_window_exceeded"


@dataclass(frozen=True)
class OverflowEvidence:
    """A genuine provider overflow; ``authoritative`` is false for a custom endpoint (no recovery)."""

    dialect: Dialect
    authoritative: bool


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _inner(body: Any) -> Mapping[str, Any]:
    """The error object of an envelope: ``{"error": {...}}``, or the frame itself when it is flat."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return inner
        return body
    return {}


def _is_official_overflow(dialect: Dialect, status: int | None, body: Any) -> bool:
    error = _inner(body)
    message = _text(error.get("message"))
    if dialect == "anthropic":
        return (
            status == 400
            and error.get("type") == "invalid_request_error"
            and any(pattern.match(message) for pattern in _ANTHROPIC_OVERFLOW)
        )
    if dialect == "openai":
        return status in (400, None) and error.get("code") == "context_length_exceeded"
    if dialect == "gemini":
        return (
            status == 400
            and error.get("status") == "INVALID_ARGUMENT"
            and bool(_GEMINI_OVERFLOW.match(message))
        )
    return (
        status == 400
        and error.get("type") == "invalid_request_error"
        and bool(_DEEPSEEK_OVERFLOW.match(message))
    )


def classify_provider_error(dialect: Dialect, status: int | None, body: Any) -> LlmErrorKind:
    """The seam's error kind for one provider failure (``status`` is ``None`` for a stream error frame)."""
    if dialect not in DIALECTS:
        return LlmErrorKind.UNKNOWN
    if _is_official_overflow(dialect, status, body):
        return LlmErrorKind.CONTEXT_OVERFLOW
    error = _inner(body)
    kind = _text(error.get("type")) or _text(error.get("status"))
    if status == 429 or kind in ("rate_limit_error", "RESOURCE_EXHAUSTED"):
        return LlmErrorKind.RATE_LIMIT
    if status in (401, 403) or kind in (
        "authentication_error",
        "permission_error",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
    ):
        return LlmErrorKind.AUTH
    if status in (503, 529) or kind in ("overloaded_error", "UNAVAILABLE", "server_is_overloaded"):
        return LlmErrorKind.OVERLOADED
    if status in (408, 504) or kind == "timeout_error":
        return LlmErrorKind.TIMEOUT
    if (status is not None and status >= 500) or kind in ("api_error", "INTERNAL", "server_error"):
        return LlmErrorKind.OVERLOADED  # the provider is unavailable for now
    if status is not None and 400 <= status < 500:
        return LlmErrorKind.BAD_REQUEST
    return LlmErrorKind.UNKNOWN


def is_official_base_url(dialect: Dialect, base_url: str | None) -> bool:
    """``None`` (the dialect's default) or the vendor's own scheme and host, with any path below it."""
    if base_url is None:
        return True
    trimmed = base_url.rstrip("/")
    return any(
        trimmed == official or trimmed.startswith(official + "/")
        for official in OFFICIAL_BASE_URLS.get(dialect, ())
    )


def overflow_evidence(
    dialect: Dialect, status: int | None, body: Any, *, base_url: str | None = None
) -> OverflowEvidence | None:
    """The overflow this failure is, or ``None``: official payloads only, downgraded off the vendor's host."""
    if classify_provider_error(dialect, status, body) is not LlmErrorKind.CONTEXT_OVERFLOW:
        return None
    return OverflowEvidence(dialect=dialect, authoritative=is_official_base_url(dialect, base_url))


def is_native_context_stop(dialect: Dialect, stop_reason: Any) -> bool:
    """Anthropic's own stop reason for a response that filled the context window (a 200, not an error)."""
    return dialect == "anthropic" and stop_reason == _NATIVE_CONTEXT_STOP


WINDOW_SIZE_UNKNOWN = "window size unknown"
TOOLS_RAN_SUFFIX = "; tools already ran"


def overflow_message(model: str, window: int | None, *, tools_ran: bool) -> str:
    """The ``context_overflow`` terminal's message (KD-OVF-2): never a word of the provider's own text.

    ``window`` is the attempted model's authoritative window, ``None`` when there is none (unknown
    model, custom endpoint, downgraded evidence).
    """
    size = f"{window} tokens" if window is not None and window > 0 else WINDOW_SIZE_UNKNOWN
    suffix = TOOLS_RAN_SUFFIX if tools_ran else ""
    return f"context window exceeded for model {model} ({size}){suffix}"


@dataclass(frozen=True)
class RecoveryFacts:
    """What a turn knows when one invocation ended in an overflow; private, never persisted or emitted.

    ``genuine``: the overflow is the current invocation's own classified error with official evidence
    (an observer's exception, rethrown or not, is never one).  ``window``: the attempted model's
    authoritative window.  ``tools_dispatched`` and ``content_streamed``: the turn's commitment so far.
    ``automatic_allowed``: the resolved memory policy permits automatic compaction.
    ``presend_suppressed``: a pre-send compaction earlier in the turn failed or was skipped (the
    irreducible-fit skip included).  ``recovered``: this turn already ran its one recovery.
    """

    genuine: bool
    window: int | None
    tools_dispatched: bool
    content_streamed: bool
    automatic_allowed: bool
    presend_suppressed: bool
    recovered: bool


def may_recover(facts: RecoveryFacts) -> bool:
    """One compaction and one fresh retry are allowed only before any commitment, once, with evidence."""
    return (
        facts.genuine
        and facts.window is not None
        and facts.window > 0
        and not facts.tools_dispatched
        and not facts.content_streamed
        and facts.automatic_allowed
        and not facts.presend_suppressed
        and not facts.recovered
    )
