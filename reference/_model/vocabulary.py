"""Closed vocabularies shared by events, errors and the LLM seam.

Values are facts of the companion contracts (event schema, LLM seam), plus ``context_overflow``,
which the specification adds to the error taxonomy.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

__all__ = [
    "RETRYABLE_ERROR_CODES",
    "TERMINAL_FINISH_REASONS",
    "ErrorCode",
    "FsScopeTier",
    "LlmErrorKind",
    "ProviderId",
    "SessionStopReason",
    "StopReason",
    "TerminalFinishReason",
    "code_for_llm_error",
]


class ErrorCode(StrEnum):
    VALIDATION = "validation"
    CONTENT_FILTER = "content_filter"
    PROVIDER_AUTH = "provider_auth"
    PROVIDER_RATE_LIMIT = "provider_rate_limit"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    TOOL_DENIED = "tool_denied"
    TOOL_FAILED = "tool_failed"
    TOOL_UNAVAILABLE = "tool_unavailable"
    BUDGET_EXCEEDED = "budget_exceeded"
    RUN_TIMEOUT = "run_timeout"
    TURN_LIMIT = "turn_limit"
    CANCELLED = "cancelled"
    SANDBOX_ERROR = "sandbox_error"
    INTERNAL = "internal"
    CONTEXT_OVERFLOW = "context_overflow"


RETRYABLE_ERROR_CODES: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.PROVIDER_RATE_LIMIT,
        ErrorCode.PROVIDER_UNAVAILABLE,
        ErrorCode.TOOL_FAILED,
        ErrorCode.SANDBOX_ERROR,
    }
)


class StopReason(StrEnum):
    """The seam's five stop reasons."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "tool_use"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"


class SessionStopReason(StrEnum):
    """The seam's five stop reasons plus the session-only ``aborted``."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "tool_use"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    ABORTED = "aborted"


class FsScopeTier(StrEnum):
    SANDBOXED = "sandboxed"
    PROJECT = "project"
    FULL = "full"


class ProviderId(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    GEMINI = "gemini"
    DEEPSEEK = "deepseek"


class LlmErrorKind(StrEnum):
    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    TIMEOUT = "timeout"
    TRANSPORT = "transport"
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    CONTENT_FILTER = "content_filter"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"
    CONTEXT_OVERFLOW = "context_overflow"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE_KINDS


_RETRYABLE_KINDS = frozenset(
    {LlmErrorKind.RATE_LIMIT, LlmErrorKind.OVERLOADED, LlmErrorKind.TIMEOUT, LlmErrorKind.TRANSPORT}
)

_CODE_FOR_KIND: dict[LlmErrorKind, ErrorCode] = {
    LlmErrorKind.AUTH: ErrorCode.PROVIDER_AUTH,
    LlmErrorKind.RATE_LIMIT: ErrorCode.PROVIDER_RATE_LIMIT,
    LlmErrorKind.OVERLOADED: ErrorCode.PROVIDER_UNAVAILABLE,
    LlmErrorKind.TIMEOUT: ErrorCode.PROVIDER_UNAVAILABLE,
    LlmErrorKind.TRANSPORT: ErrorCode.PROVIDER_UNAVAILABLE,
    LlmErrorKind.CANCELLED: ErrorCode.CANCELLED,
    LlmErrorKind.CONTENT_FILTER: ErrorCode.CONTENT_FILTER,
    LlmErrorKind.BAD_REQUEST: ErrorCode.VALIDATION,
    LlmErrorKind.UNKNOWN: ErrorCode.INTERNAL,
    LlmErrorKind.CONTEXT_OVERFLOW: ErrorCode.CONTEXT_OVERFLOW,
}


def code_for_llm_error(kind: LlmErrorKind) -> ErrorCode:
    """Map a classified provider error kind to the session error code."""
    return _CODE_FOR_KIND[kind]


TerminalFinishReason = Literal["stop", "length", "content_filter"]
"""The finish reasons a completed turn's terminal row may carry (``tool_use`` marks call rows only)."""
TERMINAL_FINISH_REASONS: frozenset[str] = frozenset(get_args(TerminalFinishReason))
