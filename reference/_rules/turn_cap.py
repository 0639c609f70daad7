"""The turn caps, decided: the session's hard turn cap and a turn's tool-round guard.

Pure (no I/O, no clock).  The session keeps the counters; these functions decide what they mean:

* **The hard turn cap.**  A session allows at most ``max_turns`` turns that reached a provider.  Zero or
  absent means :data:`DEFAULT_SESSION_MAX_TURNS`; a negative cap is refused.  A turn started once every
  slot is used ends at once with ``turn_limit`` and sends nothing (:func:`cap_reached`).  A turn uses a
  slot only when it engaged a provider, whatever its ending (completed, failed, aborted or cancelled); a
  turn that never engaged one (refused before egress, interrupted before its first attempt) uses none
  (:func:`slots_after`).  A resumed instance continues from the persisted turn count.
* **The tool-round guard.**  Within one turn, an attempt that ends asking for tools runs one more tool
  round while fewer than ``max_tool_turns`` rounds ran; the attempt asking past that ends the turn with
  ``turn_limit`` and its calls are never dispatched (:func:`after_attempt`).  An attempt that asks for no
  tool (any other stop, or a tool-use stop with no call) is the turn's final reply.
"""

from __future__ import annotations

import enum

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.vocabulary import StopReason

__all__ = [
    "DEFAULT_MAX_TOOL_TURNS",
    "DEFAULT_SESSION_MAX_TURNS",
    "AttemptNext",
    "after_attempt",
    "asks_for_tools",
    "cap_reached",
    "check_max_tool_turns",
    "resolve_max_turns",
    "slots_after",
]

DEFAULT_SESSION_MAX_TURNS = 50
DEFAULT_MAX_TOOL_TURNS = 16


def resolve_max_turns(value: int | None) -> int:
    """The session's hard cap: 0 or absent means the default; a negative cap is refused."""
    if value is None or value == 0:
        return DEFAULT_SESSION_MAX_TURNS
    if value < 0:
        raise InvalidInputError("maxTurns must not be negative", location="maxTurns")
    return value


def check_max_tool_turns(value: int) -> int:
    """The per-turn tool-round limit as given (0 allows no round); a negative limit is refused."""
    if value < 0:
        raise InvalidInputError("maxToolTurns must not be negative", location="maxToolTurns")
    return value


def cap_reached(turns_used: int, max_turns: int) -> bool:
    """Every slot of the hard cap is used: the next turn ends with ``turn_limit`` before any egress."""
    return turns_used >= max_turns


def slots_after(turns_used: int, *, engaged: bool) -> int:
    """The slots used once a turn settles: one more only when the turn engaged a provider."""
    return turns_used + 1 if engaged else turns_used


def asks_for_tools(stop_reason: StopReason | None, calls: int) -> bool:
    """An attempt asks for a tool round only when it stopped for tool use with at least one call."""
    return stop_reason is StopReason.TOOL_USE and calls > 0


class AttemptNext(enum.Enum):
    """What a turn does after an attempt that succeeded (a failed attempt is the fallback plan's)."""

    DISPATCH = "dispatch"
    """Run the attempt's tool calls as the next round, then call the provider again."""
    TURN_LIMIT = "turn_limit"
    """The attempt asked for a round past the limit: the turn ends, its calls are never run."""
    FINAL = "final"
    """The attempt is the turn's reply."""


def after_attempt(
    stop_reason: StopReason | None, calls: int, rounds_done: int, max_tool_turns: int
) -> AttemptNext:
    """The tool-round guard for an attempt that stopped with ``stop_reason`` asking ``calls`` tool calls,
    after ``rounds_done`` rounds of this turn."""
    if not asks_for_tools(stop_reason, calls):
        return AttemptNext.FINAL
    if rounds_done >= max_tool_turns:
        return AttemptNext.TURN_LIMIT
    return AttemptNext.DISPATCH
