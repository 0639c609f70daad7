"""Broken implementations of manual compaction: acknowledgement, pass limits, truncation, installation.

Each is the reference session with one manual-compaction behaviour changed (most through the
:class:`~relavium_reference._host.compaction.CompactionJob` the session hands its runner, or through a
provider wrapper that rewrites a summary pass as it egresses); the ``compaction/manual-*`` cases citing
its clauses must catch it (see :mod:`relavium_conformance._selftest.proofs`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.compaction import CompactionJob, CompactionReport
from relavium_reference._model.errors import ObserverError
from relavium_reference._model.events import CompactionReason, SessionCompacted, SessionCompactionFailed
from relavium_reference._model.history_results import (
    CompactionFailed,
    CompactionResult,
    CompactionStart,
    NothingToCompact,
)
from relavium_reference._model.invocation import UNKNOWN_MODEL, Invocation, ModelInfo, open_stream
from relavium_reference._model.llm import LlmProvider, LlmRequest, LlmTextPart, StreamChunk, TextDelta
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.compaction_plan import KEPT_HEADER, kept_slot_count
from relavium_reference._rules.lifecycle import SessionInput, SessionState

__all__ = ["COMPACTION_BREAKS_2"]

_NOTE = re.compile(r"\n\[\.\.\. \d+ characters omitted \.\.\.\]\n")
_SUMMARY = re.compile(r"(Notes on the conversation so far:\n)(.*?)(\nThe conversation continued:)", re.S)


class _JobBreak(AgentSession):
    """A session whose compaction job is changed by :meth:`_bend` before the runner sees it."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        self._bend(job)
        return job

    def _bend(self, job: CompactionJob) -> None:
        raise NotImplementedError


class _RewritingProvider:
    """Streams a summary pass with its request rewritten (turn invocations pass through)."""

    def __init__(self, inner: LlmProvider, rewrite: Callable[[LlmRequest], LlmRequest]) -> None:
        self._inner = inner
        self._rewrite = rewrite

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._inner.stream(request)

    def stream_invocation(self, request: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        if invocation.purpose == "summary":
            request = self._rewrite(request)
        return open_stream(self._inner, request, invocation)


def _rewrite_parts(job: CompactionJob, edit: Callable[[int, str], str]) -> None:
    """Make every summary pass egress with each user text part ``i`` replaced by ``edit(i, text)``."""
    resolve = job.resolve_provider

    def rewrite(request: LlmRequest) -> LlmRequest:
        messages = []
        for message in request.messages:
            parts = [
                LlmTextPart(text=edit(i, part.text)) if isinstance(part, LlmTextPart) else part
                for i, part in enumerate(message.content)
            ]
            messages.append(message.model_copy(update={"content": parts}))
        return request.model_copy(update={"messages": messages})

    def resolved(provider: ProviderId, model: str) -> LlmProvider:
        return _RewritingProvider(resolve(provider, model), rewrite)

    job.resolve_provider = resolved


def _cut(text: str, keep: int) -> str:
    if len(text) <= keep:
        return text
    return text[: keep // 2] + "\n[...]\n" + text[len(text) - keep // 2 :]


class _SkipsAcknowledgement(_JobBreak):
    """Treats the unknown-window disclosure as already acknowledged: passes egress unacknowledged."""

    def _bend(self, job: CompactionJob) -> None:
        job.acknowledged = True


class _IgnoresFailedAcknowledgement(_JobBreak):
    """A failed acknowledgement is swallowed and the passes go out anyway."""

    def _bend(self, job: CompactionJob) -> None:
        hook = job.on_compaction_start
        if hook is None:
            return

        async def swallow(start: CompactionStart) -> None:
            try:
                await hook(start)
            except asyncio.CancelledError:
                raise
            except Exception:
                return

        job.on_compaction_start = swallow


class _HonoursLateAcknowledgement(_JobBreak):
    """Waits out the acknowledgement through a cancel and then egresses on its (late) grant."""

    def _bend(self, job: CompactionJob) -> None:
        hook = job.on_compaction_start
        if hook is None:
            return
        late = {"cancel": False}
        cancelled = job.cancelled

        async def wait_it_out(start: CompactionStart) -> None:
            answer = asyncio.ensure_future(hook(start))
            while True:
                try:
                    await asyncio.shield(answer)
                    return
                except asyncio.CancelledError:
                    if answer.done():
                        raise
                    late["cancel"] = True
                    asyncio.current_task().uncancel()  # type: ignore[union-attr]

        def forgets() -> bool:
            return False if late["cancel"] else cancelled()

        job.on_compaction_start = wait_it_out
        job.cancelled = forgets


class _CancelledAcknowledgementFails(_JobBreak):
    """A cancel while the acknowledgement is pending is reported as a failed acknowledgement."""

    def _bend(self, job: CompactionJob) -> None:
        hook = job.on_compaction_start
        if hook is None:
            return

        async def as_failure(start: CompactionStart) -> None:
            try:
                await hook(start)
            except asyncio.CancelledError:
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
                raise RuntimeError("the acknowledgement did not arrive") from None

        job.on_compaction_start = as_failure


class _FifthPass(_JobBreak):
    """Plans up to five summary passes."""

    def _bend(self, job: CompactionJob) -> None:
        job.max_passes = 5


class _IgnoresSoftBound(_JobBreak):
    """An unknown window is planned as a 36,864-token one: no soft bound (and no disclosure)."""

    def _bend(self, job: CompactionJob) -> None:
        models = dict(job.models)
        for entry in job.plan:
            if models.get(entry.model, UNKNOWN_MODEL).authoritative_window is None:
                models[entry.model] = ModelInfo(context_window=36864)
        job.models = models


class _FirstEntryWindowOnly(_JobBreak):
    """Sizes the passes by the first entry's window alone, as if every entry had it."""

    def _bend(self, job: CompactionJob) -> None:
        first = job.models.get(job.plan[0].model) if job.plan else None
        if first is not None:
            job.models = {**job.models, **{entry.model: first for entry in job.plan}}


class _KeptExchangeTruncated(_JobBreak):
    """Cuts long kept messages in the summariser request to make room."""

    def _bend(self, job: CompactionJob) -> None:
        _rewrite_parts(job, lambda i, text: text if i == 0 or text == KEPT_HEADER else _cut(text, 1000))


class _CutWithoutNote(_JobBreak):
    """Cuts an oversized foldable message silently: the omission note is left out."""

    def _bend(self, job: CompactionJob) -> None:
        _rewrite_parts(job, lambda i, text: _NOTE.sub("", text) if i == 0 else text)


class _RunningSummaryTruncated(_JobBreak):
    """Cuts the running summary in the fold block to half its length."""

    def _bend(self, job: CompactionJob) -> None:
        def halve(i: int, text: str) -> str:
            if i != 0:
                return text
            return _SUMMARY.sub(lambda m: m.group(1) + m.group(2)[: len(m.group(2)) // 2] + m.group(3), text)

        _rewrite_parts(job, halve)


class _PartialSummaryInstalled(AgentSession):
    """A compaction whose later pass failed installs the text an earlier pass returned."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        texts: list[str] = []
        self._texts = texts
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionFailed) and texts:
            kept = kept_slot_count(self._exchanges)
            self._exchanges = self._exchanges[len(self._exchanges) - kept :]
            self._preamble = texts[0]
        return report

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        resolve, texts = job.resolve_provider, self._texts

        class _Recording:
            def __init__(self, inner: LlmProvider) -> None:
                self._inner = inner

            def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
                return self._inner.stream(request)

            async def stream_invocation(
                self, request: LlmRequest, invocation: Invocation
            ) -> AsyncIterator[StreamChunk]:
                text = ""
                async for chunk in open_stream(self._inner, request, invocation):
                    if isinstance(chunk, TextDelta):
                        text += chunk.text
                    if chunk.type == "stop" and invocation.purpose == "summary" and text:
                        texts.append(text)
                    yield chunk

        job.resolve_provider = lambda provider, model: _Recording(resolve(provider, model))
        return job


class _CompactWhileBusy(AgentSession):
    """``compact`` during a turn answers ``nothing_to_compact`` instead of the lifecycle refusal."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        if self.state is SessionState.STREAMING:
            return NothingToCompact()
        return await super().compact(reason)


class _NoMarker(_JobBreak):
    """Installs the summary without appending the durable boundary marker."""

    def _bend(self, job: CompactionJob) -> None:
        async def nothing(kept_slots: int, text: str) -> None:
            return None

        job.append_boundary = nothing


class _FailureRaises(AgentSession):
    """An ordinary failed compaction raises instead of returning its typed result."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        result = await super().compact(reason)
        if isinstance(result, CompactionFailed):
            raise RuntimeError(result.message)
        return result


class _StaysBusyAfterFailure(AgentSession):
    """A failed compaction leaves the session in its compaction state (the next operation is busy)."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        result = await super().compact(reason)
        if isinstance(result, CompactionFailed):
            self._enter(SessionInput.COMPACT)
        return result


class _MomentClosedTwice(_JobBreak):
    """A failed compaction closes its moment with two failed-moment events."""

    def _bend(self, job: CompactionJob) -> None:
        inner = job.stamper

        class _Twice:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                if event_type is SessionCompactionFailed:
                    await inner.emit(event_type, **payload)
                return await inner.emit(event_type, **payload)

        job.stamper = _Twice()  # type: ignore[assignment]


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


class _SkipsTheEstimate(_JobBreak):
    """Installs without asking the provider's own estimator about the prospective history."""

    def _bend(self, job: CompactionJob) -> None:
        _wrap_estimates(job, None)


def _shielded(step: Callable[[], Any], late: dict[str, bool]) -> Any:
    """Await ``step()`` through a cancel (recording it in ``late``) instead of being interrupted."""

    async def run() -> Any:
        future = asyncio.ensure_future(step())
        while True:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                if future.done():
                    raise
                late["cancel"] = True
                asyncio.current_task().uncancel()  # type: ignore[union-attr]

    return run()


def _forgetting(job: CompactionJob, late: dict[str, bool]) -> None:
    cancelled = job.cancelled
    job.cancelled = lambda: False if late["cancel"] else cancelled()


class _EstimateNotRechecked(_JobBreak):
    """Finishes the estimate through a cancel and does not recheck it: the marker is still written."""

    def _bend(self, job: CompactionJob) -> None:
        late = {"cancel": False}

        async def estimate(inner: LlmProvider, request: LlmRequest) -> int:
            return int(await _shielded(lambda: inner.estimate_tokens(request), late))  # type: ignore[attr-defined]

        _wrap_estimates(job, estimate)
        _forgetting(job, late)


class _FailingEstimateFails(_JobBreak):
    """A failing provider estimator fails the compaction."""

    def _bend(self, job: CompactionJob) -> None:
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


class _AbortReachesCompaction(AgentSession):
    """``abort`` while a compaction runs cancels it, even after its summary came back."""

    def abort(self) -> None:
        task = self._compaction_task
        if task is not None and not task.done():
            task.cancel()
            return
        super().abort()


class _MarkerCommitNotRechecked(_JobBreak):
    """Finishes the marker commit through a cancel and installs the summary anyway."""

    def _bend(self, job: CompactionJob) -> None:
        late = {"cancel": False}
        append = job.append_boundary

        async def through(kept_slots: int, text: str) -> None:
            await _shielded(lambda: append(kept_slots, text), late)

        job.append_boundary = through
        _forgetting(job, late)


class _MarkerFailureInstalls(_JobBreak):
    """A failed marker append is ignored: the summary is installed without a durable boundary."""

    def _bend(self, job: CompactionJob) -> None:
        append = job.append_boundary

        async def ignore(kept_slots: int, text: str) -> None:
            try:
                await append(kept_slots, text)
            except asyncio.CancelledError:
                raise
            except Exception:
                return

        job.append_boundary = ignore


class _KeptTurnCountRepliesOnly(_JobBreak):
    """``keptTurnCount`` counts only kept exchanges with a nonempty reply (no legacy slot, no empty final)."""

    def _bend(self, job: CompactionJob) -> None:
        inner, exchanges = job.stamper, job.exchanges

        def replies(kept: int) -> int:
            return sum(1 for e in exchanges[len(exchanges) - kept :] if e.assistant)

        class _Counting:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                if event_type is SessionCompacted:
                    payload["kept_turn_count"] = replies(payload["kept_turn_count"])
                return await inner.emit(event_type, **payload)

        job.stamper = _Counting()  # type: ignore[assignment]


class _ObserverOriginLost(_JobBreak):
    """The compaction's notifications lose their failures' origin: ``to_failed`` turns a raw failure into a
    classified one (a fixed failed result); otherwise a classified one is rethrown as raw."""

    to_failed = False

    def _bend(self, job: CompactionJob) -> None:
        inner, to_failed = job.stamper, self.to_failed

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


class _RawObserverFailureFails(_ObserverOriginLost):
    to_failed = True


def _b(name: str, rule: str, clauses: tuple[str, ...], session: type[AgentSession]) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, session)


COMPACTION_BREAKS_2: tuple[BrokenImplementation, ...] = (
    _b(
        "compaction-egress-before-acknowledgement",
        "an unknown-window compaction sends its passes without the host acknowledging the disclosure",
        ("AS-COMP-028", "AS-COMP-029", "AS-COMP-030"),
        _SkipsAcknowledgement,
    ),
    _b(
        "compaction-failed-acknowledgement-ignored",
        "a failed acknowledgement of the unknown-window disclosure is ignored and the passes are sent",
        ("AS-COMP-030",),
        _IgnoresFailedAcknowledgement,
    ),
    _b(
        "compaction-late-acknowledgement-honoured",
        "an acknowledgement answered after a cancel is waited for and then grants the passes egress",
        ("AS-COMP-034",),
        _HonoursLateAcknowledgement,
    ),
    _b(
        "compaction-cancelled-acknowledgement-fails",
        "a cancel while the acknowledgement is pending ends the compaction as failed, not cancelled",
        ("AS-COMP-032", "AS-COMP-039"),
        _CancelledAcknowledgementFails,
    ),
    _b(
        "compaction-fifth-pass",
        "a compaction runs up to five summary passes",
        ("AS-COMP-016",),
        _FifthPass,
    ),
    _b(
        "compaction-soft-bound-ignored",
        "a manual compaction with an unknown window plans its passes as if the window were 36,864 tokens",
        ("AS-COMP-026",),
        _IgnoresSoftBound,
    ),
    _b(
        "compaction-first-entry-window-only",
        "summary passes are sized by the first plan entry's window alone, not every known entry's",
        ("AS-COMP-018",),
        _FirstEntryWindowOnly,
    ),
    _b(
        "compaction-kept-exchange-truncated",
        "long kept messages are cut in the summariser request to make room",
        ("AS-COMP-017", "AS-COMP-021"),
        _KeptExchangeTruncated,
    ),
    _b(
        "compaction-cut-without-note",
        "an oversized foldable message is cut without the omission note",
        ("AS-COMP-019", "AS-COMP-020"),
        _CutWithoutNote,
    ),
    _b(
        "compaction-running-summary-truncated",
        "the running summary is cut in the summariser request",
        ("AS-COMP-021",),
        _RunningSummaryTruncated,
    ),
    _b(
        "compaction-partial-summary-installed",
        "when a later pass fails, the text of an earlier pass is installed as the summary",
        ("AS-COMP-022",),
        _PartialSummaryInstalled,
    ),
    _b(
        "compaction-while-busy",
        "compact during a turn answers nothing_to_compact instead of the lifecycle refusal",
        ("AS-LIFE-036",),
        _CompactWhileBusy,
    ),
    _b(
        "compaction-without-marker",
        "a compaction installs its summary without appending the durable boundary marker",
        ("AS-LIFE-035",),
        _NoMarker,
    ),
    _b(
        "compaction-failure-raises",
        "an ordinary failed compaction raises instead of returning its typed result",
        ("AS-LIFE-037",),
        _FailureRaises,
    ),
    _b(
        "compaction-stays-busy-after-failure",
        "a failed compaction leaves the session busy",
        ("AS-OBS-017",),
        _StaysBusyAfterFailure,
    ),
    _b(
        "compaction-moment-closed-twice",
        "a failed compaction closes its moment with two failed-moment events",
        ("AS-COMP-036", "AS-COMP-038"),
        _MomentClosedTwice,
    ),
    _b(
        "compaction-skips-the-estimate",
        "the prospective history is installed without the provider's own estimate",
        ("AS-OBS-028",),
        _SkipsTheEstimate,
    ),
    _b(
        "compaction-estimate-not-rechecked",
        "a cancel during the estimate is not rechecked: the marker is written and the summary installed",
        ("AS-OBS-029", "AS-COMP-023"),
        _EstimateNotRechecked,
    ),
    _b(
        "compaction-failing-estimate-fails",
        "a failing provider estimator fails the compaction",
        ("AS-OBS-030",),
        _FailingEstimateFails,
    ),
    _b(
        "compaction-abort-reaches-compaction",
        "an abort while a compaction runs cancels it, even after its summary came back",
        ("AS-OBS-031",),
        _AbortReachesCompaction,
    ),
    _b(
        "compaction-marker-commit-not-rechecked",
        "a cancel during the marker commit is not rechecked: the summary is installed and announced",
        ("AS-COMP-036",),
        _MarkerCommitNotRechecked,
    ),
    _b(
        "compaction-marker-failure-installs",
        "a failed marker append is ignored and the summary installed without a durable boundary",
        ("AS-COMP-022", "AS-COMP-023"),
        _MarkerFailureInstalls,
    ),
    _b(
        "kept-turn-count-replies-only",
        "keptTurnCount counts only kept exchanges with a nonempty reply, not legacy slots or empty finals",
        ("AS-COMP-025",),
        _KeptTurnCountRepliesOnly,
    ),
    _b(
        "compaction-classified-observer-failure-rejects",
        "a classified failure of a compaction notification rejects instead of giving the fixed failed result",
        ("AS-OBS-011", "AS-OBS-012"),
        _ObserverOriginLost,
    ),
    _b(
        "compaction-raw-observer-failure-fails",
        "a raw failure of a compaction notification becomes a failed result, not the original rejection",
        ("AS-OBS-011", "AS-OBS-012"),
        _RawObserverFailureFails,
    ),
)
