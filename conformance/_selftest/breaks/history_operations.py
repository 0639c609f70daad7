"""Breaks of the history operations of the lifecycle (clauses AS-LIFE-034 to 043): resume, compact,
trimHistory and export as session calls.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import (
    Answers,
    ProviderRequests,
    answer_rows,
    bending_jobs,
    request_messages,
)
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_reference import AgentSession
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._model.history_results import (
    CompactionFailed,
    CompactionResult,
    NothingToCompact,
    NothingToTrim,
    Trimmed,
    TrimResult,
)
from relavium_reference._model.llm import LlmRequest
from relavium_reference._model.shapes import MemorySummary
from relavium_reference._rules.lifecycle import SessionInput, SessionState
from relavium_reference._rules.memory import trim_refusal
from relavium_reference._rules.trim import TrimPlan

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="resume-keeps-the-policy",
    summary="a resumed instance keeps the previous instance's turn policy (KD-LIFE-3)",
    clauses=("AS-LIFE-034",),
)
class _ResumeKeepsThePolicy(WireVariant):
    """A resumed instance is handed the policy the previous instance had."""

    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self._policies: dict[str, Any] = {}

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        handle = str(params.get("handle"))
        result = await super().operation(method, params)
        if method == "session.setTurnPolicy":
            self._policies[handle] = params.get("policy")
        if method == "session.resume" and handle in self._policies:
            await super().operation(
                "session.setTurnPolicy", {"handle": handle, "policy": self._policies[handle]}
            )
        return result


@break_of(
    name="compaction-while-busy",
    summary="compact during a turn answers nothing_to_compact instead of the lifecycle refusal",
    clauses=("AS-LIFE-036",),
)
class _CompactWhileBusy(AgentSession):
    """``compact`` during a turn answers ``nothing_to_compact`` instead of the lifecycle refusal."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        if self.state is SessionState.STREAMING:
            return NothingToCompact()
        return await super().compact(reason)


@break_of(
    name="compaction-without-marker",
    summary="a compaction installs its summary without appending the durable boundary marker",
    clauses=("AS-LIFE-035",),
    through=bending_jobs,
)
def _no_marker(job: CompactionJob) -> None:
    """Installs the summary without appending the durable boundary marker."""

    async def nothing(kept_slots: int, text: str) -> None:
        return None

    job.append_boundary = nothing


@break_of(
    name="compaction-failure-raises",
    summary="an ordinary failed compaction raises instead of returning its typed result",
    clauses=("AS-LIFE-037",),
)
class _FailureRaises(AgentSession):
    """An ordinary failed compaction raises instead of returning its typed result."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        result = await super().compact(reason)
        if isinstance(result, CompactionFailed):
            raise RuntimeError(result.message)
        return result


@break_of(
    name="trim-cuts-mid-turn",
    summary="trimHistory keeps the last N messages literally, cutting inside a turn",
    clauses=("AS-LIFE-039", "AS-MSG-028"),
)
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


@break_of(
    name="trim-calls-the-provider",
    summary="trimHistory calls the provider before trimming",
    clauses=("AS-LIFE-040",),
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


@break_of(
    name="trim-refusal-after-mutation",
    summary=(
        "trimHistory drops history, writes the marker and emits the event, then reports the policy refusal"
    ),
    clauses=("AS-LIFE-042",),
)
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


class _MarkerWithoutBoundary(BaseModel):
    def to_wire(self) -> dict[str, Any]:
        return {"role": "system", "content": []}


@break_of(
    name="marker-without-boundary",
    summary="the trim's boundary marker row carries no compaction.droppedThroughSequence",
    clauses=("AS-LIFE-040",),
)
class _MarkerMissesTheBoundary(AgentSession):
    """Appends a system row with no ``compaction.droppedThroughSequence``."""

    async def _append_boundary(self, kept_slots: int, text: str | None = None) -> None:
        persister = self._deps.persister
        if persister is not None:
            await persister.append_marker(self.session_id, _MarkerWithoutBoundary())  # type: ignore[arg-type]


@break_of(
    name="compact-no-op-before-policy",
    summary="compact answers nothing_to_compact before the memory policy's refusal",
    clauses=("AS-LIFE-038",),
)
class _NoOpBeforePolicy(AgentSession):
    """Detects "nothing to compact" before it applies the memory policy's refusal."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        self._enter(SessionInput.COMPACT)
        if len(self._exchanges) <= 1:
            return NothingToCompact()
        return await super().compact(reason)


@break_of(
    name="resume-forgets-history",
    summary="a resumed session sends only the new user message",
    clauses=("AS-LIFE-034", "AS-SESS-007"),
)
class _ResumeForgetsHistory(ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        if handle in self.resumed:
            messages = request_messages(params)
            params["request"]["messages"] = messages[-1:]


@break_of(
    name="export-leaves-out-the-last-turn",
    summary="the session's export leaves out its newest turn",
    clauses=("AS-LIFE-043",),
)
class _ExportLeavesOutTheLastTurn(Answers):
    def answer(self, handle: str, method: str, answer: Any) -> Any:
        rows = answer_rows(answer)
        if method == "host.loadSession" and rows and rows[-1].get("role") == "assistant":
            answer["messages"] = rows[:-1]
        return answer


# -- boundaries the hand-written corpus does not reach; generated cases of area ``history`` find them
# (``generated.BOUNDARY_BREAKS``, ``docs/proofs.md``) ---------------------------------------------------


@break_of(
    name="trim-counts-its-marker",
    summary="after a first trim, the boundary marker counts as one more message unit of the history",
    clauses=("AS-LIFE-039", "AS-MSG-028"),
)
class _TrimCountsItsMarker(AgentSession):
    """The marker a trim appends is counted as a unit by every later trim: the totals are one too many
    (a history exactly at the bound is trimmed of nothing but the marker)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._markers = 0

    def _select_trim(self, max_messages: int) -> TrimPlan:
        plan = super()._select_trim(max_messages)
        if self._markers:
            plan = TrimPlan(plan.kept_slots, plan.kept_messages, plan.total_messages + self._markers)
        if plan.drops_anything:
            self._markers = 1
        return plan


_RESUMED_IN_WORKSPACE: dict[tuple[str, str], tuple[str, Any]] = {}


@break_of(
    name="resume-rows-keyed-by-agent",
    summary="resume keys its rows by agent and workspace: a second session continues the first's rows",
    clauses=("AS-LIFE-034",),
)
class _RowsKeyedByAgent(AgentSession):
    """The state last resumed for an agent in a workspace is the one another session's resume continues."""

    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        key = (str(kwargs["agent"].id), str(kwargs["context"].working_dir))
        held = _RESUMED_IN_WORKSPACE.get(key)
        if held is not None and held[0] != kwargs["session_id"]:
            kwargs["state"] = held[1]
        else:
            _RESUMED_IN_WORKSPACE[key] = (kwargs["session_id"], kwargs["state"])
        return super().resume(**kwargs)


@break_of(
    name="trim-installs-before-the-marker",
    summary="a trim drops the older turns from the working history before the host has its marker",
    clauses=("AS-LIFE-040",),
)
class _TrimInstallsBeforeMarker(AgentSession):
    """The kept suffix is installed first; a failed marker write then leaves it installed."""

    async def _append_boundary(self, kept_slots: int, text: str | None = None) -> None:
        if text is None and 0 <= kept_slots < len(self._exchanges):  # a trim's marker (no summary)
            self._exchanges = self._exchanges[len(self._exchanges) - kept_slots :]
        await super()._append_boundary(kept_slots, text)


@break_of(
    name="cancelled-trim-reports-nothing-to-trim",
    summary="a cancel while the host holds a trim's marker write ends the trim as nothing_to_trim",
    clauses=("AS-LIFE-041",),
)
class _CancelledTrimReportsNothing(AgentSession):
    """With no cancelled TrimResult, the cut-short trim claims it had nothing to drop (KD-COMP-5)."""

    async def _trim(self, max_messages: int, reason: Literal["manual", "auto-fallback"]) -> TrimResult:
        result = await super()._trim(max_messages, reason)
        if isinstance(result, Trimmed) and self._state is SessionState.CANCELLED:
            return NothingToTrim(message_count=result.kept_message_count + result.dropped_message_count)
        return result
