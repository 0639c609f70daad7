"""Broken implementations of the usage writer's money, the latch's late effects and compaction spend.

The second file of :mod:`relavium_conformance._selftest.broken_budget`'s kind: each is the reference
session with one behaviour changed; the cases citing its clauses must catch it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession, TurnPolicy
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._host.session_deps import TurnResult
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.turn import Recovered, RecoveryRefused, TurnProgress, TurnSetup
from relavium_reference._model.events import (
    CompactionReason,
    SessionCompactionFailed,
    SessionCompactionRefused,
    SessionEvent,
    TurnError,
)
from relavium_reference._model.history_results import CompactionBudgetRefused, CompactionFailed
from relavium_reference._model.records import CostEntry
from relavium_reference._model.shapes import WireModel
from relavium_reference._model.tools import Tool, ToolCallInfo, ToolOutput, ToolRegistry
from relavium_reference._model.vocabulary import ErrorCode
from relavium_reference._rules.lifecycle import SessionState

__all__ = ["BUDGET_BREAKS_2"]


class _CommitsOwnMoney(AgentSession):
    """The persisted cost rows are the engine's own counters: no money, every call unpriced."""

    def _costs(self, progress: TurnProgress) -> tuple[CostEntry, ...]:
        return tuple(
            entry.model_copy(update={"cost_microcents": 0, "unpriced_calls": entry.call_count})
            for entry in super()._costs(progress)
        )


class _RecoveryRefusalKeepsOverflow(AgentSession):
    """A refused recovery pass is taken for nothing to fold: the original overflow stands."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup

        async def keeps(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            outcome = await recover(current)
            return None if isinstance(outcome, RecoveryRefused) else outcome

        return replace(setup, recover=keeps)


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


class _Stamper(EventStamper):
    """The session's stamper with one kind of event changed (``change`` answers ``None`` to drop it)."""

    def __init__(self, inner: EventStamper, change: Callable[[type[WireModel], dict[str, Any]], Any]) -> None:
        self._inner = inner
        self._change = change

    @property
    def next_sequence(self) -> int:
        return self._inner.next_sequence

    async def emit(self, event_type: type[WireModel], **payload: Any) -> SessionEvent:
        changed = self._change(event_type, payload)
        if changed is None:  # dropped: nothing reaches the host
            return None  # type: ignore[return-value]
        return await self._inner.emit(event_type, **changed)


class _StampedJob(AgentSession):
    """A session whose compaction job emits through :class:`_Stamper` (the breaks give ``change``)."""

    def change(self, event_type: type[WireModel], payload: dict[str, Any]) -> dict[str, Any] | None:
        return payload

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        return replace(job, stamper=_Stamper(job.stamper, self.change))


class _RefusalNoticeDropped(_StampedJob):
    def change(self, event_type: type[WireModel], payload: dict[str, Any]) -> dict[str, Any] | None:
        return None if event_type is SessionCompactionRefused else payload


class _LaterRefusalClosedAsFailure(_StampedJob):
    def change(self, event_type: type[WireModel], payload: dict[str, Any]) -> dict[str, Any] | None:
        if event_type is SessionCompactionFailed and payload.get("outcome") == "budget_refused":
            return {**payload, "outcome": "failed"}
        return payload


class _RefusalTrims(AgentSession):
    """An after-turn budget refusal falls back to the configured trim, as an ordinary failure does."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        limit = self._deps.max_messages
        after_turn = self.state is SessionState.HISTORY and not manual
        if isinstance(report.result, CompactionBudgetRefused) and after_turn and limit:
            await self._trim(limit, "auto-fallback")
        return report


class _PresendRefusalSendsOriginal(AgentSession):
    """A pre-send budget refusal is taken for an ordinary failure: the original main request goes out."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionBudgetRefused) and pending_user is not None:
            return CompactionReport(CompactionFailed(message=report.result.message), installed=False)
        return report


class _AfterTurnRefusalFailsTheTurn(AgentSession):
    """An after-turn budget refusal turns the successful send into a budget_exceeded failure."""

    _refused_after_turn = False

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionBudgetRefused) and self.state is SessionState.HISTORY:
            self._refused_after_turn = True
        return report

    async def send_message(self, text: str) -> TurnResult:
        self._refused_after_turn = False
        result = await super().send_message(text)
        if not self._refused_after_turn:
            return result
        error = TurnError(code=ErrorCode.BUDGET_EXCEEDED, message="the cost cap refused", retryable=False)
        return result.model_copy(update={"status": "failed", "text": None, "error": error})


class _CompactionSpendOwnMoney(AgentSession):
    """A compaction records what its passes spent with the engine's own zero money, every call unpriced."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        record = job.record_cost

        async def own_money(entry: CostEntry) -> None:
            await record(entry.model_copy(update={"cost_microcents": 0, "unpriced_calls": entry.call_count}))

        return replace(job, record_cost=own_money)


class _DropsOutcomeAfterLatch:
    """A tool whose outcome is thrown away when the session latched while it ran."""

    def __init__(self, tool: Tool, latched: Callable[[], bool]) -> None:
        self._tool = tool
        self._latched = latched
        self.name, self.description, self.parameters = tool.name, tool.description, tool.parameters
        self.action = tool.action

    def preview(self, args: Any) -> dict[str, str]:
        return self._tool.preview(args)

    async def run(self, args: Any, call: ToolCallInfo) -> ToolOutput:
        output = await self._tool.run(args, call)
        if self._latched():
            return ToolOutput("the session stopped after a failed save", is_error=True)
        return output


class _StartedToolDroppedAfterLatch(AgentSession):
    """Once a failed write latched the session, a tool that was already running cannot record its outcome."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        tools = (setup.registry.get(name) for name in setup.registry.names())
        registry = ToolRegistry(_DropsOutcomeAfterLatch(t, setup.latched) for t in tools if t is not None)
        return replace(setup, registry=registry)


BUDGET_BREAKS_2: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "started-tool-dropped-after-latch",
        "a tool already running when a usage write fails has its outcome replaced by the latch's refusal",
        ("AS-MSG-020",),
        _StartedToolDroppedAfterLatch,
    ),
    BrokenImplementation(
        "commit-cost-not-the-writers",
        "the committed turn and a failed turn's cost record carry the engine's own zero money, "
        "not the writer's",
        ("AS-USE-006",),
        _CommitsOwnMoney,
    ),
    BrokenImplementation(
        "recovery-refusal-keeps-overflow",
        "a budget refusal of the overflow recovery is taken for nothing to fold: context_overflow",
        ("AS-OVF-010",),
        _RecoveryRefusalKeepsOverflow,
    ),
    BrokenImplementation(
        "after-turn-refusal-notice-dropped",
        "a first-pass budget refusal of after-turn compaction emits no standalone side notice",
        ("AS-COMP-043",),
        _RefusalNoticeDropped,
    ),
    BrokenImplementation(
        "later-pass-refusal-closed-as-failure",
        "a later-pass budget refusal closes the open moment as an ordinary failure, not budget_refused",
        ("AS-COMP-043",),
        _LaterRefusalClosedAsFailure,
    ),
    BrokenImplementation(
        "budget-refusal-trims",
        "a budget refusal of after-turn compaction falls back to the configured deterministic trim",
        ("AS-COMP-044",),
        _RefusalTrims,
    ),
    BrokenImplementation(
        "presend-refusal-sends-original",
        "a budget refusal of pre-send compaction is taken for a failure: the original main request goes out",
        ("AS-COMP-011",),
        _PresendRefusalSendsOriginal,
    ),
    BrokenImplementation(
        "after-turn-refusal-fails-the-turn",
        "a budget refusal of after-turn compaction turns the completed send into a budget_exceeded failure",
        ("AS-COMP-042",),
        _AfterTurnRefusalFailsTheTurn,
    ),
    BrokenImplementation(
        "summary-pass-bypasses-writer",
        "a summary pass egresses without the usage writer's pending record and resolves its usage nowhere",
        ("AS-COMP-024", "AS-USE-005"),
        _SummaryBypassesWriter,
    ),
    BrokenImplementation(
        "compaction-spend-own-money",
        "a compaction's recorded spend carries the engine's own zero money, not what the writer answered",
        ("AS-COMP-024", "AS-USE-006"),
        _CompactionSpendOwnMoney,
    ),
    BrokenImplementation(
        "compaction-spend-dropped",
        "what a compaction's engaged passes spent is never recorded, so a failed compaction loses it",
        ("AS-COMP-024",),
        _CompactionSpendDropped,
    ),
)
