"""Breaks of failure origins and cancellation (clauses AS-OBS-*): what a failing host observer, sink or
commit flush does to a turn or a compaction, and where a cancel is rechecked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Literal

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import (
    Governor,
    Observed,
    WrappedSession,
    bending_jobs,
    forgetting,
    shielded,
)
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_reference import AgentSession, PersistError, SessionStopReason, TurnResult
from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.errors import ObserverError
from relavium_reference._model.events import SessionTurnCompleted, SessionTurnStarted
from relavium_reference._model.history_results import CompactionFailed, CompactionResult
from relavium_reference._model.invocation import (
    Admission,
    AdmissionRefused,
    AdmissionRequest,
    Admitted,
    Invocation,
    open_stream,
)
from relavium_reference._model.llm import LlmProvider, LlmRequest, StreamChunk
from relavium_reference._model.usage_writer import (
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)
from relavium_reference._model.vocabulary import ErrorCode, ProviderId
from relavium_reference._rules.lifecycle import SessionInput, SessionState

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="budget-refusal-uses-slot",
    summary="a turn refused at its first admission still uses a slot of the hard cap",
    clauses=("AS-OBS-016",),
)
class _RefusalUsesSlot(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED and not progress.engaged:
            self._turns_used += 1
        return await super()._settle(end, progress)


@break_of(
    name="cancel-in-commit-drops-accounting",
    summary="a cancel during the commitment flush reports the turn as having spent nothing",
    clauses=("AS-OBS-027",),
)
class _CancelDropsAccounting(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if self._interrupt == "cancel":
            progress = TurnProgress()
        return await super()._settle(end, progress)


@break_of(
    name="raw-commit-failure-presented",
    summary="a raw commit failure ends as the fixed failed result instead of rejecting with it",
    clauses=("AS-OBS-008",),
)
class _RawCommitFailurePresented(AgentSession):
    """A raw commit failure is presented as the fixed failed result, like a classified one."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        committed = await super()._commit(text, end, progress)
        self._raw_commit_failure = None
        return committed


@break_of(
    name="classified-commit-failure-raised",
    summary="a classified commit failure rejects the send instead of the fixed failed result",
    clauses=("AS-OBS-008",),
)
class _ClassifiedCommitFailureRaised(AgentSession):
    """A classified commit failure rejects the send instead of the fixed failed result."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        committed = await super()._commit(text, end, progress)
        if not committed and self._raw_commit_failure is None:
            self._raw_commit_failure = PersistError("the completed turn could not be committed")
        return committed


@break_of(
    name="compaction-stays-busy-after-failure",
    summary="a failed compaction leaves the session busy",
    clauses=("AS-OBS-017",),
)
class _StaysBusyAfterFailure(AgentSession):
    """A failed compaction leaves the session in its compaction state (the next operation is busy)."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        result = await super().compact(reason)
        if isinstance(result, CompactionFailed):
            self._enter(SessionInput.COMPACT)
        return result


class _EstimateWrapper:
    """A provider whose own estimator is hidden (``estimate`` None) or replaced."""

    def __init__(self, inner: LlmProvider, estimate: Callable[[LlmProvider, LlmRequest], Any] | None) -> None:
        self._inner = inner
        self._estimate = estimate

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._inner.stream(request)

    def stream_invocation(self, request: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        return open_stream(self._inner, request, invocation)


class _Estimating(_EstimateWrapper):
    async def estimate_tokens(self, request: LlmRequest) -> int:
        assert self._estimate is not None
        return int(await self._estimate(self._inner, request))


def _wrap_estimates(job: CompactionJob, estimate: Callable[[LlmProvider, LlmRequest], Any] | None) -> None:
    resolve = job.resolve_provider

    def resolved(provider: ProviderId, model: str) -> LlmProvider:
        inner = resolve(provider, model)
        if estimate is None:
            return _EstimateWrapper(inner, None)
        return _Estimating(inner, estimate)

    job.resolve_provider = resolved


@break_of(
    name="compaction-skips-the-estimate",
    summary="the prospective history is installed without the provider's own estimate",
    clauses=("AS-OBS-028",),
    through=bending_jobs,
)
def _skips_the_estimate(job: CompactionJob) -> None:
    """Installs without asking the provider's own estimator about the prospective history."""
    _wrap_estimates(job, None)


@break_of(
    name="compaction-estimate-not-rechecked",
    summary=(
        "a cancel during the estimate is not rechecked: the marker is written and the summary installed"
    ),
    clauses=("AS-OBS-029", "AS-COMP-023"),
    through=bending_jobs,
)
def _estimate_not_rechecked(job: CompactionJob) -> None:
    """Finishes the estimate through a cancel and does not recheck it: the marker is still written."""
    late = {"cancel": False}

    async def estimate(inner: LlmProvider, request: LlmRequest) -> int:
        return int(await shielded(lambda: inner.estimate_tokens(request), late))  # type: ignore[attr-defined]

    _wrap_estimates(job, estimate)
    forgetting(job, late)


@break_of(
    name="compaction-failing-estimate-fails",
    summary="a failing provider estimator fails the compaction",
    clauses=("AS-OBS-030",),
    through=bending_jobs,
)
def _failing_estimate_fails(job: CompactionJob) -> None:
    """A failing provider estimator fails the compaction."""
    failed = {"estimate": False}
    append = job.append_boundary

    async def estimate(inner: LlmProvider, request: LlmRequest) -> int:
        try:
            return int(await inner.estimate_tokens(request))  # type: ignore[attr-defined]
        except Exception:
            failed["estimate"] = True
            raise

    async def refuse(kept_slots: int, text: str) -> None:
        if failed["estimate"]:
            raise RuntimeError("the estimate failed")
        await append(kept_slots, text)

    _wrap_estimates(job, estimate)
    job.append_boundary = refuse


@break_of(
    name="compaction-abort-reaches-compaction",
    summary="an abort while a compaction runs cancels it, even after its summary came back",
    clauses=("AS-OBS-031", "AS-OBS-022"),
)
class _AbortReachesCompaction(AgentSession):
    """``abort`` while a compaction runs cancels it, even after its summary came back."""

    def abort(self) -> None:
        task = self._compaction_task
        if task is not None and not task.done():
            task.cancel()
            return
        super().abort()


def _relabel_failures(job: CompactionJob, *, to_failed: bool) -> None:
    """The compaction's notifications lose their failures' origin: ``to_failed`` turns a raw failure into a
    classified one (a fixed failed result); otherwise a classified one is rethrown as raw."""
    inner = job.stamper

    class _Relabel:
        async def emit(self, event_type: Any, **payload: Any) -> Any:
            try:
                return await inner.emit(event_type, **payload)
            except ObserverError as failure:
                if to_failed:
                    raise
                raise RuntimeError(str(failure)) from None
            except Exception as failure:
                if to_failed:
                    raise ObserverError(str(failure)) from None
                raise

    job.stamper = _Relabel()  # type: ignore[assignment]


@break_of(
    name="compaction-classified-observer-failure-rejects",
    summary=(
        "a classified failure of a compaction notification rejects instead of giving the fixed failed result"
    ),
    clauses=("AS-OBS-011", "AS-OBS-012"),
    through=bending_jobs,
)
def _observer_origin_lost(job: CompactionJob) -> None:
    _relabel_failures(job, to_failed=False)


@break_of(
    name="compaction-raw-observer-failure-fails",
    summary=(
        "a raw failure of a compaction notification becomes a failed result, not the original rejection"
    ),
    clauses=("AS-OBS-011", "AS-OBS-012"),
    through=bending_jobs,
)
def _raw_observer_failure_fails(job: CompactionJob) -> None:
    _relabel_failures(job, to_failed=True)


@break_of(
    name="compaction-resolution-not-rechecked",
    summary=(
        "a cancel while the providers are resolved is not rechecked: the next entry is resolved and called"
    ),
    clauses=("AS-OBS-020", "AS-OBS-021"),
    through=bending_jobs,
)
def _resolution_not_rechecked(job: CompactionJob) -> None:
    """Finishes resolving the providers through a cancel and does not recheck it: it goes on to the passes."""
    late = {"cancel": False}
    prepare = job.prepare_provider
    if prepare is None:
        return

    async def through(provider: ProviderId, model: str) -> None:
        await shielded(lambda: prepare(provider, model), late)

    job.prepare_provider = through
    forgetting(job, late)


@break_of(
    name="sink-failure-is-free",
    summary="a turn whose observer failed after engagement uses no cap slot",
    clauses=("AS-OBS-009",),
)
class _SinkFailureIsFree(Observed):
    async def send_message(self, text: str) -> TurnResult:
        try:
            return await super().send_message(text)
        except Exception:
            self._turns_used = max(0, self._turns_used - 1)
            raise


@break_of(
    name="sink-failure-has-no-terminal",
    summary="a turn whose observer failed publishes no fixed terminal",
    clauses=("AS-OBS-010",),
)
class _SinkFailureHasNoTerminal(Observed):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if not self.sink_failed:
            return await super()._settle(end, progress)
        self.sink_failed = False
        self._count_turn(progress)
        self._enter(SessionInput.TURN_SETTLED)
        return TurnResult(
            status="failed", stop_reason=SessionStopReason.ERROR, tokens_used=self._tokens(progress)
        )


@break_of(
    name="turn-start-failure-keeps-busy",
    summary="a failing turn-start notification leaves the session busy",
    clauses=("AS-OBS-015",),
)
class _TurnStartFailureKeepsBusy(Observed):
    async def send_message(self, text: str) -> TurnResult:
        try:
            return await super().send_message(text)
        except Exception:
            if self._turns_used == 0 and self.sink_failed:
                self._state = SessionState.STREAMING  # the running state is never released
            raise


@break_of(
    name="refused-start-uses-a-slot",
    summary="a turn refused at its start notification still uses a cap slot",
    clauses=("AS-OBS-016",),
)
class _RefusedStartUsesASlot(Observed):
    async def send_message(self, text: str) -> TurnResult:
        used = self._turns_used
        try:
            return await super().send_message(text)
        except Exception:
            if self._turns_used == used:
                self._turns_used += 1
            raise


@break_of(
    name="turn-started-after-cancel",
    summary="a send after cancel emits session:turn_started before it is refused",
    clauses=("AS-OBS-019",),
)
class _TurnStartedAfterCancel(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        if self._state is SessionState.CANCELLED:
            await self._stamper.emit(SessionTurnStarted)
        return await super().send_message(text)


@break_of(
    name="commit-cancel-publishes",
    summary="a cancel during the commit still publishes session:turn_completed",
    clauses=("AS-OBS-026",),
)
class _CommitCancelPublishes(AgentSession):
    """A cancel that arrives while the host commits the turn still publishes its completion."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        result = await super()._settle(end, progress)
        if result.status == "cancelled" and end.succeeded and progress.resolved:
            await self._stamper.emit(
                SessionTurnCompleted, stop_reason=end.stop_reason, tokens_used=result.tokens_used
            )
        return result


@break_of(
    name="internal-error-retryable",
    summary="the fixed internal error of an observer failure says retryable",
    clauses=("AS-OBS-007", "AS-OBS-008"),
)
class _InternalErrorRetryable(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        error = event.get("error")
        if isinstance(error, dict) and error.get("code") == "internal":
            error["retryable"] = True
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        error = result.get("error") if isinstance(result, dict) else None
        if isinstance(error, dict) and error.get("code") == "internal":
            error["retryable"] = True
        return result


@break_of(
    name="admission-outlives-the-cancel",
    summary="an admission answered after a cancel completes the await normally and the call egresses",
    clauses=("AS-OBS-013",),
)
class _AdmissionOutlivesCancel(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Shielded(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                answer = asyncio.ensure_future(self.inner.admit(request))
                while True:
                    try:
                        return await asyncio.shield(answer)
                    except asyncio.CancelledError:
                        if answer.cancelled():
                            raise
                        continue  # the cancel is swallowed: the answer is awaited to its end

        return Shielded(inner)


@break_of(
    name="callback-diagnostic-in-terminal",
    summary="a failing cost governor's or usage writer's own message becomes the turn's public error",
    clauses=("AS-OBS-007",),
)
class _DiagnosticInTerminal(WrappedSession):
    """The text of the last failing accounting callback is copied into the turn's terminal."""

    _diagnostic: str | None = None

    def governor(self, inner: Admission) -> Admission:
        session = self

        class Noting(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                try:
                    return await self.inner.admit(request)
                except Exception as exc:
                    session._diagnostic = str(exc)
                    raise

        return Noting(inner)

    def writer(self, inner: UsageWriter) -> UsageWriter:
        session = self

        class Noting:
            async def open(self, basis: UsageBasis) -> UsageTotals:
                return await inner.open(basis)

            async def pending(self, record: UsagePending) -> None:
                try:
                    await inner.pending(record)
                except Exception as exc:
                    session._diagnostic = str(exc)
                    raise

            async def resolved(self, record: UsageResolved) -> UsageSettled:
                return await inner.resolved(record)

        return Noting()

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is not None and self._diagnostic is not None:
            end = replace(end, error_message=self._diagnostic)
        return await super()._settle(end, progress)
