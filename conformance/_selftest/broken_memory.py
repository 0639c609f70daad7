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
from relavium_reference._model.history_results import TrimResult
from relavium_reference._model.llm import LlmRequest
from relavium_reference._model.shapes import MemorySummary
from relavium_reference._model.tools import TurnPolicy
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

    async def _append_boundary(self, kept_slots: int) -> None:
        persister = self._deps.persister
        if persister is not None:
            await persister.append_marker(self.session_id, _MarkerWithoutBoundary())  # type: ignore[arg-type]


MEMORY_BREAKS: tuple[BrokenImplementation, ...] = (
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
