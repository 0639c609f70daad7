"""Breaks of the compaction passes (clauses AS-COMP-016 to 035): what is folded and what kept verbatim,
the truncation note, the summary's installation and the unknown-window acknowledgement.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import Governor, WrappedSession, bending_jobs
from relavium_reference import AgentSession
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._model.events import CompactionReason, SessionCompacted
from relavium_reference._model.history_results import CompactionFailed, CompactionStart
from relavium_reference._model.invocation import (
    UNKNOWN_MODEL,
    Admission,
    AdmissionRefused,
    AdmissionRequest,
    Admitted,
    Invocation,
    ModelInfo,
    open_stream,
)
from relavium_reference._model.llm import LlmProvider, LlmRequest, LlmTextPart, StreamChunk, TextDelta
from relavium_reference._model.records import CostEntry
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.compaction_plan import KEPT_HEADER, kept_slot_count

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="soft-bound-applied-automatically",
    summary="automatic compaction uses the manual unknown-window soft bound and acknowledgement",
    clauses=("AS-COMP-035",),
)
class _SoftBoundAutomatically(AgentSession):
    """Automatic compaction runs as a manual one would: the unknown-window soft bound and its
    acknowledgement apply to it too."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        return await super().run_compaction(reason, pending_user=pending_user, manual=True)


@break_of(
    name="cancel-keeps-pending-admission",
    summary="a cancel while admission is pending never releases it (a turn's or a summary pass's)",
    clauses=("AS-COMP-033",),
)
class _KeepsPendingAdmission(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Keeps(Governor):
            async def release(self, request: AdmissionRequest) -> None:
                return None

        return Keeps(inner)

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        return replace(job, admission=self.governor(job.admission))


@break_of(
    name="summary-pass-bypasses-writer",
    summary=(
        "a summary pass egresses without the usage writer's pending record and resolves its usage nowhere"
    ),
    clauses=("AS-COMP-024", "AS-USE-005"),
)
class _SummaryBypassesWriter(AgentSession):
    """Summary passes egress without the writer: no pending record, no resolution through it."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        return replace(super()._compaction_job(reason, manual=manual, pending_user=pending_user), usage=None)


@break_of(
    name="compaction-spend-dropped",
    summary=("what a compaction's engaged passes spent is never recorded, so a failed compaction loses it"),
    clauses=("AS-COMP-024",),
)
class _CompactionSpendDropped(AgentSession):
    """What a compaction's passes spent is never recorded (a failed one leaves no trace of it)."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        async def drop(_entry: CostEntry) -> None:
            return None

        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        return replace(job, record_cost=drop)


@break_of(
    name="compaction-spend-own-money",
    summary=(
        "a compaction's recorded spend carries the engine's own zero money, not what the writer answered"
    ),
    clauses=("AS-COMP-024", "AS-USE-006"),
)
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


@break_of(
    name="failed-compaction-drops-turns",
    summary="a failed compaction still drops the older turns from the working history",
    clauses=("AS-COMP-023",),
)
class _FailedCompactionDropsTurns(AgentSession):
    """A failed compaction still drops the older turns it meant to fold."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionFailed):
            self._exchanges = self._exchanges[-1:]
        return report


_NOTE = re.compile(r"\n\[\.\.\. \d+ characters omitted \.\.\.\]\n")


_SUMMARY = re.compile(r"(Notes on the conversation so far:\n)(.*?)(\nThe conversation continued:)", re.S)


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


@break_of(
    name="compaction-egress-before-acknowledgement",
    summary=("an unknown-window compaction sends its passes without the host acknowledging the disclosure"),
    clauses=("AS-COMP-028", "AS-COMP-029", "AS-COMP-030"),
    through=bending_jobs,
)
def _skips_acknowledgement(job: CompactionJob) -> None:
    """Treats the unknown-window disclosure as already acknowledged: passes egress unacknowledged."""
    job.acknowledged = True


@break_of(
    name="compaction-failed-acknowledgement-ignored",
    summary=("a failed acknowledgement of the unknown-window disclosure is ignored and the passes are sent"),
    clauses=("AS-COMP-030",),
    through=bending_jobs,
)
def _ignores_failed_acknowledgement(job: CompactionJob) -> None:
    """A failed acknowledgement is swallowed and the passes go out anyway."""
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


@break_of(
    name="compaction-late-acknowledgement-honoured",
    summary="an acknowledgement answered after a cancel is waited for and then grants the passes egress",
    clauses=("AS-COMP-034",),
    through=bending_jobs,
)
def _honours_late_acknowledgement(job: CompactionJob) -> None:
    """Waits out the acknowledgement through a cancel and then egresses on its (late) grant."""
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


@break_of(
    name="compaction-cancelled-acknowledgement-fails",
    summary="a cancel while the acknowledgement is pending ends the compaction as failed, not cancelled",
    clauses=("AS-COMP-032", "AS-COMP-039"),
    through=bending_jobs,
)
def _cancelled_acknowledgement_fails(job: CompactionJob) -> None:
    """A cancel while the acknowledgement is pending is reported as a failed acknowledgement."""
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


@break_of(
    name="compaction-fifth-pass",
    summary="a compaction runs up to five summary passes",
    clauses=("AS-COMP-016",),
    through=bending_jobs,
)
def _fifth_pass(job: CompactionJob) -> None:
    """Plans up to five summary passes."""
    job.max_passes = 5


@break_of(
    name="compaction-soft-bound-ignored",
    summary=(
        "a manual compaction with an unknown window plans its passes as if the window were 36,864 tokens"
    ),
    clauses=("AS-COMP-026",),
    through=bending_jobs,
)
def _ignores_soft_bound(job: CompactionJob) -> None:
    """An unknown window is planned as a 36,864-token one: no soft bound (and no disclosure)."""
    models = dict(job.models)
    for entry in job.plan:
        if models.get(entry.model, UNKNOWN_MODEL).authoritative_window is None:
            models[entry.model] = ModelInfo(context_window=36864)
    job.models = models


@break_of(
    name="compaction-first-entry-window-only",
    summary="summary passes are sized by the first plan entry's window alone, not every known entry's",
    clauses=("AS-COMP-018",),
    through=bending_jobs,
)
def _first_entry_window_only(job: CompactionJob) -> None:
    """Sizes the passes by the first entry's window alone, as if every entry had it."""
    first = job.models.get(job.plan[0].model) if job.plan else None
    if first is not None:
        job.models = {**job.models, **{entry.model: first for entry in job.plan}}


@break_of(
    name="compaction-kept-exchange-truncated",
    summary="long kept messages are cut in the summariser request to make room",
    clauses=("AS-COMP-017", "AS-COMP-021"),
    through=bending_jobs,
)
def _kept_exchange_truncated(job: CompactionJob) -> None:
    """Cuts long kept messages in the summariser request to make room."""
    _rewrite_parts(job, lambda i, text: text if i == 0 or text == KEPT_HEADER else _cut(text, 1000))


@break_of(
    name="compaction-cut-without-note",
    summary="an oversized foldable message is cut without the omission note",
    clauses=("AS-COMP-019", "AS-COMP-020"),
    through=bending_jobs,
)
def _cut_without_note(job: CompactionJob) -> None:
    """Cuts an oversized foldable message silently: the omission note is left out."""
    _rewrite_parts(job, lambda i, text: _NOTE.sub("", text) if i == 0 else text)


@break_of(
    name="compaction-running-summary-truncated",
    summary="the running summary is cut in the summariser request",
    clauses=("AS-COMP-021",),
    through=bending_jobs,
)
def _running_summary_truncated(job: CompactionJob) -> None:
    """Cuts the running summary in the fold block to half its length."""

    def halve(i: int, text: str) -> str:
        if i != 0:
            return text
        return _SUMMARY.sub(lambda m: m.group(1) + m.group(2)[: len(m.group(2)) // 2] + m.group(3), text)

    _rewrite_parts(job, halve)


@break_of(
    name="compaction-partial-summary-installed",
    summary="when a later pass fails, the text of an earlier pass is installed as the summary",
    clauses=("AS-COMP-022",),
)
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


@break_of(
    name="compaction-keeps-unused-admission",
    summary="a pass admitted but cancelled before it was sent keeps its admission",
    clauses=("AS-COMP-032",),
    through=bending_jobs,
)
def _keeps_unused_admission(job: CompactionJob) -> None:
    """A pass admitted but never sent (the compaction was cancelled first) keeps its admission."""
    inner = job.admission

    class _NoRelease:
        async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
            return await inner.admit(request)

        async def release(self, request: AdmissionRequest) -> None:
            return None

    job.admission = _NoRelease()


@break_of(
    name="compaction-marker-failure-installs",
    summary="a failed marker append is ignored and the summary installed without a durable boundary",
    clauses=("AS-COMP-022", "AS-COMP-023"),
    through=bending_jobs,
)
def _marker_failure_installs(job: CompactionJob) -> None:
    """A failed marker append is ignored: the summary is installed without a durable boundary."""
    append = job.append_boundary

    async def ignore(kept_slots: int, text: str) -> None:
        try:
            await append(kept_slots, text)
        except asyncio.CancelledError:
            raise
        except Exception:
            return

    job.append_boundary = ignore


@break_of(
    name="kept-turn-count-replies-only",
    summary=(
        "keptTurnCount counts only kept exchanges with a nonempty reply, not legacy slots or empty finals"
    ),
    clauses=("AS-COMP-025",),
    through=bending_jobs,
)
def _kept_turn_count_replies_only(job: CompactionJob) -> None:
    """``keptTurnCount`` counts only kept exchanges with a nonempty reply (no legacy slot, no empty final)."""
    inner, exchanges = job.stamper, job.exchanges

    def replies(kept: int) -> int:
        return sum(1 for e in exchanges[len(exchanges) - kept :] if e.assistant)

    class _Counting:
        async def emit(self, event_type: Any, **payload: Any) -> Any:
            if event_type is SessionCompacted:
                payload["kept_turn_count"] = replies(payload["kept_turn_count"])
            return await inner.emit(event_type, **payload)

    job.stamper = _Counting()  # type: ignore[assignment]


@break_of(
    name="kept-turn-count-counts-the-pending-user",
    summary=(
        "a compaction before a turn counts the pending user as a kept turn (keptTurnCount and the marker)"
    ),
    clauses=("AS-COMP-025",),
    through=bending_jobs,
)
def _kept_turn_count_with_pending_user(job: CompactionJob) -> None:
    """Counts the pending user of a turn as a kept slot: ``keptTurnCount`` and the marker keep one more."""
    if job.pending_user is None:
        return
    inner, append = job.stamper, job.append_boundary

    class _Counting:
        async def emit(self, event_type: Any, **payload: Any) -> Any:
            if event_type is SessionCompacted:
                payload["kept_turn_count"] = payload["kept_turn_count"] + 1
            return await inner.emit(event_type, **payload)

    async def one_more(kept_slots: int, text: str) -> None:
        await append(kept_slots + 1, text)

    job.stamper = _Counting()  # type: ignore[assignment]
    job.append_boundary = one_more


@break_of(
    name="mixed-windows-taken-as-known",
    summary="manual compaction with mixed windows measures the known ones only: no disclosure, no soft bound",
    clauses=("AS-COMP-026", "AS-COMP-028"),
    through=bending_jobs,
)
def _mixed_windows_taken_as_known(job: CompactionJob) -> None:
    """Plan entries without a known window are left out whenever another entry's window is known."""
    known = tuple(
        entry
        for entry in job.plan
        if job.models.get(entry.model, UNKNOWN_MODEL).authoritative_window is not None
    )
    if known and len(known) < len(job.plan):
        job.plan = known
