"""Breaks of usage coverage (clauses AS-USE-*): which spend reaches tokensUsed and the usage events."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import WrappedSession
from relavium_reference import AgentSession
from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.turn import TurnProgress
from relavium_reference._host.usage import SessionUsage
from relavium_reference._model.invocation import ALWAYS_ADMIT
from relavium_reference._model.records import CostEntry
from relavium_reference._model.usage_writer import (
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)
from relavium_reference._rules.resume import SessionResumeState

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


class _Writer:
    def __init__(self, inner: UsageWriter) -> None:
        self.inner = inner

    async def open(self, basis: UsageBasis) -> UsageTotals:
        return await self.inner.open(basis)

    async def pending(self, record: UsagePending) -> None:
        await self.inner.pending(record)

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        return await self.inner.resolved(record)


@break_of(
    name="cost-published-before-acknowledgement",
    summary="cost:updated is published before the usage writer acknowledged the attempt",
    clauses=("AS-USE-009",),
)
class _PublishesBeforeAcknowledgement(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Eager(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                task = asyncio.ensure_future(self.inner.resolved(record))
                task.add_done_callback(lambda t: t.cancelled() or t.exception())
                return UsageSettled(cost_microcents=0, priced=False, totals=UsageTotals())

        return Eager(inner)


@break_of(
    name="pending-skipped-for-tool-rounds",
    summary="a tool round's call egresses without a pending usage record",
    clauses=("AS-USE-005",),
)
class _SkipsPendingForToolRounds(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Skips(_Writer):
            async def pending(self, record: UsagePending) -> None:
                if record.attempt == 1:
                    await self.inner.pending(record)

        return Skips(inner)


@break_of(
    name="usage-writer-needs-governor",
    summary="the usage writer is attached only when the host also has a cost governor",
    clauses=("AS-USE-001",),
)
class _WriterOnlyWithGovernor(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self._deps.admission is ALWAYS_ADMIT:
            self._usage = SessionUsage(None, basis=self._usage.basis)


@break_of(
    name="resume-resets-usage-basis",
    summary="a resumed instance opens a fresh complete-zero basis instead of adopting the owner",
    clauses=("AS-USE-004",),
)
class _ResumeResetsBasis(AgentSession):
    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._usage = SessionUsage(session._usage.writer, basis="fresh")
        return session


@break_of(
    name="construction-counters-overwrite-durable-sum",
    summary="a resumed instance publishes its running total from its construction-time counters",
    clauses=("AS-USE-010",),
)
class _ConstructionCountersWin(WrappedSession):
    _base: int | None = None

    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        state: SessionResumeState = kwargs["state"]
        if isinstance(session, _ConstructionCountersWin):
            session._base = state.cumulative_cost_microcents
        return session

    def writer(self, inner: UsageWriter) -> UsageWriter:
        if self._base is None:
            return inner
        outer = self

        class Counts(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                settled = await self.inner.resolved(record)
                outer._base = (outer._base or 0) + settled.cost_microcents
                totals = replace(settled.totals, amount_microcents=outer._base)
                return replace(settled, totals=totals)

        return Counts(inner)


@break_of(
    name="fresh-basis-skipped",
    summary="a freshly created session never opens the complete-zero basis",
    clauses=("AS-USE-003",),
)
class _FreshBasisSkipped(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._usage = SessionUsage(self._usage.writer, basis="adopt")  # never the complete-zero basis


@break_of(
    name="cost-from-own-counters",
    summary=(
        "cost:updated publishes the engine's own unpriced counters instead of the writer's resolved money"
    ),
    clauses=("AS-USE-006",),
)
class _OwnMoney(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Own(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                await self.inner.resolved(record)
                return UsageSettled(cost_microcents=0, priced=False, totals=UsageTotals())

        return Own(inner)


@break_of(
    name="unreported-usage-resolved-as-known",
    summary="an attempt whose provider reported no usage is resolved as a known zero",
    clauses=("AS-USE-002", "AS-USE-012"),
)
class _UnreportedAsZero(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Certain(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                return await self.inner.resolved(replace(record, reported=True))

        return Certain(inner)


@break_of(
    name="commit-cost-not-the-writers",
    summary=(
        "the committed turn and a failed turn's cost record carry the "
        "engine's own zero money, not the writer's"
    ),
    clauses=("AS-USE-006",),
)
class _CommitsOwnMoney(AgentSession):
    """The persisted cost rows are the engine's own counters: no money, every call unpriced."""

    def _costs(self, progress: TurnProgress) -> tuple[CostEntry, ...]:
        return tuple(
            entry.model_copy(update={"cost_microcents": 0, "unpriced_calls": entry.call_count})
            for entry in super()._costs(progress)
        )


@break_of(
    name="pending-not-awaited",
    summary="the pending usage record is sent but the call egresses without waiting for its acknowledgement",
    clauses=("AS-USE-005",),
)
class _PendingNotAwaited(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Hasty(_Writer):
            async def pending(self, record: UsagePending) -> None:
                task = asyncio.ensure_future(self.inner.pending(record))
                task.add_done_callback(lambda t: t.cancelled() or t.exception())
                await asyncio.sleep(0)  # the record leaves first; its answer is not awaited

        return Hasty(inner)


@break_of(
    name="pending-failure-ignored",
    summary="a pending usage record the writer failed to take is ignored and the call egresses anyway",
    clauses=("AS-USE-005",),
)
class _PendingFailureIgnored(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Lenient(_Writer):
            async def pending(self, record: UsagePending) -> None:
                try:
                    await self.inner.pending(record)
                except Exception:
                    return None

        return Lenient(inner)


@break_of(
    name="pending-outlives-the-cancel",
    summary="a pending record acknowledged after a cancel completes the await normally and the call egresses",
    clauses=("AS-USE-005",),
)
class _PendingOutlivesCancel(WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Shielded(_Writer):
            async def pending(self, record: UsagePending) -> None:
                answer = asyncio.ensure_future(self.inner.pending(record))
                while True:
                    try:
                        return await asyncio.shield(answer)
                    except asyncio.CancelledError:
                        if answer.cancelled():
                            raise
                        continue  # the cancel is swallowed: the acknowledgement is awaited to its end

        return Shielded(inner)
