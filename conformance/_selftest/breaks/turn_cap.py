"""Breaks of the hard turn cap (clauses AS-CAP-*): which turns use a slot, the cap's default and
limit, and the within-turn tool-round guard.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import Answers, Observed, with_http_provider
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession, TurnPolicy, TurnResult
from relavium_reference._host.dialect_client import HttpProvider
from relavium_reference._host.session import DEFAULT_SESSION_MAX_TURNS, SessionDeps
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.events import SessionCancelled, SessionEvent, TokensUsed
from relavium_reference._model.llm import StopChunk, StreamChunk, Usage
from relavium_reference._model.vocabulary import ErrorCode, StopReason
from relavium_reference._rules.dialect_gemini import GeminiStream
from relavium_reference._rules.lifecycle import SessionState

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="no-hard-cap", summary="a send past the hard cap still runs", clauses=("AS-CAP-004", "AS-CAP-005")
)
class _NoHardCap(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_turns = 10**9


@break_of(
    name="unengaged-turns-use-slot",
    summary="a turn refused before any provider invocation still uses a cap slot",
    clauses=("AS-CAP-009", "AS-CAP-012"),
)
class _UnengagedTurnsUseSlot(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        self._turns_used += 1


@break_of(
    name="swallows-observer-failure",
    summary="a failing host sink ends the turn quietly; its raw error never reaches the caller",
    clauses=("AS-CAP-015",),
)
class _SwallowsObserverFailure(AgentSession):
    """Turns a failing host sink into an ordinary failed turn: the raw error never reaches the caller."""

    async def send_message(self, text: str) -> TurnResult:
        try:
            return await super().send_message(text)
        except Exception:
            return TurnResult(status="failed", tokens_used=TokensUsed(input=0, output=0))


@break_of(
    name="no-tool-round-guard",
    summary="the within-turn tool-round guard never fires",
    clauses=("AS-CAP-006",),
)
class _NoToolRoundGuard(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return TurnSetup(**{**setup.__dict__, "max_tool_turns": 10**6})


@break_of(
    name="budget-refusal-forgets-earlier-rounds",
    summary="a refusal in a later tool round drops the earlier engagement and usage",
    clauses=("AS-CAP-018",),
)
class _RefusalForgetsEarlierRounds(AgentSession):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED:
            progress = TurnProgress()  # as if nothing had engaged
        return await super()._settle(end, progress)


@break_of(
    name="engaged-at-first-chunk",
    summary="a turn counts as engaged only once a chunk arrived",
    clauses=("AS-CAP-011",),
)
class _EngagedAtFirstChunk(Observed):
    """A turn counts as engaged only once a chunk arrived, not at the provider's invocation."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._chunks = 0

    async def seen(self, event: SessionEvent) -> None:
        if event.type in ("agent:token", "agent:reasoning", "agent:tool_call", "cost:updated"):
            self._chunks += 1

    async def send_message(self, text: str) -> Any:
        self._chunks = 0
        return await super().send_message(text)

    def _count_turn(self, progress: TurnProgress) -> None:
        if progress.engaged and self._chunks:
            self._turns_used += 1


@break_of(
    name="http-end-of-body-is-success",
    summary=("the HTTP client takes a stream that ends without message_stop or [DONE] as a completed reply"),
    clauses=("AS-CAP-020",),
    through=with_http_provider,
)
class _EndIsSuccess(HttpProvider):
    """A stream that stops sending is taken as a finished reply, end-of-stream signal or not."""

    def ended(self, reader: Any) -> list[StreamChunk]:
        reader.finished = True
        return [StopChunk(stop_reason=StopReason.STOP)]


class _SummingGeminiStream(GeminiStream):
    """Adds every chunk's ``usageMetadata`` up, as if each were a delta (it is a running total)."""

    def usage(self, metadata: Any) -> None:
        before = self._usage
        super().usage(metadata)
        if isinstance(metadata, dict):
            self._usage = Usage(
                input_tokens=before.input_tokens + self._usage.input_tokens,
                output_tokens=before.output_tokens + self._usage.output_tokens,
            )


@break_of(
    name="http-gemini-sums-usage",
    summary=(
        "the Gemini client adds up every chunk's usageMetadata, a running total, as if each were a delta"
    ),
    clauses=("AS-CAP-014",),
    through=with_http_provider,
)
class _GeminiSumsUsage(HttpProvider):
    def reader(self) -> Any:
        return _SummingGeminiStream() if self.endpoint.dialect == "gemini" else super().reader()


@break_of(
    name="default-cap-hundred", summary="without maxTurns the cap is 100, not 50", clauses=("AS-CAP-001",)
)
class _DefaultCapHundred(AgentSession):
    def __init__(self, *, deps: SessionDeps, **kwargs: Any) -> None:
        super().__init__(deps=deps, **kwargs)
        if deps.max_turns is None:
            self._max_turns = 2 * DEFAULT_SESSION_MAX_TURNS


@break_of(
    name="zero-cap-is-zero",
    summary="maxTurns 0 allows no turn instead of the default",
    clauses=("AS-CAP-002",),
)
class _ZeroCapIsZero(AgentSession):
    def __init__(self, *, deps: SessionDeps, **kwargs: Any) -> None:
        super().__init__(deps=deps, **kwargs)
        if deps.max_turns == 0:
            self._max_turns = 0


@break_of(
    name="cap-counts-requests",
    summary="every provider request of a turn uses a cap slot, tool rounds included",
    clauses=("AS-CAP-003",),
)
class _CapCountsRequests(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        if progress.engaged:
            self._turns_used += max(1, progress.attempts)


@break_of(
    name="max-turns-ignored",
    summary="the maxTurns dependency is ignored (always 50)",
    clauses=("AS-CAP-007",),
)
class _MaxTurnsIgnored(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_turns = DEFAULT_SESSION_MAX_TURNS


@break_of(
    name="aborted-turn-is-free",
    summary="an engaged turn that is aborted uses no cap slot",
    clauses=("AS-CAP-010",),
)
class _AbortedTurnIsFree(AgentSession):
    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        progress.engaged = False  # an interrupted turn is not counted
        return await super()._settle_interrupted(progress)


@break_of(
    name="silent-turn-is-free",
    summary="an engaged turn that reported zero tokens uses no cap slot",
    clauses=("AS-CAP-011",),
)
class _SilentTurnIsFree(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        if progress.engaged and progress.usage.input_tokens + progress.usage.output_tokens > 0:
            self._turns_used += 1


@break_of(
    name="second-cancel-emits",
    summary="a second cancel emits session:cancelled again",
    clauses=("AS-CAP-019",),
)
class _SecondCancelEmits(AgentSession):
    async def cancel(self) -> None:
        if self._state is SessionState.CANCELLED:
            await self._stamper.emit(SessionCancelled)
            return
        await super().cancel()


@break_of(
    name="resume-resets-the-cap",
    summary="a resumed instance starts its hard cap from zero",
    clauses=("AS-CAP-021",),
)
class _ResumeResetsTheCap(AgentSession):
    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._turns_used = 0
        return session


@break_of(
    name="usage-of-the-last-request",
    summary="a turn's tokensUsed is its last provider call's usage, not the sum",
    clauses=("AS-CAP-014",),
)
class _UsageOfTheLastRequest(WireVariant):
    """A turn's tokensUsed is the last provider call's usage, not the sum of its calls."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._last: dict[str, tuple[int, int]] = {}

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "cost:updated":
            self._last[handle] = (int(event.get("inputTokens", 0)), int(event.get("outputTokens", 0)))
        if event.get("type") == "session:turn_started":
            self._last.pop(handle, None)
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        last = self._last.get(str(params.get("handle")))
        if method == "session.send" and isinstance(result, dict) and last is not None:
            result["tokensUsed"] = {**result.get("tokensUsed", {}), "input": last[0], "output": last[1]}
        return result


@break_of(
    name="failed-commit-loses-usage",
    summary="a turn whose commit failed reports zero usage",
    clauses=("AS-CAP-017",),
)
class _FailedCommitLosesUsage(WireVariant):
    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        error = result.get("error") if isinstance(result, dict) else None
        if method == "session.send" and isinstance(error, dict) and error.get("code") == "internal":
            result["tokensUsed"] = {"input": 0, "output": 0}
        return result


@break_of(
    name="error-message-names-the-cause",
    summary="a failed turn's error message repeats the provider's own text",
    clauses=("AS-CAP-020",),
)
class _ErrorMessageNamesTheCause(Answers):
    """A failed turn's error message repeats the provider's own error text."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._cause: dict[str, str] = {}

    def answer(self, handle: str, method: str, answer: Any) -> Any:
        chunk = answer.get("chunk") if isinstance(answer, dict) else None
        if method == "provider.next" and isinstance(chunk, dict) and chunk.get("type") == "error":
            self._cause[handle] = str((chunk.get("error") or {}).get("message", ""))
        return answer

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        cause = self._cause.pop(str(params.get("handle")), None)
        error = result.get("error") if isinstance(result, dict) else None
        if method == "session.send" and isinstance(error, dict) and cause:
            error["message"] = f"{error.get('message', '')}: {cause}"
        return result


# -- a boundary the hand-written corpus does not reach; generated cases of area ``chain`` find it
# (``_corpus/boundary_breaks.py``, ``docs/proofs.md``) ----------------------------------------------------


@break_of(
    name="budget-refusal-after-failover-frees-the-slot",
    summary="a turn refused admission on a fallback attempt before any tool round uses no slot of the cap",
    clauses=("AS-CAP-018", "AS-CAP-009"),
)
class _BudgetRefusalAfterFailoverFreesTheSlot(AgentSession):
    """Engagement is read from the refused attempt alone: an earlier attempt that reached the provider
    and failed over is forgotten (a tool round still counts, as the hand-written case checks)."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.BUDGET_EXCEEDED and not progress.tool_history:
            progress.engaged = False
        return await super()._settle(end, progress)
