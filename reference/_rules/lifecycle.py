"""The session lifecycle as one table: (state, input) -> what happens.

Pure: no I/O, no clock.  Every transition of :class:`~relavium_reference.AgentSession` goes through
:func:`apply`.  A refused input raises :class:`SessionStateError` with a stable code and leaves the
state as it was.  ``docs/lifecycle.md`` is generated from :data:`TRANSITIONS` (see :func:`render_markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from relavium_reference._model.errors import SessionStateCode, SessionStateError

__all__ = [
    "TRANSITIONS",
    "Effect",
    "Outcome",
    "SessionInput",
    "SessionState",
    "apply",
    "render_markdown",
]


class SessionState(StrEnum):
    CREATED = "created"  # constructed, not started
    IDLE = "idle"  # started, nothing in flight
    STREAMING = "streaming"  # a turn is in flight
    COMMAND = "command"  # a user command is in flight
    HISTORY = "history"  # a history operation (compact or trim) is in flight
    CANCELLED = "cancelled"  # terminal


class SessionInput(StrEnum):
    START = "start"
    SEND = "send"
    TURN_SETTLED = "turn_settled"
    ABORT = "abort"
    CANCEL = "cancel"
    SET_TURN_POLICY = "set_turn_policy"
    RUN_USER_COMMAND = "run_user_command"
    COMMAND_SETTLED = "command_settled"
    EXPORT = "export"
    TRIM = "trim"
    COMPACT = "compact"
    HISTORY_SETTLED = "history_settled"


class Effect(StrEnum):
    """What the shell does besides moving to the next state."""

    NONE = "none"  # a plain transition
    NOOP = "noop"  # accepted, nothing happens
    STORE_POLICY = "store_policy"  # the policy is stored for the next turn start
    INERT = "inert"  # accepted and ignored: the session will never read it
    ABORT_TURN = "abort_turn"  # signal the in-flight turn to end as aborted
    CANCEL_WORK = "cancel_work"  # signal in-flight work to stop; emit the terminal session:cancelled
    REFUSE = "refuse"


@dataclass(frozen=True)
class Outcome:
    next_state: SessionState
    effect: Effect
    refusal: SessionStateCode | None = None


S, In, E = SessionState, SessionInput, Effect


def _go(state: SessionState, effect: Effect = E.NONE) -> Outcome:
    return Outcome(state, effect)


def _refuse(state: SessionState, code: SessionStateCode) -> Outcome:
    return Outcome(state, E.REFUSE, code)


_NS, _AS, _NA, _BUSY = (
    SessionStateCode.NOT_STARTED,
    SessionStateCode.ALREADY_STARTED,
    SessionStateCode.NOT_ACTIVE,
    SessionStateCode.BUSY,
)

TRANSITIONS: dict[tuple[SessionState, SessionInput], Outcome] = {
    # created: only start moves it; cancel ends it before it began.
    (S.CREATED, In.START): _go(S.IDLE),
    (S.CREATED, In.SEND): _refuse(S.CREATED, _NS),
    (S.CREATED, In.TURN_SETTLED): _refuse(S.CREATED, _NS),
    (S.CREATED, In.ABORT): _go(S.CREATED, E.NOOP),
    (S.CREATED, In.CANCEL): _go(S.CANCELLED, E.CANCEL_WORK),
    (S.CREATED, In.SET_TURN_POLICY): _go(S.CREATED, E.STORE_POLICY),
    (S.CREATED, In.RUN_USER_COMMAND): _refuse(S.CREATED, _NS),
    (S.CREATED, In.COMMAND_SETTLED): _refuse(S.CREATED, _NS),
    (S.CREATED, In.EXPORT): _refuse(S.CREATED, _NS),
    (S.CREATED, In.TRIM): _refuse(S.CREATED, _NS),
    (S.CREATED, In.COMPACT): _refuse(S.CREATED, _NS),
    (S.CREATED, In.HISTORY_SETTLED): _refuse(S.CREATED, _NS),
    # idle
    (S.IDLE, In.START): _refuse(S.IDLE, _AS),
    (S.IDLE, In.SEND): _go(S.STREAMING),
    (S.IDLE, In.TURN_SETTLED): _refuse(S.IDLE, _NA),
    (S.IDLE, In.ABORT): _go(S.IDLE, E.NOOP),
    (S.IDLE, In.CANCEL): _go(S.CANCELLED, E.CANCEL_WORK),
    (S.IDLE, In.SET_TURN_POLICY): _go(S.IDLE, E.STORE_POLICY),
    (S.IDLE, In.RUN_USER_COMMAND): _go(S.COMMAND),
    (S.IDLE, In.COMMAND_SETTLED): _refuse(S.IDLE, _NA),
    (S.IDLE, In.EXPORT): _go(S.IDLE),
    (S.IDLE, In.TRIM): _go(S.HISTORY),
    (S.IDLE, In.COMPACT): _go(S.HISTORY),
    (S.IDLE, In.HISTORY_SETTLED): _refuse(S.IDLE, _NA),
    # streaming: a turn is in flight
    (S.STREAMING, In.START): _refuse(S.STREAMING, _AS),
    (S.STREAMING, In.SEND): _refuse(S.STREAMING, _BUSY),
    (S.STREAMING, In.TURN_SETTLED): _go(S.IDLE),
    (S.STREAMING, In.ABORT): _go(S.STREAMING, E.ABORT_TURN),
    (S.STREAMING, In.CANCEL): _go(S.CANCELLED, E.CANCEL_WORK),
    (S.STREAMING, In.SET_TURN_POLICY): _go(S.STREAMING, E.STORE_POLICY),
    (S.STREAMING, In.RUN_USER_COMMAND): _refuse(S.STREAMING, _BUSY),
    (S.STREAMING, In.COMMAND_SETTLED): _refuse(S.STREAMING, _BUSY),
    (S.STREAMING, In.EXPORT): _refuse(S.STREAMING, _BUSY),
    (S.STREAMING, In.TRIM): _refuse(S.STREAMING, _BUSY),
    (S.STREAMING, In.COMPACT): _refuse(S.STREAMING, _BUSY),
    (S.STREAMING, In.HISTORY_SETTLED): _refuse(S.STREAMING, _BUSY),
    # command: a user command is in flight (never races a turn)
    (S.COMMAND, In.START): _refuse(S.COMMAND, _AS),
    (S.COMMAND, In.SEND): _refuse(S.COMMAND, _BUSY),
    (S.COMMAND, In.TURN_SETTLED): _refuse(S.COMMAND, _BUSY),
    (S.COMMAND, In.ABORT): _go(S.COMMAND, E.NOOP),
    (S.COMMAND, In.CANCEL): _go(S.CANCELLED, E.CANCEL_WORK),
    (S.COMMAND, In.SET_TURN_POLICY): _go(S.COMMAND, E.STORE_POLICY),
    (S.COMMAND, In.RUN_USER_COMMAND): _refuse(S.COMMAND, _BUSY),
    (S.COMMAND, In.COMMAND_SETTLED): _go(S.IDLE),
    (S.COMMAND, In.EXPORT): _refuse(S.COMMAND, _BUSY),
    (S.COMMAND, In.TRIM): _refuse(S.COMMAND, _BUSY),
    (S.COMMAND, In.COMPACT): _refuse(S.COMMAND, _BUSY),
    (S.COMMAND, In.HISTORY_SETTLED): _refuse(S.COMMAND, _BUSY),
    # history: a compact or trim is in flight (idle-only operations; nothing races them)
    (S.HISTORY, In.START): _refuse(S.HISTORY, _AS),
    (S.HISTORY, In.SEND): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.TURN_SETTLED): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.ABORT): _go(S.HISTORY, E.NOOP),
    (S.HISTORY, In.CANCEL): _go(S.CANCELLED, E.CANCEL_WORK),
    (S.HISTORY, In.SET_TURN_POLICY): _go(S.HISTORY, E.STORE_POLICY),
    (S.HISTORY, In.RUN_USER_COMMAND): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.COMMAND_SETTLED): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.EXPORT): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.TRIM): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.COMPACT): _refuse(S.HISTORY, _BUSY),
    (S.HISTORY, In.HISTORY_SETTLED): _go(S.IDLE),
    # cancelled: terminal; cancel and abort are idempotent no-ops, the policy is inert.
    (S.CANCELLED, In.START): _refuse(S.CANCELLED, _NA),
    (S.CANCELLED, In.SEND): _refuse(S.CANCELLED, _NA),
    (S.CANCELLED, In.TURN_SETTLED): _go(S.CANCELLED, E.NOOP),
    (S.CANCELLED, In.ABORT): _go(S.CANCELLED, E.NOOP),
    (S.CANCELLED, In.CANCEL): _go(S.CANCELLED, E.NOOP),
    (S.CANCELLED, In.SET_TURN_POLICY): _go(S.CANCELLED, E.INERT),
    (S.CANCELLED, In.RUN_USER_COMMAND): _refuse(S.CANCELLED, _NA),
    (S.CANCELLED, In.COMMAND_SETTLED): _go(S.CANCELLED, E.NOOP),
    (S.CANCELLED, In.EXPORT): _refuse(S.CANCELLED, _NA),
    (S.CANCELLED, In.TRIM): _refuse(S.CANCELLED, _NA),
    (S.CANCELLED, In.COMPACT): _refuse(S.CANCELLED, _NA),
    (S.CANCELLED, In.HISTORY_SETTLED): _go(S.CANCELLED, E.NOOP),
}

_MESSAGES = {
    _NS: "the session has not been started",
    _AS: "the session has already been started",
    _NA: "the session is no longer active (it was cancelled)",
    _BUSY: "the session is busy: a turn or a user command is in flight",
}


def apply(state: SessionState, event: SessionInput) -> Outcome:
    """Look up (state, input); raise :class:`SessionStateError` for a refusal."""
    outcome = TRANSITIONS[(state, event)]
    if outcome.refusal is not None:
        raise SessionStateError(outcome.refusal, _MESSAGES[outcome.refusal], state=state.value)
    return outcome


def render_markdown() -> str:
    """The lifecycle table as Markdown (the source of ``docs/lifecycle.md``)."""
    inputs = list(SessionInput)
    lines = [
        "# Session lifecycle (generated from `relavium_reference._rules.lifecycle.TRANSITIONS`)",
        "",
        "Each cell: the next state, and the effect or the refusal code of `SessionStateError`.",
        "",
        "| state \\ input | " + " | ".join(f"`{i.value}`" for i in inputs) + " |",
        "| --- | " + " | ".join("---" for _ in inputs) + " |",
    ]
    for state in SessionState:
        cells = []
        for event in inputs:
            outcome = TRANSITIONS[(state, event)]
            if outcome.refusal is not None:
                cells.append(f"refuse `{outcome.refusal.value}`")
            elif outcome.effect is Effect.NONE:
                cells.append(f"→ {outcome.next_state.value}")
            else:
                cells.append(f"→ {outcome.next_state.value} ({outcome.effect.value})")
        lines.append(f"| **{state.value}** | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)
