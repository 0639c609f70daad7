"""The turn core: one assistant turn, streaming, with tool-call rounds and provider fallback.

The core runs inside the session's turn task.  It records what it learns as it goes in a
:class:`TurnProgress` owned by the session (engagement, usage, tool history), so that a turn
ended by abort or cancel is still accounted exactly.  It returns a :class:`TurnEnd`; it never
raises for a provider failure (those are classified and settle the turn), only for cancellation
of its task and for the persistence latch.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from relavium_reference._host.admission import UsageWriter, ask_admission, release_quietly
from relavium_reference._host.joint_commit import DeferredResolution
from relavium_reference._host.provider_stream import close_soon
from relavium_reference._host.round_resolution import PendingResolution
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.usage import publish_cost
from relavium_reference._model.events import (
    AgentApprovalRequested,
    AgentReasoning,
    AgentToken,
    AgentToolCall,
    AgentToolResult,
    ToolHistoryEntry,
)
from relavium_reference._model.invocation import (
    ALWAYS_ADMIT,
    UNKNOWN_MODEL,
    Admission,
    AdmissionRefused,
    Invocation,
    ModelInfo,
    open_stream,
)
from relavium_reference._model.llm import (
    LlmError,
    LlmMessage,
    LlmProvider,
    LlmReasoningPart,
    LlmRequest,
    LlmTextPart,
    LlmToolCallPart,
    LlmToolResultPart,
    StopChunk,
    StreamErrorChunk,
    Usage,
)
from relavium_reference._model.records import CostEntry
from relavium_reference._model.shapes import AgentSnapshot
from relavium_reference._model.tools import (
    UNKNOWN_TOOL,
    ApprovalRequest,
    ToolCallInfo,
    ToolOutput,
    ToolRegistry,
    TurnPolicy,
)
from relavium_reference._model.usage_writer import UsagePending, UsageResolved, UsageSettled
from relavium_reference._model.vocabulary import (
    ErrorCode,
    LlmErrorKind,
    ProviderId,
    SessionStopReason,
    StopReason,
    code_for_llm_error,
)
from relavium_reference._rules.budget import strip_reasoning
from relavium_reference._rules.overflow import RecoveryFacts, may_recover, overflow_message
from relavium_reference._rules.projection import (
    HistoryMessage,
    ProjectedRequest,
    project_request,
)
from relavium_reference._rules.stream_fold import CallDraft, Echo, ReasoningBlock, RoundFold, echo, fold_chunk
from relavium_reference._rules.turn_cap import (
    DEFAULT_MAX_TOOL_TURNS,
    AttemptNext,
    after_attempt,
    asks_for_tools,
)

__all__ = [
    "DEFAULT_MAX_TOOL_TURNS",
    "PlanEntry",
    "ProviderResolver",
    "Recovered",
    "Recovery",
    "RecoveryRefused",
    "TurnEnd",
    "TurnProgress",
    "TurnSetup",
    "build_plan",
    "error_message",
    "run_turn",
]

BACKOFF_BASE_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 8.0
OUTPUT_SUMMARY_LIMIT = 200

ProviderResolver = Callable[[ProviderId, str], LlmProvider]


_FIXED_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.VALIDATION: "the provider refused the request as invalid",
    ErrorCode.CONTENT_FILTER: "the provider's content filter stopped the response",
    ErrorCode.PROVIDER_AUTH: "the provider refused the credentials",
    ErrorCode.PROVIDER_RATE_LIMIT: "the provider is rate limiting requests",
    ErrorCode.PROVIDER_UNAVAILABLE: "the provider is unavailable",
    ErrorCode.TURN_LIMIT: "the turn limit was reached",
    ErrorCode.INTERNAL: "the turn failed inside the engine",
    ErrorCode.CONTEXT_OVERFLOW: "the request did not fit the model's context window",
    ErrorCode.BUDGET_EXCEEDED: "the cost cap refused the request",
}


def error_message(code: ErrorCode) -> str:
    """The fixed, secret-free message a turn terminal carries for ``code`` (never provider text)."""
    return _FIXED_MESSAGES.get(code, f"the turn failed ({code.value})")


@dataclass(frozen=True)
class PlanEntry:
    provider: ProviderId
    model: str
    max_attempts: int


def build_plan(agent: AgentSnapshot) -> tuple[PlanEntry, ...]:
    """Primary (one attempt) then each fallback entry with its attempt budget, in order."""
    entries = [PlanEntry(agent.provider, agent.model, 1)]
    entries += [PlanEntry(e.provider, e.model, e.max_attempts) for e in agent.fallback_chain]
    return tuple(entries)


@dataclass
class TurnProgress:
    """What a turn has done so far; survives abort and cancel of the turn task."""

    engaged: bool = False
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    tool_history: list[ToolHistoryEntry] = field(default_factory=list)
    resolved: bool = False
    attempts: int = 0
    round_messages: list[LlmMessage] = field(default_factory=list)
    rounds_provider: ProviderId | None = None
    """The provider whose attempt produced this turn's tool rounds (and their reasoning)."""
    latched: bool = False
    """A usage write failed after admission: the session latches at once (the session reads this)."""
    presend_suppressed: bool = False  # a pre-send compaction of this turn failed or was skipped
    recoveries: int = 0  # overflow recoveries this turn ran (at most one)
    cost_microcents: int = 0
    """The money the usage writer answered for this turn's attempts (the persisted cost row carries it)."""
    priced_calls: int = 0
    accounting: PendingResolution | None = None
    """A tool round's usage write still in flight while its tools run (the session finishes it on abort)."""
    deferred: DeferredResolution | None = None
    """The final attempt's resolution, held back for the turn's commit (``TurnSetup.defer_final``)."""
    committed: tuple[DeferredResolution, UsageSettled] | None = None
    """A joint commit's resolution: the session publishes its ``cost:updated`` once the turn is installed."""


def turn_costs(progress: TurnProgress) -> tuple[CostEntry, ...]:
    """The turn's cost row (none before the provider was engaged)."""
    if not progress.engaged or progress.model is None:
        return ()
    entry = CostEntry(
        model=progress.model,
        input_tokens=progress.usage.input_tokens,
        output_tokens=progress.usage.output_tokens,
        cost_microcents=progress.cost_microcents,
        call_count=progress.attempts,
        unpriced_calls=progress.attempts - progress.priced_calls,
    )
    return (entry,)


@dataclass(frozen=True)
class TurnEnd:
    stop_reason: SessionStopReason
    text: str | None = None
    error_code: ErrorCode | None = None
    error_message: str | None = None  # the engine's own wording when the code's fixed one is not enough

    @property
    def succeeded(self) -> bool:
        return self.error_code is None


@dataclass(frozen=True)
class TurnSetup:
    agent: AgentSnapshot
    node_id: str
    history: Sequence[HistoryMessage]
    pending_user: str
    advertised: tuple[str, ...]
    policy: TurnPolicy
    registry: ToolRegistry
    max_tool_turns: int
    plan: tuple[PlanEntry, ...]
    resolve_provider: ProviderResolver
    sleep: Callable[[float], Awaitable[None]]
    stamper: EventStamper
    latched: Callable[[], bool]
    admission: Admission = ALWAYS_ADMIT
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    max_tokens_estimate: int | None = None
    """The session's frozen copy, taken at construction (never the caller's live value)."""
    usage: UsageWriter | None = None
    next_request_id: Callable[[], str] = lambda: "request"
    latch: Callable[[], None] = lambda: None
    automatic_compaction: bool = False
    recover: Recovery | None = None
    may_recover: Callable[[RecoveryFacts], bool] = may_recover
    defer_final: bool = False
    """The writer resolves the final attempt in the turn's commit (see ``joint_commit``)."""


@dataclass(frozen=True)
class Recovered:
    """The recovery's compaction installed a new history: the turn retries with it."""

    history: Sequence[HistoryMessage]


@dataclass(frozen=True)
class RecoveryRefused:
    """The recovery's compaction was refused by the budget: the turn settles ``budget_exceeded``."""

    message: str


Recovery = Callable[[TurnSetup], Awaitable["Recovered | RecoveryRefused | None"]]
"""Runs the one compaction of an overflow recovery; ``None``: nothing to fold, failed or cancelled."""


@dataclass
class _Round:
    """One attempt as the turn sees it: what its stream said (the fold), and how it ended."""

    model: str
    provider: ProviderId
    text: str = ""
    reasoning: tuple[ReasoningBlock, ...] = ()
    calls: tuple[CallDraft, ...] = ()
    stop_reason: StopReason | None = None
    error: LlmError | None = None
    unaccounted: tuple[Usage, int] | None = None
    """A tool-use attempt whose usage is resolved alongside its round's dispatch: (usage, attempt)."""


class _Failed(Exception):
    """The chain cannot succeed; for an overflow, the invocation's own classified error and entry."""

    def __init__(
        self,
        code: ErrorCode,
        *,
        error: LlmError | None = None,
        entry: PlanEntry | None = None,
        streamed: bool = False,
        message: str | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.error = error
        self.entry = entry
        self.streamed = streamed


async def run_turn(setup: TurnSetup, progress: TurnProgress) -> TurnEnd:
    """Run one turn to its end. Cancellation of the calling task propagates."""
    round_messages = progress.round_messages
    rounds_done = 0
    while True:
        try:
            result = await _attempt_chain(setup, progress, round_messages)
        except _Failed as failed:
            if failed.code is not ErrorCode.CONTEXT_OVERFLOW:
                return TurnEnd(SessionStopReason.ERROR, error_code=failed.code, error_message=failed.message)
            recovery = await _recover(setup, progress, failed, tools_dispatched=rounds_done > 0)
            if isinstance(recovery, TurnSetup):
                setup = recovery  # one fresh attempt with the compacted history
                continue
            return recovery
        next_step = after_attempt(result.stop_reason, len(result.calls), rounds_done, setup.max_tool_turns)
        if next_step is AttemptNext.TURN_LIMIT:
            _account_round(setup, progress, result)
            await _finish_accounting(progress)
            return TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.TURN_LIMIT)
        if next_step is AttemptNext.DISPATCH:
            rounds_done += 1
            progress.rounds_provider = result.provider
            _account_round(setup, progress, result)  # the write runs while the round's tools do
            round_messages.extend(await _dispatch_round(setup, progress, result, rounds_done))
            await _finish_accounting(progress)  # the next call waits for it; its cost is published here
            continue
        progress.resolved = True
        if progress.latched:  # the reply is in, but its accounting failed: a fixed internal terminal
            return TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.INTERNAL)
        stop = result.stop_reason or StopReason.STOP
        return TurnEnd(SessionStopReason(stop.value), text=result.text)


async def _recover(
    setup: TurnSetup, progress: TurnProgress, failed: _Failed, *, tools_dispatched: bool
) -> TurnSetup | TurnEnd:
    """The one-shot recovery of an overflow, or the overflow's terminal.

    The facts come from the failing invocation alone (its classified error chunk, its entry) and the
    turn's own state; they live in this call and are never stored, persisted or emitted.
    """
    error, entry = failed.error, failed.entry
    genuine = error is not None and error.authoritative_overflow
    window = _window(setup, entry.model) if genuine and entry is not None else None
    facts = RecoveryFacts(
        genuine=genuine,
        window=window,
        tools_dispatched=tools_dispatched or bool(progress.round_messages),
        content_streamed=failed.streamed,
        automatic_allowed=setup.automatic_compaction,
        presend_suppressed=progress.presend_suppressed,
        recovered=progress.recoveries > 0,
    )
    if setup.recover is not None and setup.may_recover(facts):
        progress.recoveries += 1
        outcome = await setup.recover(setup)
        if isinstance(outcome, Recovered):
            return replace(setup, history=tuple(outcome.history))
        if isinstance(outcome, RecoveryRefused):
            return TurnEnd(
                SessionStopReason.ERROR, error_code=ErrorCode.BUDGET_EXCEEDED, error_message=outcome.message
            )
    model = entry.model if entry is not None else (progress.model or setup.agent.model)
    message = overflow_message(model, window, tools_ran=facts.tools_dispatched)
    return TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.CONTEXT_OVERFLOW, error_message=message)


def _window(setup: TurnSetup, model: str) -> int | None:
    """The model's authoritative window from the host's metadata (``None``: unknown or custom)."""
    return setup.models.get(model, UNKNOWN_MODEL).authoritative_window


def _project(setup: TurnSetup, round_messages: Sequence[LlmMessage]) -> ProjectedRequest:
    return project_request(
        system=setup.agent.system_prompt,
        history=setup.history,
        pending_user=setup.pending_user,
        rounds=round_messages,
        tools=setup.registry.definitions(setup.advertised) if setup.advertised else None,
    )


def _to_request(projected: ProjectedRequest, setup: TurnSetup, model: str) -> LlmRequest:
    return LlmRequest(
        model=model,
        system=projected.system,
        messages=projected.messages,
        tools=projected.tools,
        max_tokens=setup.agent.max_tokens,
    )


async def _attempt_chain(
    setup: TurnSetup, progress: TurnProgress, round_messages: list[LlmMessage]
) -> _Round:
    """Walk the fallback plan for one request; raise :class:`_Failed` when it cannot succeed."""
    last_code: ErrorCode | None = None
    for entry in setup.plan:
        for attempt in range(entry.max_attempts):
            if setup.latched():
                raise _Failed(ErrorCode.INTERNAL)  # no egress after a failed persist
            try:
                provider = setup.resolve_provider(entry.provider, entry.model)
            except Exception:
                last_code = last_code or ErrorCode.INTERNAL
                break  # a lookup refusal skips the entry; nothing was invoked
            if attempt:
                await setup.sleep(min(BACKOFF_BASE_SECONDS * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS))
            outcome = await _one_attempt(setup, progress, provider, entry, round_messages)
            if outcome.error is None:
                return outcome
            code = code_for_llm_error(outcome.error.kind)
            streamed = bool(outcome.text or outcome.calls)
            if code is ErrorCode.CONTEXT_OVERFLOW:  # never a failover: recovery or the terminal decide
                raise _Failed(code, error=outcome.error, entry=entry, streamed=streamed)
            if streamed:
                raise _Failed(code)  # no failover once content has streamed
            last_code = code
            if not outcome.error.retryable:
                raise _Failed(code)
    raise _Failed(last_code or ErrorCode.INTERNAL)


async def _admit(
    setup: TurnSetup, progress: TurnProgress, entry: PlanEntry, round_messages: list[LlmMessage]
) -> LlmRequest:
    """Build the attempt's request, ask admission for it, then record the pending usage.

    The estimate is taken on the request as built; reasoning is stripped afterwards, and only for an
    attempt on another provider than the one that produced this turn's rounds.  A refusal raises
    ``budget_exceeded`` naming the cap; a failed pending write latches the session and sends nothing.
    """
    built = _to_request(projected := _project(setup, round_messages), setup, entry.model)
    crossing = progress.rounds_provider is not None and progress.rounds_provider is not entry.provider
    sent = strip_reasoning(built) if crossing else built
    request_id = setup.next_request_id()
    asked, decision = await ask_admission(
        setup.admission,
        request_id=request_id,
        purpose="turn",
        attempt=progress.attempts + 1,
        round_number=len(round_messages) // 2,
        provider=entry.provider,
        built=projected,
        sent=sent,
        max_tokens_estimate=setup.max_tokens_estimate,
    )
    if isinstance(decision, AdmissionRefused):
        raise _Failed(ErrorCode.BUDGET_EXCEEDED, message=decision.message)
    if setup.usage is not None:
        pending = UsagePending(
            attempt=progress.attempts + 1, purpose="turn", provider=entry.provider, model=entry.model
        )
        try:
            await setup.usage.pending(pending)
        except Exception:
            _latch(setup, progress)
            await release_quietly(setup.admission, asked)
            raise _Failed(ErrorCode.INTERNAL) from None
    return sent


def _latch(setup: TurnSetup, progress: TurnProgress) -> None:
    progress.latched = True
    setup.latch()


async def _resolve(
    setup: TurnSetup, progress: TurnProgress, model: str, attempt: int, usage: Usage | None
) -> UsageSettled | None:
    """Resolve the attempt's actual usage through the writer; a failed write latches at once."""
    if setup.usage is None:
        return None
    try:
        return await setup.usage.resolved(_resolution_record(model, attempt, usage))
    except Exception:
        _latch(setup, progress)
        return None


def _resolution_record(model: str, attempt: int, usage: Usage | None) -> UsageResolved:
    return UsageResolved(
        attempt=attempt,
        purpose="turn",
        model=model,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        reported=usage is not None,
    )


async def _one_attempt(
    setup: TurnSetup,
    progress: TurnProgress,
    provider: LlmProvider,
    entry: PlanEntry,
    round_messages: list[LlmMessage],
) -> _Round:
    """One provider attempt: admission, the stream folded chunk by chunk (``_rules/stream_fold``) with
    each chunk's echo published as it comes, then the attempt's end accounted."""
    model = entry.model
    request = await _admit(setup, progress, entry, round_messages)
    window = _window(setup, model)
    progress.engaged = True  # the invocation itself is the evidence of engagement
    progress.model = model
    progress.attempts += 1
    attempt_number = progress.attempts
    folded = RoundFold()
    # Only the provider's own failures are classified; an observer (the event sink) that raises while a
    # chunk is handled is not a provider failure and propagates unchanged (its provenance is the host).
    try:
        chunks = open_stream(provider, request, Invocation("turn", window)).__aiter__()
    except Exception:
        return _round(entry, folded, error=_provider_raised())
    try:
        while True:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            except Exception:  # a provider that raises instead of yielding an error chunk
                return _round(entry, folded, error=_provider_raised())
            folded = fold_chunk(folded, chunk)
            said = echo(chunk)
            if said is not None:
                await _publish_echo(setup, said, model)
            if folded.end is not None:
                return await _attempt_ended(setup, progress, entry, folded, attempt_number)
        return _round(
            entry, folded, error=LlmError(kind=LlmErrorKind.TRANSPORT, message="stream ended without a stop")
        )
    finally:
        close_soon(chunks)  # started now, not at collection; the attempt does not wait for it


def _provider_raised() -> LlmError:
    return LlmError(kind=LlmErrorKind.UNKNOWN, message="provider raised")


def _round(entry: PlanEntry, folded: RoundFold, *, error: LlmError | None = None) -> _Round:
    return _Round(
        model=entry.model,
        provider=entry.provider,
        text=folded.text,
        reasoning=folded.reasoning,
        calls=folded.calls,
        error=error,
    )


async def _publish_echo(setup: TurnSetup, said: Echo, model: str) -> None:
    if said.kind == "token":
        await setup.stamper.emit(AgentToken, node_id=setup.node_id, token=said.text, model=model)
    else:
        await setup.stamper.emit(AgentReasoning, node_id=setup.node_id, text=said.text, model=model)


async def _attempt_ended(
    setup: TurnSetup, progress: TurnProgress, entry: PlanEntry, folded: RoundFold, attempt_number: int
) -> _Round:
    """Account the attempt its end chunk closed: a stop (final reply or tool round) or an error chunk."""
    model, end = entry.model, folded.end
    if isinstance(end, StreamErrorChunk):
        if end.usage is not None:  # a failure with actual usage (a native context stop) keeps it
            progress.usage = progress.usage + end.usage
        await _account(setup, progress, model, end.usage, attempt_number)
        return _round(entry, folded, error=end.error)
    assert isinstance(end, StopChunk)
    result = _round(entry, folded)
    progress.usage = progress.usage + end.usage
    final = not asks_for_tools(end.stop_reason, len(folded.calls))
    if final:
        progress.resolved = True  # the final reply is in: a later abort is a no-op
    if final and setup.defer_final and setup.usage is not None:  # resolved in the turn's commit
        record = _resolution_record(model, attempt_number, end.usage)
        progress.deferred = DeferredResolution(record, end.usage, attempt_number)
    elif final or setup.usage is None:
        await _account(setup, progress, model, end.usage, attempt_number)
    else:  # a tool round: its usage write overlaps the round's dispatch (run_turn starts it)
        result.unaccounted = (end.usage, attempt_number)
    result.stop_reason = end.stop_reason
    return result


async def _account(
    setup: TurnSetup, progress: TurnProgress, model: str, usage: Usage | None, attempt_number: int
) -> None:
    """Resolve the attempt through the writer, then publish its cost; only once acknowledged."""
    settled = await _settle_usage(setup, progress, model, usage, attempt_number)
    if usage is None or (setup.usage is not None and settled is None):
        return
    await _publish(setup, model, usage, attempt_number, settled)


async def _settle_usage(
    setup: TurnSetup, progress: TurnProgress, model: str, usage: Usage | None, attempt_number: int
) -> UsageSettled | None:
    settled = await _resolve(setup, progress, model, attempt_number, usage)
    if settled is not None:
        progress.cost_microcents += settled.cost_microcents
        progress.priced_calls += int(settled.priced)
    return settled


async def _publish(
    setup: TurnSetup, model: str, usage: Usage, attempt_number: int, settled: UsageSettled | None
) -> None:
    await publish_cost(
        setup.stamper,
        node_id=setup.node_id,
        model=model,
        usage=usage,
        settled=settled,
        attempt_number=attempt_number,
    )


def _account_round(setup: TurnSetup, progress: TurnProgress, result: _Round) -> None:
    """Start the tool-use attempt's usage write in its own task (see ``round_resolution``)."""
    if result.unaccounted is None:
        return  # no writer: accounted when the attempt stopped
    usage, attempt_number = result.unaccounted
    result.unaccounted = None
    model = result.model

    async def publish(settled: UsageSettled) -> None:
        await _publish(setup, model, usage, attempt_number, settled)

    progress.accounting = PendingResolution(
        _settle_usage(setup, progress, model, usage, attempt_number), publish
    )


async def _finish_accounting(progress: TurnProgress) -> None:
    pending = progress.accounting
    if pending is not None:
        await pending.finish()
        progress.accounting = None


async def _dispatch_round(
    setup: TurnSetup, progress: TurnProgress, result: _Round, round_number: int
) -> list[LlmMessage]:
    """Run each tool call of a round in order; return the round's assistant and tool messages."""
    assistant_parts: list[Any] = [
        LlmReasoningPart(text=r.text, signature=r.signature) for r in result.reasoning
    ]
    if result.text:
        assistant_parts.append(LlmTextPart(text=result.text))
    result_parts: list[Any] = []
    for call in result.calls:
        assistant_parts.append(LlmToolCallPart(id=call.id, name=call.name, args=copy.deepcopy(call.args)))
        output = await _dispatch_one(setup, call, result.model, round_number)
        structural_name = call.name if setup.registry.get(call.name) is not None else UNKNOWN_TOOL
        progress.tool_history.append(
            ToolHistoryEntry(tool_call_id=call.id, name=structural_name, is_error=output.is_error)
        )
        result_parts.append(
            LlmToolResultPart(tool_call_id=call.id, result=output.text, is_error=output.is_error)
        )
    return [
        LlmMessage(role="assistant", content=assistant_parts),
        LlmMessage(role="tool", content=result_parts),
    ]


async def _dispatch_one(setup: TurnSetup, call: CallDraft, model: str, round_number: int) -> ToolOutput:
    await setup.stamper.emit(
        AgentToolCall, node_id=setup.node_id, model=model, tool_id=call.name, tool_input=call.args
    )
    output = await _decide_and_run(setup, call, round_number)
    await setup.stamper.emit(
        AgentToolResult,
        node_id=setup.node_id,
        tool_id=call.name,
        success=not output.is_error,
        output_summary=output.text[:OUTPUT_SUMMARY_LIMIT],
    )
    return output


async def _decide_and_run(setup: TurnSetup, call: CallDraft, round_number: int) -> ToolOutput:
    tool = setup.registry.get(call.name)
    if tool is None or call.name not in setup.advertised:
        return ToolOutput(f"tool {call.name!r} is not available in this session", is_error=True)
    if not call.args_valid:
        return ToolOutput("the tool arguments were not valid JSON", is_error=True)
    if tool.action is not None:
        preview = tool.preview(call.args)
        await setup.stamper.emit(
            AgentApprovalRequested,
            node_id=setup.node_id,
            tool_id=call.name,
            action=tool.action,
            preview=preview,
        )
        request = ApprovalRequest(tool_id=call.name, action=tool.action, preview=preview, call_id=call.id)
        if not await setup.policy.approves(request):
            return ToolOutput(f"the user did not approve {call.name!r}", is_error=True)
    if setup.latched():  # checked immediately before the actual dispatch
        return ToolOutput("the session stopped after a failed save", is_error=True)
    try:
        return await tool.run(call.args, ToolCallInfo(call.id, call.name, round_number))
    except Exception:
        return ToolOutput(f"tool {call.name!r} failed", is_error=True)
