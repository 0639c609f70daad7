"""relavium_reference: the reference engine of the Relavium Agent Session Specification."""

from __future__ import annotations

from ._errors import (
    DependencyError,
    InvalidInputError,
    PersistError,
    RelaviumError,
    ScriptError,
    SessionStateCode,
    SessionStateError,
)
from ._shapes import AgentSnapshot, FallbackEntry, SessionContext, parse_strict
from ._vocabulary import ErrorCode, FsScopeTier, LlmErrorKind, SessionStopReason, StopReason

__all__ = [
    "AgentSnapshot",
    "DependencyError",
    "ErrorCode",
    "FallbackEntry",
    "FsScopeTier",
    "InvalidInputError",
    "LlmErrorKind",
    "PersistError",
    "RelaviumError",
    "ScriptError",
    "SessionContext",
    "SessionStateCode",
    "SessionStateError",
    "SessionStopReason",
    "StopReason",
    "parse_strict",
]
