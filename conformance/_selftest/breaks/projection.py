"""Breaks of request projection and the history operations (clauses AS-PROJ-*): what reaches the
provider's request, trimming and resume spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import RefusalCodesRenamed, state_with
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession, SessionStopReason, TurnResult
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.history_results import (
    CompactionResult,
    MemoryPolicyRefusal,
    NothingToTrim,
    TrimResult,
)
from relavium_reference._model.llm import LlmMessage, LlmRequest
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage
from relavium_reference._model.shapes import MemorySummary
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._rules.lifecycle import SessionState
from relavium_reference._rules.projection import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    HistoryMessage,
    project_history,
    select_exchanges,
    summary_messages,
    working_messages,
)
from relavium_reference._rules.resume import (
    ResumeMessage,
    SessionResumeState,
    TurnSpan,
    reconstruct_session_state,
)

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="empty-final-forgotten",
    summary="an empty-final exchange is left out of the working transcript",
    clauses=("AS-PROJ-017",),
)
class _EmptyFinalForgotten(AgentSession):
    """A turn whose final text is empty is left out of the working transcript."""

    async def send_message(self, text: str) -> Any:
        result = await super().send_message(text)
        if result.status == "completed" and not result.text and self._exchanges:
            self._exchanges.pop()
        return result


@break_of(
    name="compacted-summary-in-system",
    summary="the running summary is placed in the system prompt instead of a user-role message",
    clauses=("AS-PROJ-005",),
)
class _SummaryInTheSystemPrompt(AgentSession):
    """Places the running summary in the system prompt (the older release's placement)."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        if not self._preamble:
            return setup
        wrapper = summary_messages(self._preamble)[0].text
        agent = setup.agent.model_copy(update={"system_prompt": f"{setup.agent.system_prompt}\n\n{wrapper}"})
        return replace(setup, agent=agent, history=project_history(self._exchanges, self._memory, None))


@break_of(
    name="summary-in-system-prompt",
    summary="the running summary is placed in the system prompt instead of a first user-role message",
    clauses=("AS-PROJ-005",),
)
class _SummaryInSystemPrompt(AgentSession):
    """The older release's placement: the running summary appended to the system prompt."""

    def _history(self) -> list[HistoryMessage]:
        return working_messages(select_exchanges(self._exchanges, self._memory))

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        if not self._preamble:
            return setup
        system = f"{self._agent.system_prompt}\n\n{SUMMARY_OPEN}\n{self._preamble}\n{SUMMARY_CLOSE}"
        return replace(setup, agent=self._agent.model_copy(update={"system_prompt": system}))


class _LivePolicy(BaseModel):
    """A policy value that anyone holding it can change (what the getter must never hand out)."""

    type: str
    window_size: int | None = None


@break_of(
    name="memory-policy-getter-is-live",
    summary="the memoryPolicy getter hands out the session's own mutable policy",
    clauses=("AS-PROJ-008", "AS-PROJ-007"),
)
class _HandsOutTheLivePolicy(AgentSession):
    """The getter returns the session's own, mutable policy instead of a frozen copy."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        live = _LivePolicy(type=self._memory.type, window_size=getattr(self._memory, "window_size", None))
        self._memory = live  # type: ignore[assignment]

    @property
    def memory_policy(self) -> Any:
        return self._memory


@break_of(
    name="estimate-on-another-projection",
    summary="the context estimate is computed on the whole history, not the projection the request uses",
    clauses=("AS-PROJ-002",),
)
class _EstimatesAnotherProjection(AgentSession):
    """Estimates the whole retained history, whatever the policy sends."""

    def context_estimate(self, pending_user: str) -> int:
        policy = self._memory
        self._memory = MemorySummary(type="summary")
        try:
            return super().context_estimate(pending_user)
        finally:
            self._memory = policy


@break_of(
    name="trim-policy-before-lifecycle",
    summary="trimHistory answers the policy (or a result) where the lifecycle must refuse first",
    clauses=("AS-PROJ-013", "AS-LIFE-041"),
)
class _PolicyBeforeLifecycle(AgentSession):
    """Answers trimHistory without consulting the lifecycle first."""

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        refusal = self.trim_refusal
        if refusal is not None:
            return refusal
        if self._state is not SessionState.IDLE:
            return NothingToTrim(message_count=0)
        return await super().trim_history(max_messages, reason)


@break_of(
    name="ignores-the-memory-policy",
    summary="every request carries the whole history, whatever the agent's memory",
    clauses=("AS-PROJ-001",),
)
class _IgnoresTheMemoryPolicy(AgentSession):
    """Every request carries the whole retained history, whatever the agent's memory says."""

    def _history(self) -> list[HistoryMessage]:
        return working_messages(self._exchanges)


@break_of(
    name="window-permits-trim",
    summary="the window policy permits compaction and trim",
    clauses=("AS-PROJ-011",),
)
class _WindowPermitsTrim(AgentSession):
    """Maps the window policy to permission: it neither refuses compaction nor trim."""

    @property
    def compaction_refusal(self) -> MemoryPolicyRefusal | None:
        return None if self._memory.type == "window" else super().compaction_refusal

    @property
    def trim_refusal(self) -> MemoryPolicyRefusal | None:
        return None if self._memory.type == "window" else super().trim_refusal

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        if self._memory.type != "window":
            return await super().trim_history(max_messages, reason)
        policy = self._memory
        self._memory = MemorySummary(type="summary")
        try:
            return await super().trim_history(max_messages, reason)
        finally:
            self._memory = policy


@break_of(
    name="policy-only-when-fresh",
    summary="a resumed or reseated instance sends the whole history whatever the memory policy",
    clauses=("AS-PROJ-003",),
)
class _PolicyOnlyWhenFresh(AgentSession):
    """A resumed or reseated instance forgets the agent's memory and sends everything."""

    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._memory = MemorySummary(type="summary")
        return session


@break_of(
    name="window-selects-messages",
    summary=("a window selects the last messages of the history instead of whole exchanges before folding"),
    clauses=("AS-PROJ-004",),
)
class _SelectsMessagesNotExchanges(AgentSession):
    """A window of N keeps the last 2N messages, so a selection can start inside an exchange."""

    def _history(self) -> list[HistoryMessage]:
        size = getattr(self._memory, "window_size", None)
        everything = working_messages(self._exchanges)
        if self._memory.type != "window" or not size:
            return list(super()._history())
        return everything[-2 * size :]


@break_of(
    name="automatic-compaction-always-allowed",
    summary="automaticCompactionAllowed is true whatever the policy",
    clauses=("AS-PROJ-009",),
)
class _AutomaticAlwaysAllowed(AgentSession):
    """Reports automatic compaction as allowed whatever the policy."""

    @property
    def automatic_compaction_allowed(self) -> bool:
        return True


@break_of(
    name="getter-refusal-differs",
    summary="compactionRefusal and trimRefusal differ from what compact and trimHistory return",
    clauses=("AS-PROJ-010",),
)
class _GetterRefusalDiffers(AgentSession):
    """The getters' refusal carries another message than the one compact and trimHistory return."""

    @property
    def compaction_refusal(self) -> MemoryPolicyRefusal | None:
        refusal = super().compaction_refusal
        return None if refusal is None else refusal.model_copy(update={"message": "not allowed"})

    @property
    def trim_refusal(self) -> MemoryPolicyRefusal | None:
        refusal = super().trim_refusal
        return None if refusal is None else refusal.model_copy(update={"message": "not allowed"})


@break_of(
    name="refusal-quotes-the-user",
    summary="the policy refusal's message quotes the conversation",
    clauses=("AS-PROJ-012",),
)
class _RefusalQuotesTheUser(AgentSession):
    """The refusal message quotes the conversation (user data in an explanation meant to be fixed)."""

    def _quoted(self, refusal: MemoryPolicyRefusal | None) -> MemoryPolicyRefusal | None:
        if refusal is None or not self._exchanges:
            return refusal
        return refusal.model_copy(update={"message": f"{refusal.message}: {self._exchanges[-1].user}"})

    @property
    def compaction_refusal(self) -> MemoryPolicyRefusal | None:
        return self._quoted(super().compaction_refusal)

    @property
    def trim_refusal(self) -> MemoryPolicyRefusal | None:
        return self._quoted(super().trim_refusal)

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        result = await super().compact(reason)
        return self._quoted(result) if isinstance(result, MemoryPolicyRefusal) else result  # type: ignore[return-value]

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        result = await super().trim_history(max_messages, reason)
        return self._quoted(result) if isinstance(result, MemoryPolicyRefusal) else result  # type: ignore[return-value]


@break_of(
    name="trim-keeps-the-working-history",
    summary="after a trim the working transcript still holds the dropped turns (spans not rebased)",
    clauses=("AS-PROJ-024",),
)
class _TrimKeepsTheWorkingHistory(AgentSession):
    """Writes the marker and emits the event, but the working transcript keeps every slot (no rebase)."""

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        before = list(self._exchanges)
        result = await super().trim_history(max_messages, reason)
        self._exchanges = before
        return result


@break_of(
    name="request-list-shared",
    summary="each request extends, in place, the list handed to the provider with the previous one",
    clauses=("AS-PROJ-006",),
)
class _SharedRequestList(ReferenceImplementation):
    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        # per handle: what the engine put in its last request, and the list it handed over with it
        self._last_lists: dict[str, tuple[list[dict[str, Any]], list[LlmMessage]]] = {}

    def handed(self, handle: str, request: LlmRequest) -> LlmRequest:
        own = [message.to_wire() for message in request.messages]
        last = self._last_lists.get(handle)
        if last is not None and own[: len(last[0])] == last[0]:
            shared = last[1]
            shared.extend(request.messages[len(last[0]) :])  # the new tail, on the list handed over before
            request.messages = shared
        self._last_lists[handle] = (own, request.messages)
        return request


@break_of(
    name="resume-spans-overlap",
    summary="the last completed turn span is listed twice (spans overlap)",
    clauses=("AS-PROJ-016",),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _spans_overlap(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = state.completed_turn_spans
    if not spans:
        return state
    return state.model_copy(update={"completed_turn_spans": (*spans, spans[-1])})


@break_of(
    name="resume-span-bounds-wrong",
    summary="the last span's bounds are off by one",
    clauses=("AS-PROJ-017",),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _span_swallows_next(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = list(state.completed_turn_spans)
    if not spans:
        return state
    last = spans[-1]
    spans[-1] = TurnSpan(start=last.start, end=min(len(state.messages), last.end + 1))
    if spans[-1] == last and last.end - last.start == 2:
        spans[-1] = TurnSpan(start=last.start, end=last.start + 1)
    return state.model_copy(update={"completed_turn_spans": tuple(spans)})


@break_of(
    name="resume-keeps-tool-rows",
    summary="structural tool rows reach the resume state as text",
    clauses=("AS-PROJ-018", "AS-PROJ-015"),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _tool_rows_kept(state: SessionResumeState, rows: Sequence[SessionMessage]) -> SessionResumeState:
    tool_rows = [m for m in rows if m.role == "tool"]
    if not tool_rows:
        return state
    extra = tuple(ResumeMessage(role="assistant", text=f"[tool row {m.sequence_number}]") for m in tool_rows)
    return state.model_copy(update={"messages": (*state.messages, *extra)})


@break_of(
    name="resume-legacy-inside-a-span",
    summary="legacy bare-user text is folded into the first span",
    clauses=("AS-PROJ-019",),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _legacy_text_in_a_span(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = state.completed_turn_spans
    covered = {i for span in spans for i in range(span.start, span.end)}
    loose = [i for i in range(len(state.messages)) if i not in covered]
    if not loose or not spans:
        return state
    first = spans[0]
    widened = TurnSpan(start=min(first.start, loose[0]), end=first.end)
    return state.model_copy(update={"completed_turn_spans": (widened, *spans[1:])})


@break_of(
    name="reconstruct-folds-same-role",
    summary="the resume state folds adjacent messages of one role into one",
    clauses=("AS-PROJ-015",),
    replaces="reconstruct_session_state",
)
def _folded(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> SessionResumeState:
    """Adjacent messages of one role are folded into one (the spans are left as they were)."""
    state = reconstruct_session_state(record, messages)
    folded: list[ResumeMessage] = []
    for message in state.messages:
        if folded and folded[-1].role == message.role:
            folded[-1] = ResumeMessage(role=message.role, text=folded[-1].text + "\n\n" + message.text)
        else:
            folded.append(message)
    return state.model_copy(update={"messages": tuple(folded)})


@break_of(
    name="aborted-turn-committed",
    summary="an aborted turn is committed with an empty reply",
    clauses=("AS-PROJ-025",),
)
class _AbortedTurnCommitted(AgentSession):
    """An aborted turn is committed as a turn with an empty reply."""

    _text = ""

    async def send_message(self, text: str) -> TurnResult:
        self._text = text
        return await super().send_message(text)

    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        if self._interrupt == "abort":
            await self._commit(self._text, TurnEnd(SessionStopReason.STOP, text=""), progress)
        return await super()._settle_interrupted(progress)


@break_of(
    name="invalid-resume-state-called-busy",
    summary="an invalid resume state is refused with code busy",
    clauses=("AS-PROJ-022",),
)
class _InvalidResumeStateCalledBusy(RefusalCodesRenamed):
    renamed = {"invalid_resume_state": "busy"}
    methods = ("session.resume",)


@break_of(
    name="given-state-ignored",
    summary="resume ignores an invalid given state and reconstructs its own",
    clauses=("AS-PROJ-021",),
)
class _GivenStateIgnored(WireVariant):
    """resume ignores the state it is handed and reconstructs its own from the rows."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            params = {key: value for key, value in params.items() if key != "state"}
        return await super().operation(method, params)


# -- boundaries the hand-written corpus does not reach; generated cases of area ``history`` find them
# (``generated.BOUNDARY_BREAKS``, ``docs/proofs.md``) ---------------------------------------------------


@break_of(
    name="window-counts-replied-exchanges",
    summary="a window of N counts only exchanges with a reply: empty-final slots inside it ride along free",
    clauses=("AS-PROJ-001", "AS-PROJ-011"),
)
class _WindowCountsRepliedExchanges(AgentSession):
    """Walks back from the newest slot until N slots with a reply are in; empty finals are not counted."""

    def _history(self) -> list[HistoryMessage]:
        size = getattr(self._memory, "window_size", None)
        if self._memory.type != "window" or not size:
            return list(super()._history())
        kept, replied = 0, 0
        for exchange in reversed(self._exchanges):
            if replied == size and exchange.assistant:
                break
            kept += 1
            replied += 1 if exchange.assistant else 0
        return working_messages(self._exchanges[len(self._exchanges) - kept :])


@break_of(
    name="window-of-message-units",
    summary="a window of N keeps the newest whole slots within 2N message units (a budget of messages)",
    clauses=("AS-PROJ-001", "AS-PROJ-011"),
)
class _WindowOfMessageUnits(AgentSession):
    """Whole slots, but counted in message units: with empty finals the window carries extra slots."""

    def _history(self) -> list[HistoryMessage]:
        size = getattr(self._memory, "window_size", None)
        if self._memory.type != "window" or not size:
            return list(super()._history())
        kept, units = 0, 0
        for exchange in reversed(self._exchanges):
            if units + exchange.message_units > 2 * size:
                break
            kept += 1
            units += exchange.message_units
        return working_messages(self._exchanges[len(self._exchanges) - kept :])


@break_of(
    name="declared-summary-read-as-none",
    summary="an agent that declares memory summary explicitly is served as none (only the unset default "
    "is summary)",
    clauses=("AS-PROJ-001", "AS-PROJ-011"),
)
class _DeclaredSummaryReadAsNone(AgentSession):
    """A policy table without ``summary``: the declared form falls through to ``none`` for projection and
    the refusals, while the getter still reports the form as authored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declared_summary = getattr(self._agent.memory, "type", None) == "summary"

    def _history(self) -> list[HistoryMessage]:
        return [] if self._declared_summary else list(super()._history())

    @property
    def compaction_refusal(self) -> MemoryPolicyRefusal | None:
        return _none_refusal("compacting") if self._declared_summary else super().compaction_refusal

    @property
    def trim_refusal(self) -> MemoryPolicyRefusal | None:
        return _none_refusal("trimming") if self._declared_summary else super().trim_refusal

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        if self._declared_summary and self.state is SessionState.IDLE:
            return _none_refusal("trimming")
        return await super().trim_history(max_messages, reason)


def _none_refusal(what: str) -> MemoryPolicyRefusal:
    return MemoryPolicyRefusal(
        memory="none", message=f"the agent's memory policy does not permit {what} the conversation"
    )


@break_of(
    name="window-skips-legacy-slots",
    summary="a window counts completed exchanges only; the legacy bare users among them come along free",
    clauses=("AS-PROJ-001",),
)
class _WindowSkipsLegacySlots(AgentSession):
    """A window of N starts at the N-th newest completed exchange, whatever bare users lie after it."""

    def _history(self) -> list[HistoryMessage]:
        size = getattr(self._memory, "window_size", None)
        if self._memory.type != "window" or not size:
            return list(super()._history())
        completed = [i for i, slot in enumerate(self._exchanges) if slot.assistant is not None]
        start = completed[-size] if len(completed) >= size else 0
        return working_messages(self._exchanges[start:])
