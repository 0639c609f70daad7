"""Broken implementations of the memory policy, the request projection and ``trimHistory``.

Each is the reference session with one behaviour changed; the cases citing its clauses must catch it
(see :mod:`relavium_conformance._selftest.proofs`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.turn import TurnSetup
from relavium_reference._model.history_results import (
    CompactionResult,
    MemoryPolicyRefusal,
    NothingToCompact,
    NothingToTrim,
    TrimResult,
)
from relavium_reference._model.llm import LlmRequest
from relavium_reference._model.shapes import MemorySummary
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._rules.lifecycle import SessionInput, SessionState
from relavium_reference._rules.memory import trim_refusal
from relavium_reference._rules.projection import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    HistoryMessage,
    select_exchanges,
    working_messages,
)
from relavium_reference._rules.trim import TrimPlan

__all__ = ["MEMORY_BREAKS"]


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


class _TrimsMidTurn(AgentSession):
    """Keeps the last N messages literally: the kept history may start inside a turn."""

    def _select_trim(self, max_messages: int) -> TrimPlan:
        plan = super()._select_trim(max_messages)
        kept_messages = min(max_messages, plan.total_messages)
        kept_slots, units = 0, 0
        for exchange in reversed(self._exchanges):
            if units >= kept_messages:
                break
            kept_slots += 1
            units += exchange.message_units
        return TrimPlan(
            kept_slots=kept_slots, kept_messages=kept_messages, total_messages=plan.total_messages
        )


class _TrimCallsTheProvider(AgentSession):
    """Asks the model for something (a summary, say) before trimming."""

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        if self.trim_refusal is None and self._exchanges:
            provider = self._deps.resolve_provider(self._agent.provider, self._agent.model)
            request = LlmRequest(model=self._agent.model, system=self._agent.system_prompt, messages=[])
            async for chunk in provider.stream(request):
                if chunk.type in ("stop", "error"):
                    break
        return await super().trim_history(max_messages, reason)


class _RefusesAfterTrimming(AgentSession):
    """Trims as if permitted, and only then reports the policy refusal."""

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        policy = self._memory
        refusal = trim_refusal(policy)
        self._memory = MemorySummary(type="summary")
        try:
            result = await super().trim_history(max_messages, reason)
        finally:
            self._memory = policy
        return refusal if refusal is not None else result


class _LivePolicy(BaseModel):
    """A policy value that anyone holding it can change (what the getter must never hand out)."""

    type: str
    window_size: int | None = None


class _HandsOutTheLivePolicy(AgentSession):
    """The getter returns the session's own, mutable policy instead of a frozen copy."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        live = _LivePolicy(type=self._memory.type, window_size=getattr(self._memory, "window_size", None))
        self._memory = live  # type: ignore[assignment]

    @property
    def memory_policy(self) -> Any:
        return self._memory


class _EstimatesAnotherProjection(AgentSession):
    """Estimates the whole retained history, whatever the policy sends."""

    def context_estimate(self, pending_user: str) -> int:
        policy = self._memory
        self._memory = MemorySummary(type="summary")
        try:
            return super().context_estimate(pending_user)
        finally:
            self._memory = policy


class _MarkerWithoutBoundary(BaseModel):
    def to_wire(self) -> dict[str, Any]:
        return {"role": "system", "content": []}


class _MarkerMissesTheBoundary(AgentSession):
    """Appends a system row with no ``compaction.droppedThroughSequence``."""

    async def _append_boundary(self, kept_slots: int, text: str | None = None) -> None:
        persister = self._deps.persister
        if persister is not None:
            await persister.append_marker(self.session_id, _MarkerWithoutBoundary())  # type: ignore[arg-type]


class _NoOpBeforePolicy(AgentSession):
    """Detects "nothing to compact" before it applies the memory policy's refusal."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        self._enter(SessionInput.COMPACT)
        if len(self._exchanges) <= 1:
            return NothingToCompact()
        return await super().compact(reason)


class _PolicyBeforeLifecycle(AgentSession):
    """Answers trimHistory without consulting the lifecycle first."""

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        refusal = self.trim_refusal
        if refusal is not None:
            return refusal
        if self._state is not SessionState.IDLE:
            return NothingToTrim(message_count=0)
        return await super().trim_history(max_messages, reason)


class _IgnoresTheMemoryPolicy(AgentSession):
    """Every request carries the whole retained history, whatever the agent's memory says."""

    def _history(self) -> list[HistoryMessage]:
        return working_messages(self._exchanges)


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


class _PolicyOnlyWhenFresh(AgentSession):
    """A resumed or reseated instance forgets the agent's memory and sends everything."""

    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._memory = MemorySummary(type="summary")
        return session


class _SelectsMessagesNotExchanges(AgentSession):
    """A window of N keeps the last 2N messages, so a selection can start inside an exchange."""

    def _history(self) -> list[HistoryMessage]:
        size = getattr(self._memory, "window_size", None)
        everything = working_messages(self._exchanges)
        if self._memory.type != "window" or not size:
            return list(super()._history())
        return everything[-2 * size :]


class _AutomaticAlwaysAllowed(AgentSession):
    """Reports automatic compaction as allowed whatever the policy."""

    @property
    def automatic_compaction_allowed(self) -> bool:
        return True


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


class _TrimKeepsTheWorkingHistory(AgentSession):
    """Writes the marker and emits the event, but the working transcript keeps every slot (no rebase)."""

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        before = list(self._exchanges)
        result = await super().trim_history(max_messages, reason)
        self._exchanges = before
        return result


MEMORY_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "compact-no-op-before-policy",
        "compact answers nothing_to_compact before the memory policy's refusal",
        ("AS-LIFE-038",),
        _NoOpBeforePolicy,
    ),
    BrokenImplementation(
        "trim-policy-before-lifecycle",
        "trimHistory answers the policy (or a result) where the lifecycle must refuse first",
        ("AS-PROJ-013", "AS-LIFE-041"),
        _PolicyBeforeLifecycle,
    ),
    BrokenImplementation(
        "ignores-the-memory-policy",
        "every request carries the whole history, whatever the agent's memory",
        ("AS-PROJ-001",),
        _IgnoresTheMemoryPolicy,
    ),
    BrokenImplementation(
        "window-permits-trim",
        "the window policy permits compaction and trim",
        ("AS-PROJ-011",),
        _WindowPermitsTrim,
    ),
    BrokenImplementation(
        "policy-only-when-fresh",
        "a resumed or reseated instance sends the whole history whatever the memory policy",
        ("AS-PROJ-003",),
        _PolicyOnlyWhenFresh,
    ),
    BrokenImplementation(
        "window-selects-messages",
        "a window selects the last messages of the history instead of whole exchanges before folding",
        ("AS-PROJ-004",),
        _SelectsMessagesNotExchanges,
    ),
    BrokenImplementation(
        "automatic-compaction-always-allowed",
        "automaticCompactionAllowed is true whatever the policy",
        ("AS-PROJ-009",),
        _AutomaticAlwaysAllowed,
    ),
    BrokenImplementation(
        "getter-refusal-differs",
        "compactionRefusal and trimRefusal differ from what compact and trimHistory return",
        ("AS-PROJ-010",),
        _GetterRefusalDiffers,
    ),
    BrokenImplementation(
        "refusal-quotes-the-user",
        "the policy refusal's message quotes the conversation",
        ("AS-PROJ-012",),
        _RefusalQuotesTheUser,
    ),
    BrokenImplementation(
        "trim-keeps-the-working-history",
        "after a trim the working transcript still holds the dropped turns (spans not rebased)",
        ("AS-PROJ-024",),
        _TrimKeepsTheWorkingHistory,
    ),
    BrokenImplementation(
        "summary-in-system-prompt",
        "the running summary is placed in the system prompt instead of a first user-role message",
        ("AS-PROJ-005",),
        _SummaryInSystemPrompt,
    ),
    BrokenImplementation(
        "trim-cuts-mid-turn",
        "trimHistory keeps the last N messages literally, cutting inside a turn",
        ("AS-LIFE-039", "AS-MSG-028"),
        _TrimsMidTurn,
    ),
    BrokenImplementation(
        "trim-calls-the-provider",
        "trimHistory calls the provider before trimming",
        ("AS-LIFE-040",),
        _TrimCallsTheProvider,
    ),
    BrokenImplementation(
        "trim-refusal-after-mutation",
        "trimHistory drops history, writes the marker and emits the event, then reports the policy refusal",
        ("AS-LIFE-042",),
        _RefusesAfterTrimming,
    ),
    BrokenImplementation(
        "memory-policy-getter-is-live",
        "the memoryPolicy getter hands out the session's own mutable policy",
        ("AS-PROJ-008", "AS-PROJ-007"),
        _HandsOutTheLivePolicy,
    ),
    BrokenImplementation(
        "estimate-on-another-projection",
        "the context estimate is computed on the whole history, not the projection the request uses",
        ("AS-PROJ-002",),
        _EstimatesAnotherProjection,
    ),
    BrokenImplementation(
        "marker-without-boundary",
        "the trim's boundary marker row carries no compaction.droppedThroughSequence",
        ("AS-LIFE-040",),
        _MarkerMissesTheBoundary,
    ),
)
