"""Broken implementations of the usage writer's money, the latch's late effects and compaction spend.

The second file of :mod:`relavium_conformance._selftest.broken_budget`'s kind: each is the reference
session with one behaviour changed; the cases citing its clauses must catch it.
"""

from __future__ import annotations

from dataclasses import replace

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.compaction import CompactionJob
from relavium_reference._host.turn import TurnProgress
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.records import CostEntry

__all__ = ["BUDGET_BREAKS_2"]


class _CommitsOwnMoney(AgentSession):
    """The persisted cost rows are the engine's own counters: no money, every call unpriced."""

    def _costs(self, progress: TurnProgress) -> tuple[CostEntry, ...]:
        return tuple(
            entry.model_copy(update={"cost_microcents": 0, "unpriced_calls": entry.call_count})
            for entry in super()._costs(progress)
        )


class _SummaryBypassesWriter(AgentSession):
    """Summary passes egress without the writer: no pending record, no resolution through it."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        return replace(super()._compaction_job(reason, manual=manual, pending_user=pending_user), usage=None)


class _CompactionSpendDropped(AgentSession):
    """What a compaction's passes spent is never recorded (a failed one leaves no trace of it)."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        async def drop(_entry: CostEntry) -> None:
            return None

        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        return replace(job, record_cost=drop)


BUDGET_BREAKS_2: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "commit-cost-not-the-writers",
        "the committed turn and a failed turn's cost record carry the engine's own zero money, "
        "not the writer's",
        ("AS-USE-006",),
        _CommitsOwnMoney,
    ),
    BrokenImplementation(
        "summary-pass-bypasses-writer",
        "a summary pass egresses without the usage writer's pending record and resolves its usage nowhere",
        ("AS-COMP-024", "AS-USE-005"),
        _SummaryBypassesWriter,
    ),
    BrokenImplementation(
        "compaction-spend-dropped",
        "what a compaction's engaged passes spent is never recorded, so a failed compaction loses it",
        ("AS-COMP-024",),
        _CompactionSpendDropped,
    ),
)
