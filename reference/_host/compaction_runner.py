"""The compaction runner: one compaction, from provider resolution to the installed summary.

:func:`run_compaction` sequences the effects of one compaction that the pure planning
(:mod:`relavium_reference._rules.compaction_plan`) decided: resolve the plan's providers (a cancel then
stops it before any credential or provider call), plan the passes under the input limit, and for each
pass admit it, open the moment after the first admission (``session:compacting``), have the host
acknowledge the unknown-window disclosure before the first pass egresses (KD-COMP-4), and stream the
summary.  Only when every pass returned nonempty text is the prospective history estimated (by the
provider's own estimator when it has one; a failing estimator falls back to KD-COMP-2), cancellation
rechecked, one boundary marker appended through the host, the new summary and history installed through
``job.install`` and one ``session:compacted`` emitted.  Nothing is installed on any other exit.

Cancellation arrives as the cancellation of the task the runner runs in (the session cancels it); the
runner gives back an admission that never egressed and lets the cancellation propagate.  What the passes
spent is recorded through ``job.record_cost`` on every exit.  With the host's usage writer (KD-USE-1) each
pass attempt goes through it as a turn attempt does: a pending record acknowledged before egress, the
actual usage resolved after, ``cost:updated`` publishing the writer's money only once it answered, and the
recorded spend carrying that money, on a failed or refused compaction too (AS-COMP-024).  A failed usage
write latches the session and fails the pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from relavium_reference._host.admission import UsageWriter, release_quietly
from relavium_reference._host.provider_stream import close_soon
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.turn import PlanEntry, ProviderResolver
from relavium_reference._host.usage import publish_cost
from relavium_reference._model.errors import ObserverError
from relavium_reference._model.events import (
    CompactionReason,
    SessionCompacted,
    SessionCompacting,
    SessionCompactionFailed,
    SessionCompactionRefused,
    TokensUsed,
)
from relavium_reference._model.history_results import (
    Compacted,
    CompactionBudgetRefused,
    CompactionFailed,
    CompactionResult,
    CompactionStart,
    CompactionStartHook,
    NothingToCompact,
)
from relavium_reference._model.invocation import (
    UNKNOWN_MODEL,
    Admission,
    AdmissionRefused,
    AdmissionRequest,
    EstimatingProvider,
    Invocation,
    ModelInfo,
    check_admission_answer,
    open_stream,
)
from relavium_reference._model.llm import (
    LlmProvider,
    LlmRequest,
    StopChunk,
    StreamErrorChunk,
    TextDelta,
    Usage,
)
from relavium_reference._model.records import CostEntry
from relavium_reference._model.shapes import MemoryPolicySpec
from relavium_reference._model.usage_writer import UsagePending, UsageResolved, UsageSettled
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.compaction_measure import SUMMARY_MAX_TOKENS, EntryWindow
from relavium_reference._rules.compaction_plan import (
    MAX_PASSES,
    CompactionPlan,
    Unplanned,
    decide_compaction,
    nothing_to_fold,
    request_tokens,
)
from relavium_reference._rules.projection import (
    Exchange,
    estimate_tokens,
    project_history,
    project_request,
)

__all__ = [
    "FAILED_MESSAGES",
    "CompactionJob",
    "CompactionReport",
    "run_compaction",
]

FAILED_MESSAGES = {
    "no_provider": "no provider of the plan can run the summary",
    "no_room": "there is no room in a summary pass for the conversation to fold",
    "no_window": "the model's context window is unknown, so automatic compaction cannot run",
    "acknowledgement": "the host did not acknowledge the unknown-window compaction",
    "pass_failed": "a summary pass failed",
    "empty": "a summary pass returned no text",
    "too_large": "a summary came back larger than a pass can carry",
    "marker": "the host could not record the compaction boundary",
    "observer": "an observer of the compaction failed",
}
"""The fixed messages of a ``failed`` compaction (no user or provider text)."""


@dataclass(frozen=True)
class CompactionReport:
    """What one compaction did: its typed result, and whether a summary and history were installed."""

    result: CompactionResult
    installed: bool


@dataclass
class CompactionJob:
    """Everything one compaction needs from its session (read at its start)."""

    reason: CompactionReason
    manual: bool
    exchanges: tuple[Exchange, ...]
    summary: str | None
    pending_user: str | None
    system: str
    memory: MemoryPolicySpec
    plan: tuple[PlanEntry, ...]
    resolve_provider: ProviderResolver
    models: Mapping[str, ModelInfo]
    admission: Admission
    stamper: EventStamper
    node_id: str
    on_compaction_start: CompactionStartHook | None
    append_boundary: Callable[[int, str], Awaitable[None]]
    """Append the marker keeping the newest ``kept_slots`` slots, with the summary text."""
    install: Callable[[int, str], None]
    """Install: drop the oldest ``folded_slots`` slots and set the running summary."""
    cancelled: Callable[[], bool]
    record_cost: Callable[[CostEntry], Awaitable[None]]
    next_request_id: Callable[[], str] = lambda: "request"
    """The session's request identities (KD-FIN-2): a pass attempt is a request like a turn's."""
    max_tokens_estimate: int | None = None
    """The session's frozen ``maxTokensEstimate`` fallback, handed to admission as a turn hands it."""
    max_passes: int = MAX_PASSES
    prepare_provider: Callable[[ProviderId, str], Awaitable[None]] | None = None
    """The host's asynchronous part of resolving each entry's provider (KD-COMP-10)."""
    usage: UsageWriter | None = None
    """The host's usage writer (``None``: the engine's own unpriced counters)."""
    latch: Callable[[], None] = lambda: None
    spent: dict[str, Usage] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    money: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per model: the microcents the writer answered for this job's attempts, and how many it priced."""
    attempts: int = 0
    acknowledged: bool = False
    opened: bool = False
    installed: bool = False


class _PassFailed(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _Refused(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


@dataclass
class _Resolved:
    entry: PlanEntry
    provider: LlmProvider
    window: int | None


async def _resolve(job: CompactionJob) -> tuple[list[_Resolved], list[EntryWindow]]:
    """Resolve each plan entry's provider (a cancel while the host prepares one stops it there)."""
    resolved: list[_Resolved] = []
    windows: list[EntryWindow] = []
    for entry in job.plan:
        info = job.models.get(entry.model, UNKNOWN_MODEL)
        try:
            if job.prepare_provider is not None:
                await job.prepare_provider(entry.provider, entry.model)
            provider = job.resolve_provider(entry.provider, entry.model)
        except asyncio.CancelledError:
            raise
        except Exception:
            windows.append(EntryWindow(entry.model, info, attemptable=False))
            continue
        windows.append(EntryWindow(entry.model, info))
        resolved.append(_Resolved(entry, provider, info.authoritative_window))
    return resolved, windows


async def run_compaction(job: CompactionJob) -> CompactionReport:
    """Run one compaction (see the module docstring); cancellation of the calling task propagates.

    An observer that fails while the moment is announced (``session:compacting``, ``session:compacted``,
    ``session:compaction_failed``) keeps its origin: a readable, classified failure
    (:class:`ObserverError`) ends the compaction with the fixed ``failed`` result; any other exception
    propagates as it came (the operation rejects with it).
    """
    try:
        return await _run(job)
    except ObserverError:
        return CompactionReport(
            CompactionFailed(message=FAILED_MESSAGES["observer"]), installed=job.installed
        )


async def _run(job: CompactionJob) -> CompactionReport:
    if nothing_to_fold(job.exchanges):
        return CompactionReport(NothingToCompact(), installed=False)
    resolved, windows = await _resolve(job)
    await asyncio.sleep(0)  # the provider resolution is an await point of the operation
    if job.cancelled():
        raise asyncio.CancelledError  # before any credential or provider call
    plan = decide_compaction(
        job.exchanges, job.summary, job.pending_user, windows, manual=job.manual, max_passes=job.max_passes
    )
    if isinstance(plan, Unplanned):
        return CompactionReport(CompactionFailed(message=FAILED_MESSAGES[plan.reason]), installed=False)
    opened = False
    try:
        summary = job.summary
        for number in range(len(plan.passes)):
            request = plan.pass_request(number, summary)
            if request is None:
                raise _PassFailed("too_large")
            soft = plan.needs_acknowledgement
            summary, opened = await _one_pass(job, resolved, request, number, opened, soft)
        assert summary is not None
        return await _install(job, plan, summary, resolved[0].provider, resolved[0].entry.model)
    except _PassFailed as failed:
        return await _fail(job, job.opened, FAILED_MESSAGES[failed.key])
    except _Refused as refused:
        opened = job.opened
        if opened:
            await job.stamper.emit(
                SessionCompactionFailed, reason=job.reason, outcome="budget_refused", message=refused.message
            )
        elif not job.manual and job.pending_user is None:
            # after-turn (no active turn to settle): the standalone side notice; a pre-send or recovery
            # refusal is told by the turn's budget_exceeded terminal instead
            await job.stamper.emit(SessionCompactionRefused, reason=job.reason, message=refused.message)
        result = CompactionBudgetRefused(message=refused.message, moment_opened=opened)
        return CompactionReport(result, installed=False)
    finally:
        await _record_spend(job)


async def _fail(job: CompactionJob, opened: bool, message: str) -> CompactionReport:
    if opened:
        await job.stamper.emit(SessionCompactionFailed, reason=job.reason, outcome="failed", message=message)
    return CompactionReport(CompactionFailed(message=message), installed=False)


async def _one_pass(
    job: CompactionJob,
    resolved: Sequence[_Resolved],
    template: LlmRequest,
    number: int,
    opened: bool,
    soft: bool,
) -> tuple[str, bool]:
    """One pass over the plan's entries (failover before content); its nonempty text."""
    for candidate in resolved:
        for attempt in range(candidate.entry.max_attempts):
            request = template.model_copy(update={"model": candidate.entry.model}, deep=True)
            ask = AdmissionRequest(
                purpose="summary",
                provider=candidate.entry.provider.value,
                model=candidate.entry.model,
                input_tokens=request_tokens(request),
                output_reservation=SUMMARY_MAX_TOKENS,
                attempt=attempt + 1,
                request_id=job.next_request_id(),
                request=request,
                max_tokens_estimate=job.max_tokens_estimate,
            )
            try:
                decision = check_admission_answer(await job.admission.admit(ask))
            except asyncio.CancelledError:  # cancelled while the answer was pending: give it back
                await release_quietly(job.admission, ask)
                raise
            if isinstance(decision, AdmissionRefused):
                raise _Refused(decision.message)
            try:
                if not job.opened:
                    job.opened = opened = True
                    await job.stamper.emit(SessionCompacting, reason=job.reason)
                if soft and not job.acknowledged:
                    await _acknowledge(job)
                    job.acknowledged = True
            except _PassFailed:
                await job.admission.release(ask)
                raise _PassFailed("acknowledgement") from None
            except BaseException:  # a cancel, or an observer failing on the moment: never sent
                await job.admission.release(ask)
                raise
            await _pending(job, candidate, ask)
            text, retry = await _stream(job, candidate, request, number)
            if text is not None:
                if not text:
                    raise _PassFailed("empty")
                return text, opened
            if not retry:
                raise _PassFailed("pass_failed")
    raise _PassFailed("pass_failed")


async def _pending(job: CompactionJob, candidate: _Resolved, ask: AdmissionRequest) -> None:
    """The writer acknowledges the pass attempt's pending record before it egresses."""
    if job.usage is None:
        return
    record = UsagePending(
        attempt=job.attempts + 1,
        purpose="summary",
        provider=candidate.entry.provider,
        model=candidate.entry.model,
    )
    try:
        await job.usage.pending(record)
    except asyncio.CancelledError:
        await job.admission.release(ask)
        raise
    except Exception:
        job.latch()
        await job.admission.release(ask)
        raise _PassFailed("pass_failed") from None


async def _settle(job: CompactionJob, model: str, usage: Usage | None) -> UsageSettled | None:
    """Resolve the attempt through the writer (``None``: no writer, or its write failed and latched)."""
    if job.usage is None:
        return None
    record = UsageResolved(
        attempt=job.attempts,
        purpose="summary",
        model=model,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        reported=usage is not None,
    )
    try:
        settled = await job.usage.resolved(record)
    except Exception:
        job.latch()
        return None
    cost, priced = job.money.get(model, (0, 0))
    job.money[model] = (cost + settled.cost_microcents, priced + int(settled.priced))
    return settled


async def _account(job: CompactionJob, model: str, usage: Usage | None, number: int) -> bool:
    """Resolve, then publish the attempt's cost; ``False`` when the writer failed (the pass fails)."""
    if usage is not None:
        job.spent[model] = job.spent[model] + usage
    settled = await _settle(job, model, usage)
    if job.usage is not None and settled is None:
        return False
    if usage is not None:
        await publish_cost(
            job.stamper,
            node_id=job.node_id,
            model=model,
            usage=usage,
            settled=settled,
            attempt_number=number + 1,
        )
    return True


async def _acknowledge(job: CompactionJob) -> None:
    hook = job.on_compaction_start
    if hook is None:
        raise _PassFailed("acknowledgement")
    try:
        await hook(CompactionStart())
    except asyncio.CancelledError:
        raise
    except Exception:
        raise _PassFailed("acknowledgement") from None
    if job.cancelled():  # a late acknowledgement grants nothing
        raise asyncio.CancelledError


async def _stream(
    job: CompactionJob, candidate: _Resolved, request: LlmRequest, number: int
) -> tuple[str | None, bool]:
    """Stream one pass attempt: ``(text, _)`` on a stop, ``(None, retryable)`` on a failure."""
    model = candidate.entry.model
    job.calls[model] = job.calls.get(model, 0) + 1
    job.attempts += 1
    job.spent.setdefault(model, Usage())
    text = ""
    try:
        chunks = open_stream(candidate.provider, request, Invocation("summary", candidate.window)).__aiter__()
    except Exception:
        return None, False
    try:
        while True:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return None, not text
            except Exception:
                return None, False
            if isinstance(chunk, TextDelta):
                text += chunk.text
            elif isinstance(chunk, StopChunk):
                if not await _account(job, model, chunk.usage, number):
                    return None, False
                return text, False
            elif isinstance(chunk, StreamErrorChunk):
                accounted = await _account(job, model, chunk.usage, number)
                return None, accounted and chunk.error.retryable and not text
    finally:
        close_soon(chunks)  # started now, not at collection; the pass does not wait for it


def _projection_tokens(job: CompactionJob, exchanges: Sequence[Exchange], summary: str | None) -> int:
    history = project_history(exchanges, job.memory, summary)
    return estimate_tokens(project_request(system=job.system, history=history, pending_user=job.pending_user))


async def _estimate(job: CompactionJob, provider: LlmProvider, request: LlmRequest) -> int | None:
    """The provider's own estimate of the prospective request; ``None`` when it has none or it fails."""
    if not isinstance(provider, EstimatingProvider):
        return None
    try:
        return await provider.estimate_tokens(request)
    except asyncio.CancelledError:
        raise
    except Exception:
        return None  # best effort: a failing estimator does not fail the compaction


async def _install(
    job: CompactionJob, plan: CompactionPlan, summary: str, provider: LlmProvider, model: str
) -> CompactionReport:
    kept = job.exchanges[plan.folded_slots :]
    before = _projection_tokens(job, job.exchanges, job.summary)
    after = _projection_tokens(job, kept, summary)
    history = project_history(kept, job.memory, summary)
    projected = project_request(system=job.system, history=history, pending_user=job.pending_user)
    prospective = LlmRequest(model=model, system=projected.system, messages=projected.messages)
    estimated = await _estimate(job, provider, prospective)
    if job.cancelled():
        raise asyncio.CancelledError  # cancelled during the estimate: the old history stays
    try:
        await job.append_boundary(plan.kept_slots, summary)
    except asyncio.CancelledError:
        raise
    except Exception:
        return await _fail(job, True, FAILED_MESSAGES["marker"])
    if job.cancelled():
        raise asyncio.CancelledError
    job.install(plan.folded_slots, summary)
    job.installed = True
    spent = sum((usage for usage in job.spent.values()), Usage())
    models = list(job.spent)
    await job.stamper.emit(
        SessionCompacted,
        reason=job.reason,
        summary=summary,
        kept_message_count=sum(exchange.message_units for exchange in kept),
        tokens_before=before,
        tokens_after=estimated if estimated is not None else after,
        tokens_used=TokensUsed(
            input=spent.input_tokens, output=spent.output_tokens, model=models[-1] if models else None
        ),
        kept_turn_count=plan.kept_slots,
    )
    return CompactionReport(Compacted(kept_turn_count=plan.kept_slots), installed=True)


async def _record_spend(job: CompactionJob) -> None:
    """Summariser spend is accounted on every exit (it never uses a turn slot)."""
    spent, job.spent = job.spent, {}
    for model, usage in spent.items():
        calls = job.calls.get(model, 0)
        if not calls:
            continue
        cost, priced = job.money.get(model, (0, 0))
        entry = CostEntry(
            model=model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_microcents=cost,
            call_count=calls,
            unpriced_calls=calls - priced,
        )
        try:
            await job.record_cost(entry)
        except Exception:
            continue
