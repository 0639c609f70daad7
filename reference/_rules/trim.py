"""Trim selection: which whole slots of the working transcript a ``trimHistory(bound)`` keeps.

Pure.  A *slot* is one completed turn (its user, plus its final text when that is not empty) or one
retained legacy bare user; its size in message units is 1 or 2.  A trim keeps the **longest suffix of
whole slots** whose units fit within the bound, so the kept history always starts at a user message and
never cuts inside a turn.  When even the newest slot does not fit, nothing is kept (KD-TRIM-1).  The
bound is a positive whole number of messages; anything else is refused with a fixed message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relavium_reference._model.errors import InvalidInputError

__all__ = ["TrimPlan", "plan_trim"]


@dataclass(frozen=True)
class TrimPlan:
    """The outcome of one trim selection over slots of the given sizes."""

    kept_slots: int
    kept_messages: int
    total_messages: int

    @property
    def dropped_messages(self) -> int:
        return self.total_messages - self.kept_messages

    @property
    def drops_anything(self) -> bool:
        return self.kept_messages < self.total_messages


def plan_trim(slot_units: Sequence[int], bound: object) -> TrimPlan:
    """Keep the longest suffix of whole slots whose message units total at most ``bound``.

    ``slot_units[i]`` is the size of slot ``i`` (oldest first), 1 or 2.  Refuses a bound that is not a
    positive integer (``InvalidInputError``, location ``maxMessages``).
    """
    if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
        raise InvalidInputError(
            "the trim bound must be a positive whole number of messages", location="maxMessages"
        )
    if any(units not in (1, 2) for units in slot_units):
        raise InvalidInputError("a slot holds one or two messages", location="slots")
    total = sum(slot_units)
    kept_slots = kept_messages = 0
    for units in reversed(slot_units):
        if kept_messages + units > bound:
            break
        kept_slots += 1
        kept_messages += units
    return TrimPlan(kept_slots=kept_slots, kept_messages=kept_messages, total_messages=total)
