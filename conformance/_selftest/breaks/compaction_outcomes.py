"""Breaks of a compaction's outcome (clauses AS-COMP-036 on): the compaction moment and its events,
the result shapes, budget refusals and the fall-back to trimming.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import bending_jobs, forgetting, shielded
from relavium_conformance._wire.protocol import Callback
from relavium_conformance._wire.protocol_messages import HandleParams
from relavium_reference import AgentSession, TurnPolicy
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._host.session import TurnResult
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.events import (
    CompactionReason,
    SessionCompacting,
    SessionCompactionFailed,
    SessionCompactionRefused,
    SessionEvent,
    TurnError,
)
from relavium_reference._model.history_results import (
    CompactionBudgetRefused,
    CompactionCancelled,
    CompactionFailed,
)
from relavium_reference._model.invocation import Admission, AdmissionRefused, AdmissionRequest, Admitted
from relavium_reference._model.shapes import WireModel
from relavium_reference._model.vocabulary import ErrorCode
from relavium_reference._rules.lifecycle import SessionState

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="cancelled-compaction-trims",
    summary="a cancelled after-turn compaction still falls back to the deterministic trim",
    clauses=("AS-COMP-046",),
)
class _CancelledCompactionTrims(AgentSession):
    """A cancelled automatic compaction still falls back to the deterministic trim."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        limit = self._deps.max_messages
        if isinstance(report.result, CompactionCancelled) and not manual and limit:
            await self._trim(limit, "auto-fallback")
        return report


@break_of(
    name="after-turn-failure-keeps-everything",
    summary="an ordinary after-turn compaction failure does not fall back to the configured trim",
    clauses=("AS-COMP-045",),
)
class _FailureKeepsEverything(AgentSession):
    """An ordinary after-turn compaction failure does not fall back to the configured trim."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionFailed) and not manual and pending_user is None:
            return replace(report, result=CompactionCancelled())  # after-turn: as if cancelled
        return report


@break_of(
    name="budget-refusal-unnamed",
    summary="a budget_exceeded terminal carries a fixed message that does not name the cap",
    clauses=("AS-COMP-047",),
)
class _RefusalUnnamed(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED:
            end = replace(end, error_message=None)
        return await super()._settle(end, progress)


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


@break_of(
    name="after-turn-refusal-notice-dropped",
    summary="a first-pass budget refusal of after-turn compaction emits no standalone side notice",
    clauses=("AS-COMP-043",),
)
class _RefusalNoticeDropped(_StampedJob):
    def change(self, event_type: type[WireModel], payload: dict[str, Any]) -> dict[str, Any] | None:
        return None if event_type is SessionCompactionRefused else payload


@break_of(
    name="later-pass-refusal-closed-as-failure",
    summary=("a later-pass budget refusal closes the open moment as an ordinary failure, not budget_refused"),
    clauses=("AS-COMP-043",),
)
class _LaterRefusalClosedAsFailure(_StampedJob):
    def change(self, event_type: type[WireModel], payload: dict[str, Any]) -> dict[str, Any] | None:
        if event_type is SessionCompactionFailed and payload.get("outcome") == "budget_refused":
            return {**payload, "outcome": "failed"}
        return payload


@break_of(
    name="budget-refusal-trims",
    summary="a budget refusal of after-turn compaction falls back to the configured deterministic trim",
    clauses=("AS-COMP-044",),
)
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


@break_of(
    name="after-turn-refusal-fails-the-turn",
    summary=(
        "a budget refusal of after-turn compaction turns the completed send into a budget_exceeded failure"
    ),
    clauses=("AS-COMP-042",),
)
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


@break_of(
    name="compaction-refusal-hides-the-cap",
    summary=(
        "a budget-refused manual compaction answers a generic message instead of the cap's safe message"
    ),
    clauses=("AS-COMP-041",),
)
class _RefusalHidesTheCap(AgentSession):
    """A budget-refused compaction answers with a generic message instead of the cap's safe one."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionBudgetRefused):
            return replace(report, result=report.result.model_copy(update={"message": "refused"}))
        return report


@break_of(
    name="compaction-moment-before-admission",
    summary="the compaction moment opens before the first admission, so a refusal there still opened it",
    clauses=("AS-COMP-037",),
)
class _MomentBeforeAdmission(AgentSession):
    """Opens the compaction moment before its first admission, so a refusal there leaves it open."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        inner, stamper = job.admission, job.stamper

        class _Early:
            opened = False

            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                if request.purpose == "summary" and not self.opened:
                    self.opened = True
                    await stamper.emit(SessionCompacting, reason=job.reason)
                return await inner.admit(request)

            async def release(self, request: AdmissionRequest) -> None:
                await inner.release(request)

        early: Admission = _Early()
        job.admission = early
        return job


@break_of(
    name="compaction-moment-closed-twice",
    summary="a failed compaction closes its moment with two failed-moment events",
    clauses=("AS-COMP-036", "AS-COMP-038"),
    through=bending_jobs,
)
def _moment_closed_twice(job: CompactionJob) -> None:
    """A failed compaction closes its moment with two failed-moment events."""
    inner = job.stamper

    class _Twice:
        async def emit(self, event_type: Any, **payload: Any) -> Any:
            if event_type is SessionCompactionFailed:
                await inner.emit(event_type, **payload)
            return await inner.emit(event_type, **payload)

    job.stamper = _Twice()  # type: ignore[assignment]


@break_of(
    name="compaction-marker-commit-not-rechecked",
    summary="a cancel during the marker commit is not rechecked: the summary is installed and announced",
    clauses=("AS-COMP-036",),
    through=bending_jobs,
)
def _marker_commit_not_rechecked(job: CompactionJob) -> None:
    """Finishes the marker commit through a cancel and installs the summary anyway."""
    late = {"cancel": False}
    append = job.append_boundary

    async def through(kept_slots: int, text: str) -> None:
        await shielded(lambda: append(kept_slots, text), late)

    job.append_boundary = through
    forgetting(job, late)


@break_of(
    name="compaction-result-shape-renamed",
    summary="session.compact answers keptTurns instead of keptTurnCount, and a message on every result",
    clauses=("AS-COMP-040",),
)
class _ResultShapeRenamed(ReferenceImplementation):
    """Answers ``session.compact`` with ``keptTurns`` instead of ``keptTurnCount`` and a message on every
    result (the KD-COMP-5 shapes left)."""

    async def on_session_compact(self, params: HandleParams) -> Any:
        result = dict(await super().on_session_compact(params))
        if "keptTurnCount" in result:
            result["keptTurns"] = result.pop("keptTurnCount")
        result.setdefault("message", "compaction finished")
        return result


@break_of(
    name="compacted-event-off-the-schema",
    summary="session:compacted carries usage instead of tokensUsed",
    clauses=("AS-COMP-048",),
)
class _CompactedEventRenamed(ReferenceImplementation):
    """Publishes ``session:compacted`` with ``usage`` instead of ``tokensUsed`` (off the event schema)."""

    def __init__(self, callback: Callback, **kwargs: Any) -> None:
        async def tampered(method: str, params: dict[str, Any]) -> Any:
            event = params.get("event") if method == "host.emit" else None
            if isinstance(event, dict) and event.get("type") == "session:compacted":
                event = dict(event)
                event["usage"] = event.pop("tokensUsed", None)
                params = {**params, "event": event}
            return await callback(method, params)

        super().__init__(tampered, **kwargs)


@break_of(
    name="fallback-trim-without-a-bound",
    summary="with maxMessages unset, a failed after-turn compaction still trims, to the last exchange",
    clauses=("AS-COMP-045",),
)
class _FallbackTrimWithoutBound(AgentSession):
    """The fallback trim takes a bound of its own (one exchange, two messages) when the host set none."""

    async def _after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        deps = self._deps
        if deps.max_messages is None:
            self._deps = replace(deps, max_messages=2)
        try:
            await super()._after_turn(progress, policy)
        finally:
            self._deps = deps


# A break only the generated ``compaction`` area finds (``generated.BOUNDARY_BREAKS``, ``docs/proofs.md``)


@break_of(
    name="fallback-trim-keeps-the-new-reply",
    summary=(
        "a failed after-turn compaction's fallback trim never drops the exchange just completed: a "
        "maxMessages below one exchange's two messages is raised to two"
    ),
    clauses=("AS-COMP-045",),
)
class _FallbackTrimKeepsTheNewReply(AgentSession):
    """The fallback trim's bound is at least one whole exchange (two messages)."""

    async def _after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        deps = self._deps
        if deps.max_messages is not None and deps.max_messages < 2:
            self._deps = replace(deps, max_messages=2)
        try:
            await super()._after_turn(progress, policy)
        finally:
            self._deps = deps
