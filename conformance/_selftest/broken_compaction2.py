"""Broken implementations of manual compaction: acknowledgement, pass limits, truncation, installation.

Each is the reference session with one manual-compaction behaviour changed (most through the
:class:`~relavium_reference._host.compaction_runner.CompactionJob` the session hands its runner, or through a
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
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._model.events import CompactionReason, SessionCompactionFailed
from relavium_reference._model.history_results import (
    CompactionFailed,
    CompactionResult,
    CompactionStart,
    NothingToCompact,
)
from relavium_reference._model.invocation import (
    UNKNOWN_MODEL,
    AdmissionRefused,
    AdmissionRequest,
    Admitted,
    Invocation,
    ModelInfo,
    open_stream,
)
from relavium_reference._model.llm import LlmProvider, LlmRequest, LlmTextPart, StreamChunk, TextDelta
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.compaction_plan import KEPT_HEADER, kept_slot_count
from relavium_reference._rules.lifecycle import SessionInput, SessionState

__all__ = ["COMPACTION_BREAKS_2", "JobBreak"]

_NOTE = re.compile(r"\n\[\.\.\. \d+ characters omitted \.\.\.\]\n")
_SUMMARY = re.compile(r"(Notes on the conversation so far:\n)(.*?)(\nThe conversation continued:)", re.S)


class JobBreak(AgentSession):
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
            messages.append(message.model_copy(update={"content": tuple(parts)}))
        return request.model_copy(update={"messages": messages})

    def resolved(provider: ProviderId, model: str) -> LlmProvider:
        return _RewritingProvider(resolve(provider, model), rewrite)

    job.resolve_provider = resolved


def _cut(text: str, keep: int) -> str:
    if len(text) <= keep:
        return text
    return text[: keep // 2] + "\n[...]\n" + text[len(text) - keep // 2 :]


class _SkipsAcknowledgement(JobBreak):
    """Treats the unknown-window disclosure as already acknowledged: passes egress unacknowledged."""

    def _bend(self, job: CompactionJob) -> None:
        job.acknowledged = True


class _IgnoresFailedAcknowledgement(JobBreak):
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


class _HonoursLateAcknowledgement(JobBreak):
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


class _CancelledAcknowledgementFails(JobBreak):
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


class _FifthPass(JobBreak):
    """Plans up to five summary passes."""

    def _bend(self, job: CompactionJob) -> None:
        job.max_passes = 5


class _IgnoresSoftBound(JobBreak):
    """An unknown window is planned as a 36,864-token one: no soft bound (and no disclosure)."""

    def _bend(self, job: CompactionJob) -> None:
        models = dict(job.models)
        for entry in job.plan:
            if models.get(entry.model, UNKNOWN_MODEL).authoritative_window is None:
                models[entry.model] = ModelInfo(context_window=36864)
        job.models = models


class _FirstEntryWindowOnly(JobBreak):
    """Sizes the passes by the first entry's window alone, as if every entry had it."""

    def _bend(self, job: CompactionJob) -> None:
        first = job.models.get(job.plan[0].model) if job.plan else None
        if first is not None:
            job.models = {**job.models, **{entry.model: first for entry in job.plan}}


class _KeptExchangeTruncated(JobBreak):
    """Cuts long kept messages in the summariser request to make room."""

    def _bend(self, job: CompactionJob) -> None:
        _rewrite_parts(job, lambda i, text: text if i == 0 or text == KEPT_HEADER else _cut(text, 1000))


class _CutWithoutNote(JobBreak):
    """Cuts an oversized foldable message silently: the omission note is left out."""

    def _bend(self, job: CompactionJob) -> None:
        _rewrite_parts(job, lambda i, text: _NOTE.sub("", text) if i == 0 else text)


class _RunningSummaryTruncated(JobBreak):
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


class _NoMarker(JobBreak):
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


class _MomentClosedTwice(JobBreak):
    """A failed compaction closes its moment with two failed-moment events."""

    def _bend(self, job: CompactionJob) -> None:
        inner = job.stamper

        class _Twice:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                if event_type is SessionCompactionFailed:
                    await inner.emit(event_type, **payload)
                return await inner.emit(event_type, **payload)

        job.stamper = _Twice()  # type: ignore[assignment]


class _KeepsUnusedAdmission(JobBreak):
    """A pass admitted but never sent (the compaction was cancelled first) keeps its admission."""

    def _bend(self, job: CompactionJob) -> None:
        inner = job.admission

        class _NoRelease:
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                return await inner.admit(request)

            async def release(self, request: AdmissionRequest) -> None:
                return None

        job.admission = _NoRelease()


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
        "compaction-keeps-unused-admission",
        "a pass admitted but cancelled before it was sent keeps its admission",
        ("AS-COMP-032",),
        _KeepsUnusedAdmission,
    ),
)
