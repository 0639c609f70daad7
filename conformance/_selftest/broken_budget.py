"""Broken implementations of budget admission, the financial request inputs and the usage writer.

Each is the reference session with one behaviour changed, most by wrapping the port the session hands its
turn (the governor or the writer); the cases citing its clauses must catch it (see
:mod:`relavium_conformance._selftest.proofs`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession, TurnPolicy
from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._host.session import TurnResult
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._host.usage import SessionUsage
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.invocation import (
    ALWAYS_ADMIT,
    Admission,
    AdmissionRefused,
    AdmissionRequest,
    Admitted,
)
from relavium_reference._model.tools import ApprovalRequest
from relavium_reference._model.usage_writer import (
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)
from relavium_reference._model.vocabulary import ErrorCode
from relavium_reference._rules.compaction_measure import output_reservation
from relavium_reference._rules.projection import ProjectedRequest, estimate_tokens, project_request
from relavium_reference._rules.resume import SessionResumeState

__all__ = ["BUDGET_BREAKS"]


class _Governor:
    """A governor wrapper: forwards to the session's own port unless the break says otherwise."""

    def __init__(self, inner: Admission) -> None:
        self.inner = inner

    async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
        return await self.inner.admit(request)

    async def release(self, request: AdmissionRequest) -> None:
        await self.inner.release(request)


class _Writer:
    def __init__(self, inner: UsageWriter) -> None:
        self.inner = inner

    async def open(self, basis: UsageBasis) -> UsageTotals:
        return await self.inner.open(basis)

    async def pending(self, record: UsagePending) -> None:
        await self.inner.pending(record)

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        return await self.inner.resolved(record)


class _WrappedSession(AgentSession):
    """A session whose turn gets a wrapped governor and writer (the hooks the breaks override)."""

    def governor(self, inner: Admission) -> Admission:
        return inner

    def writer(self, inner: UsageWriter) -> UsageWriter:
        return inner

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        usage = None if setup.usage is None else self.writer(setup.usage)
        return replace(setup, admission=self.governor(setup.admission), usage=usage)


class _SkipsToolRoundAdmission(_WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Skips(_Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                return Admitted() if request.round > 0 else await self.inner.admit(request)

        return Skips(inner)


class _EstimateAfterStripping(_WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Measures(_Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                sent = request.request
                if sent is None:
                    return await self.inner.admit(request)
                estimate = estimate_tokens(
                    ProjectedRequest(system=sent.system or "", messages=sent.messages, tools=sent.tools)
                )
                return await self.inner.admit(replace(request, input_tokens=estimate))

        return Measures(inner)


class _KeepsPendingAdmission(_WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Keeps(_Governor):
            async def release(self, request: AdmissionRequest) -> None:
                return None

        return Keeps(inner)

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        return replace(job, admission=self.governor(job.admission))


class _ReadsEstimateLive(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return replace(setup, max_tokens_estimate=self._deps.max_tokens_estimate)


class _RefusalUnnamed(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED:
            end = replace(end, error_message=None)
        return await super()._settle(end, progress)


class _RefusalForgetsEarlierRounds(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED:
            progress = TurnProgress()  # as if nothing had engaged
        return await super()._settle(end, progress)


class _PublishesBeforeAcknowledgement(_WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Eager(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                task = asyncio.ensure_future(self.inner.resolved(record))
                task.add_done_callback(lambda t: t.cancelled() or t.exception())
                return UsageSettled(cost_microcents=0, priced=False, totals=UsageTotals())

        return Eager(inner)


class _SkipsPendingForToolRounds(_WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Skips(_Writer):
            async def pending(self, record: UsagePending) -> None:
                if record.attempt == 1:
                    await self.inner.pending(record)

        return Skips(inner)


class _WriterOnlyWithGovernor(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self._deps.admission is ALWAYS_ADMIT:
            self._usage = SessionUsage(None, basis=self._usage.basis)


class _ResumeResetsBasis(AgentSession):
    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._usage = SessionUsage(session._usage.writer, basis="fresh")
        return session


class _ConstructionCountersWin(_WrappedSession):
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


class _LatchBeforeApproval(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)

        async def confirm(request: ApprovalRequest) -> bool:
            if self._latched:
                return False  # refused before the approval was even asked
            return await policy.approves(request)

        return replace(setup, policy=TurnPolicy(advertise=policy.advertise, confirm=confirm))


class _DispatchesAfterLatch(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        return replace(super()._turn_setup(text, policy), latched=lambda: False)


class _DropsUncommittedCost(AgentSession):
    async def _record_uncommitted_cost(self, progress: TurnProgress) -> None:
        return None


class _FreshBasisSkipped(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._usage = SessionUsage(self._usage.writer, basis="adopt")  # never the complete-zero basis


class _OwnMoney(_WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Own(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                await self.inner.resolved(record)
                return UsageSettled(cost_microcents=0, priced=False, totals=UsageTotals())

        return Own(inner)


class _RefusalUsesSlot(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED and not progress.engaged:
            self._turns_used += 1
        return await super()._settle(end, progress)


class _UnreportedAsZero(_WrappedSession):
    def writer(self, inner: UsageWriter) -> UsageWriter:
        class Certain(_Writer):
            async def resolved(self, record: UsageResolved) -> UsageSettled:
                return await self.inner.resolved(replace(record, reported=True))

        return Certain(inner)


class _FallbackReservationFirst(_WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Reserves(_Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                reservation = output_reservation(None, request.max_tokens_estimate)
                return await self.inner.admit(replace(request, output_reservation=reservation))

        return Reserves(inner)


class _EstimateWithoutTools(AgentSession):
    def context_estimate(self, pending_user: str) -> int:
        projected = project_request(
            system=self._agent.system_prompt, history=self._history(), pending_user=pending_user
        )
        return estimate_tokens(projected)


class _CancelDropsAccounting(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if self._interrupt == "cancel":
            progress = TurnProgress()
        return await super()._settle(end, progress)


BUDGET_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "admission-skipped-for-tool-rounds",
        "a tool round's follow-up request egresses without asking admission",
        ("AS-FIN-003",),
        _SkipsToolRoundAdmission,
    ),
    BrokenImplementation(
        "max-tokens-estimate-read-live",
        "maxTokensEstimate is read from the host's live value instead of the copy taken at construction",
        ("AS-FIN-001",),
        _ReadsEstimateLive,
    ),
    BrokenImplementation(
        "estimate-after-reasoning-stripping",
        "admission's input estimate is measured after the reasoning parts were stripped",
        ("AS-FIN-004",),
        _EstimateAfterStripping,
    ),
    BrokenImplementation(
        "cancel-keeps-pending-admission",
        "a cancel while admission is pending never releases it (a turn's or a summary pass's)",
        ("AS-COMP-033",),
        _KeepsPendingAdmission,
    ),
    BrokenImplementation(
        "budget-refusal-unnamed",
        "a budget_exceeded terminal carries a fixed message that does not name the cap",
        ("AS-COMP-047",),
        _RefusalUnnamed,
    ),
    BrokenImplementation(
        "budget-refusal-forgets-earlier-rounds",
        "a refusal in a later tool round drops the earlier engagement and usage",
        ("AS-CAP-018",),
        _RefusalForgetsEarlierRounds,
    ),
    BrokenImplementation(
        "cost-published-before-acknowledgement",
        "cost:updated is published before the usage writer acknowledged the attempt",
        ("AS-USE-009",),
        _PublishesBeforeAcknowledgement,
    ),
    BrokenImplementation(
        "pending-skipped-for-tool-rounds",
        "a tool round's call egresses without a pending usage record",
        ("AS-USE-005",),
        _SkipsPendingForToolRounds,
    ),
    BrokenImplementation(
        "usage-writer-needs-governor",
        "the usage writer is attached only when the host also has a cost governor",
        ("AS-USE-001",),
        _WriterOnlyWithGovernor,
    ),
    BrokenImplementation(
        "resume-resets-usage-basis",
        "a resumed instance opens a fresh complete-zero basis instead of adopting the owner",
        ("AS-USE-004",),
        _ResumeResetsBasis,
    ),
    BrokenImplementation(
        "construction-counters-overwrite-durable-sum",
        "a resumed instance publishes its running total from its construction-time counters",
        ("AS-USE-010",),
        _ConstructionCountersWin,
    ),
    BrokenImplementation(
        "latch-checked-before-approval",
        "the latch refuses a tool before its approval is asked, instead of right before dispatch",
        ("AS-MSG-017",),
        _LatchBeforeApproval,
    ),
    BrokenImplementation(
        "tool-dispatched-after-latch",
        "a tool is still dispatched after a usage write latched the session",
        ("AS-MSG-018",),
        _DispatchesAfterLatch,
    ),
    BrokenImplementation(
        "failed-turn-cost-dropped",
        "a failed or aborted turn's billed cost is never recorded",
        ("AS-MSG-022",),
        _DropsUncommittedCost,
    ),
    BrokenImplementation(
        "fresh-basis-skipped",
        "a freshly created session never opens the complete-zero basis",
        ("AS-USE-003",),
        _FreshBasisSkipped,
    ),
    BrokenImplementation(
        "cost-from-own-counters",
        "cost:updated publishes the engine's own unpriced counters instead of the writer's resolved money",
        ("AS-USE-006",),
        _OwnMoney,
    ),
    BrokenImplementation(
        "budget-refusal-uses-slot",
        "a turn refused at its first admission still uses a slot of the hard cap",
        ("AS-OBS-016",),
        _RefusalUsesSlot,
    ),
    BrokenImplementation(
        "unreported-usage-resolved-as-known",
        "an attempt whose provider reported no usage is resolved as a known zero",
        ("AS-USE-002", "AS-USE-012"),
        _UnreportedAsZero,
    ),
    BrokenImplementation(
        "fallback-reservation-first",
        "the output reservation takes the estimate-only fallback over the request's own maxTokens",
        ("AS-FIN-005",),
        _FallbackReservationFirst,
    ),
    BrokenImplementation(
        "context-estimate-own-construction",
        "the context estimate builds its request without the tools the turn's request carries",
        ("AS-FIN-006",),
        _EstimateWithoutTools,
    ),
    BrokenImplementation(
        "cancel-in-commit-drops-accounting",
        "a cancel during the commitment flush reports the turn as having spent nothing",
        ("AS-OBS-027",),
        _CancelDropsAccounting,
    ),
)
