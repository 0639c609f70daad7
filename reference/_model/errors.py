"""The one exception root of the engine, and its branches.

Two families are kept apart, after h11 and trio:

* :class:`SessionStateError`: the caller misused a session (wrong state for the operation).
  It carries a stable string ``code`` and the state the session is in after the refusal.
* :class:`DependencyError`: something the engine depends on misbehaved (a provider, a store,
  a script, a subprocess).  Providers report their failures as classified ``LlmError`` values
  inside the stream; this family is for failures that cannot be classified that way.

:class:`InvalidInputError` is for data that fails a strict schema: it carries a fixed message
and the location of the offending field, never the offending value.  It is also how every public
function and host port refuses a value of the wrong type where it enters: a ``SessionDeps`` field at
``AgentSession`` construction, an admission answer as it arrives, a session store's id or owner (a
lone surrogate or NUL included), an argument of a session method.  A usage writer's malformed answer
is raised inside the writer's call, so the engine treats it as the writer failing.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "DependencyError",
    "InvalidInputError",
    "ObserverError",
    "PersistError",
    "RelaviumError",
    "ScriptError",
    "SessionStateCode",
    "SessionStateError",
]


class RelaviumError(Exception):
    """Root of every exception this distribution raises on purpose."""


class SessionStateCode(StrEnum):
    """Stable codes of :class:`SessionStateError` (documented in docs/kit-defined.md, KD-LIFE-1)."""

    NOT_STARTED = "not_started"
    ALREADY_STARTED = "already_started"
    NOT_ACTIVE = "not_active"
    BUSY = "busy"
    INVALID_RESUME_STATE = "invalid_resume_state"


class SessionStateError(RelaviumError):
    """An operation was called in a state that refuses it; the session state is unchanged."""

    def __init__(self, code: SessionStateCode, message: str, *, state: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.state = state

    def __repr__(self) -> str:
        return f"SessionStateError(code={self.code.value!r}, state={self.state!r})"


class InvalidInputError(RelaviumError):
    """Input failed a strict schema, or a value of the wrong type reached a public boundary.
    ``message`` is fixed; ``location`` names the field (camelCase for a session dependency)."""

    def __init__(self, message: str, *, location: str = "") -> None:
        super().__init__(f"{message} (at {location})" if location else message)
        self.message = message
        self.location = location


class DependencyError(RelaviumError):
    """A dependency of the engine (provider, store, subprocess, script) misbehaved."""


class ScriptError(DependencyError):
    """A provider script is malformed, or was asked for more calls than it holds."""


class ObserverError(DependencyError):
    """A host observer (the event sink) failed in a readable, classified way (its own failure, never a
    provider's); any other exception an observer raises is raw and keeps its identity."""


class PersistError(DependencyError):
    """The host failed to persist a completed turn; the session latches (no further egress)."""
