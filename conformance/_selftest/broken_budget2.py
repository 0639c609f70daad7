"""Broken implementations of the usage writer's money, the latch's late effects and compaction spend.

The second file of :mod:`relavium_conformance._selftest.broken_budget`'s kind: each is the reference
session with one behaviour changed; the cases citing its clauses must catch it.
"""

from __future__ import annotations

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.turn import TurnProgress
from relavium_reference._model.records import CostEntry

__all__ = ["BUDGET_BREAKS_2"]


class _CommitsOwnMoney(AgentSession):
    """The persisted cost rows are the engine's own counters: no money, every call unpriced."""

    def _costs(self, progress: TurnProgress) -> tuple[CostEntry, ...]:
        return tuple(
            entry.model_copy(update={"cost_microcents": 0, "unpriced_calls": entry.call_count})
            for entry in super()._costs(progress)
        )


BUDGET_BREAKS_2: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "commit-cost-not-the-writers",
        "the committed turn and a failed turn's cost record carry the engine's own zero money, "
        "not the writer's",
        ("AS-USE-006",),
        _CommitsOwnMoney,
    ),
)
