"""A vendor's failure as the seam's classified error (no I/O).

An HTTP dialect hands over what it received: the status (``None`` for an error frame inside a stream that
had answered 200) and the parsed JSON body (``None`` when the body was not JSON).  The kind comes from the
pure classifier (:mod:`relavium_reference._rules.overflow`, KD-OVF-1); the provider's own message and code
ride along for diagnostics only (the session never shows an overflow's provider text, KD-OVF-2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from relavium_reference._model.llm import LlmError
from relavium_reference._model.vocabulary import LlmErrorKind
from relavium_reference._rules.overflow import Dialect, classify_provider_error

__all__ = ["error_from_reply", "parse_json", "transport_error", "unexpected_status"]


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` that fails only with ``ValueError``: a value nested too deeply for the parser is
    malformed like any other (a vendor's frame or error body is never that deep)."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def _inner(body: Any) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        inner = body.get("error")
        return inner if isinstance(inner, Mapping) else body
    return {}


def error_from_reply(dialect: Dialect, status: int | None, body: Any) -> LlmError:
    """The classified error of one failed reply or stream error frame."""
    inner = _inner(body)
    message = inner.get("message")
    if dialect == "gemini":  # google.rpc: ``code`` repeats the HTTP status, ``status`` names the failure
        code = inner.get("status")
    else:
        code = inner.get("code")
        if code is None or isinstance(code, bool):
            code = inner.get("type")
    return LlmError(
        kind=classify_provider_error(dialect, status, body),
        message=message if isinstance(message, str) else f"HTTP {status}" if status else "stream error",
        provider=dialect,
        status=status,
        code=None if code is None else str(code),
    )


def transport_error(dialect: Dialect, message: str, *, timeout: bool = False) -> LlmError:
    """The connection failed, or the stream ended before the dialect's end-of-stream signal."""
    return LlmError(
        kind=LlmErrorKind.TIMEOUT if timeout else LlmErrorKind.TRANSPORT, message=message, provider=dialect
    )


def unexpected_status(dialect: Dialect, status: int) -> LlmError | None:
    """A reply that is neither the stream (200) nor a failure (4xx, 5xx): a redirect (never followed: the
    endpoint is the host's to configure) or another 1xx-3xx status is a transport failure, carrying the
    status; ``None`` for a 4xx or 5xx, which the classifier reads."""
    if 400 <= status <= 599:
        return None
    what = "a redirect, not followed" if 300 <= status < 400 else "no event stream"
    return LlmError(
        kind=LlmErrorKind.TRANSPORT, message=f"HTTP {status}: {what}", provider=dialect, status=status
    )
