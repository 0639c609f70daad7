"""Breaks of classified context-window failures (clauses AS-OVF-*): how an overflow is recognised,
including the vendor HTTP dialects, and the one-shot recovery.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import with_http_provider
from relavium_reference import AgentSession, TurnPolicy, TurnResult
from relavium_reference._host.dialect_client import HttpEndpoint, HttpProvider
from relavium_reference._host.turn import Recovered, RecoveryRefused, TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.history_results import CompactionFailed
from relavium_reference._model.invocation import Invocation, open_stream
from relavium_reference._model.llm import (
    LlmError,
    LlmProvider,
    LlmRequest,
    StreamChunk,
    StreamErrorChunk,
    Usage,
)
from relavium_reference._model.vocabulary import ErrorCode, LlmErrorKind, ProviderId
from relavium_reference._rules.overflow import TOOLS_RAN_SUFFIX, RecoveryFacts

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="recovery-refusal-keeps-overflow",
    summary="a budget refusal of the overflow recovery is taken for nothing to fold: context_overflow",
    clauses=("AS-OVF-010",),
)
class _RecoveryRefusalKeepsOverflow(AgentSession):
    """A refused recovery pass is taken for nothing to fold: the original overflow stands."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup

        async def keeps(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            outcome = await recover(current)
            return None if isinstance(outcome, RecoveryRefused) else outcome

        return replace(setup, recover=keeps)


@break_of(
    name="http-tokens-mean-overflow",
    summary=(
        "the HTTP client classifies any error mentioning tokens (a 429 among them) as a context overflow"
    ),
    clauses=("AS-OVF-002",),
    through=with_http_provider,
)
class _TokensMeanOverflow(HttpProvider):
    """The careless classifier: any failure whose message mentions tokens is a context overflow."""

    def failed(self, status: int | None, body: Any) -> LlmError:
        error = super().failed(status, body)
        if "token" in error.message.lower():
            return error.model_copy(update={"kind": LlmErrorKind.CONTEXT_OVERFLOW})
        return error


@break_of(
    name="http-trusts-custom-endpoints",
    summary=(
        "the HTTP client ignores the endpoint's custom flag: a custom host's overflow counts as official"
    ),
    clauses=("AS-OVF-016",),
    through=with_http_provider,
)
class _TrustsEveryEndpoint(HttpProvider):
    """Takes every endpoint for the vendor's own: a custom host's overflow is never downgraded."""

    def __init__(self, endpoint: HttpEndpoint, client: Any = None) -> None:
        super().__init__(replace(endpoint, official=True), client)


@break_of(
    name="http-authority-from-base-url",
    summary=(
        "the HTTP client ignores the endpoint's official flag and judges authority by the base URL alone"
    ),
    clauses=("AS-OVF-006",),
    through=with_http_provider,
)
class _AuthorityFromBaseUrl(HttpProvider):
    """Decides an endpoint's authority from its base URL alone, ignoring the host's ``official`` flag: a
    loopback URL is never the vendor's host, so every overflow is downgraded and none recovers."""

    def __init__(self, endpoint: HttpEndpoint, client: Any = None) -> None:
        super().__init__(replace(endpoint, official=None), client)


_TOKEN_COUNT = re.compile(r"input.token.count", re.IGNORECASE)


@break_of(
    name="http-gemini-token-count-means-overflow",
    summary=(
        "the Gemini client takes any failure naming an input token count (a quota 429 too) for an overflow"
    ),
    clauses=("AS-OVF-002",),
    through=with_http_provider,
)
class _GeminiTokenCountMeansOverflow(HttpProvider):
    """Matches Gemini's overflow on its prose alone: any failure naming an input token count, any status."""

    def failed(self, status: int | None, body: Any) -> LlmError:
        error = super().failed(status, body)
        if self.endpoint.dialect == "gemini" and _TOKEN_COUNT.search(error.message):
            return error.model_copy(update={"kind": LlmErrorKind.CONTEXT_OVERFLOW})
        return error


ChunkChange = Callable[[StreamChunk], StreamChunk]


class _Rewritten:
    """The resolved provider, with every chunk it yields passed through ``change``."""

    def __init__(self, inner: LlmProvider, change: ChunkChange) -> None:
        self._inner = inner
        self._change = change

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._play(self._inner.stream(request))

    def stream_invocation(self, request: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        """The invocation's purpose passes through untouched (a summary pass stays one)."""
        return self._play(open_stream(self._inner, request, invocation))

    async def _play(self, chunks: AsyncIterator[StreamChunk]) -> AsyncIterator[StreamChunk]:
        async for chunk in chunks:
            yield self._change(chunk)


class _RewritesChunks(AgentSession):
    def _change(self, chunk: StreamChunk) -> StreamChunk:
        return chunk

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        resolve = setup.resolve_provider

        def resolved(provider: ProviderId, model: str) -> LlmProvider:
            return _Rewritten(resolve(provider, model), self._change)

        return replace(setup, resolve_provider=resolved)


@break_of(
    name="rate-limit-as-overflow",
    summary="a 429 (rate limit or exhausted quota) is classified as a context overflow",
    clauses=("AS-OVF-002",),
)
class _RateLimitAsOverflow(_RewritesChunks):
    """A 429 read as a full context window (the quota wording mentions tokens, after all)."""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk) and chunk.error.kind is LlmErrorKind.RATE_LIMIT:
            error = chunk.error.model_copy(
                update={"kind": LlmErrorKind.CONTEXT_OVERFLOW, "evidence": "official"}
            )
            return chunk.model_copy(update={"error": error})
        return chunk


@break_of(
    name="overflow-trusts-custom-endpoints",
    summary="an overflow downgraded from a custom endpoint is treated as authoritative",
    clauses=("AS-OVF-016",),
)
class _TrustsCustomEndpoints(_RewritesChunks):
    """An overflow from a custom endpoint is taken as the vendor's own (no downgrade)."""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk) and chunk.error.kind is LlmErrorKind.CONTEXT_OVERFLOW:
            return chunk.model_copy(update={"error": chunk.error.model_copy(update={"evidence": "official"})})
        return chunk


@break_of(
    name="native-context-stop-drops-usage",
    summary="the usage Anthropic reports with its native context-window stop is dropped",
    clauses=("AS-OVF-015",),
)
class _NativeStopDropsUsage(_RewritesChunks):
    """The usage reported beside a failure is thrown away (only a stop chunk's usage counts)."""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk) and chunk.usage is not None:
            return chunk.model_copy(update={"usage": None})
        return chunk


@break_of(
    name="overflow-leaks-provider-message",
    summary="the context_overflow terminal carries the provider's own message",
    clauses=("AS-OVF-001",),
)
class _LeaksProviderMessage(_RewritesChunks):
    """The overflow terminal repeats what the provider said."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._provider_said = ""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk):
            self._provider_said = chunk.error.message
        return chunk

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.CONTEXT_OVERFLOW and self._provider_said:
            end = replace(end, error_message=self._provider_said)
        return await super()._settle(end, progress)


class _BendsRecovery(AgentSession):
    """The recovery decision with one of its facts ignored."""

    ignored: str = ""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        decide = setup.may_recover
        ignored = {self.ignored: False}

        def bent(facts: RecoveryFacts) -> bool:
            return decide(replace(facts, **ignored))

        return replace(setup, may_recover=bent)


@break_of(
    name="overflow-recovers-twice",
    summary="an overflow on the retry starts a second compaction and retry",
    clauses=("AS-OVF-011", "AS-OVF-006"),
)
class _RecoversTwice(_BendsRecovery):
    """Every overflow gets another compaction and retry; when nothing is left to fold it retries anyway."""

    ignored = "recovered"

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup
        cycles = [0]

        async def again(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            cycles[0] += 1
            outcome = await recover(current)
            if outcome is None and cycles[0] > 1:
                return Recovered(history=current.history)
            return outcome

        return replace(setup, recover=again)


@break_of(
    name="overflow-restarts-after-tools",
    summary="an overflow after a dispatched tool round compacts and restarts the turn",
    clauses=("AS-OVF-014", "AS-OVF-005"),
)
class _RestartsAfterTools(_BendsRecovery):
    ignored = "tools_dispatched"


@break_of(
    name="overflow-recovers-after-failed-presend",
    summary="a turn whose pre-send compaction failed or was skipped still recovers from an overflow",
    clauses=("AS-OVF-008", "AS-COMP-009"),
)
class _RecoversAfterFailedPresend(_BendsRecovery):
    ignored = "presend_suppressed"


@break_of(
    name="overflow-retry-usage-replaces",
    summary="the retry's usage replaces the first attempt's instead of adding to it",
    clauses=("AS-OVF-012",),
)
class _RetryUsageReplaces(AgentSession):
    """The retry after a recovery starts the turn's usage again: the first attempt's spend is lost."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup
        progress = self._progress

        async def forgetting(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            outcome = await recover(current)
            if isinstance(outcome, Recovered) and progress is not None:
                progress.usage = Usage()
            return outcome

        return replace(setup, recover=forgetting)


@break_of(
    name="overflow-retries-with-nothing-folded",
    summary="with nothing to fold, or a failed summary pass, the turn retries the same request anyway",
    clauses=("AS-OVF-009",),
)
class _RetriesWithNothingFolded(AgentSession):
    """When the recovery folded nothing (or its pass failed), the turn retries the same request anyway."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup

        async def anyway(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            outcome = await recover(current)
            return Recovered(history=current.history) if outcome is None else outcome

        return replace(setup, recover=anyway)


@break_of(
    name="overflow-summariser-uses-a-slot",
    summary="the recovery's summary pass uses a slot of the hard turn cap",
    clauses=("AS-OVF-013",),
)
class _SummariserUsesASlot(AgentSession):
    """The recovery's summary pass is counted as a turn of the hard cap."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup

        async def counted(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            outcome = await recover(current)
            if isinstance(outcome, Recovered):
                self._turns_used += 1
            return outcome

        return replace(setup, recover=counted)


@break_of(
    name="overflow-other-wording",
    summary="the context_overflow terminal carries a generic text, not the KD-OVF-2 wording",
    clauses=("AS-OVF-004",),
)
class _OverflowOtherWording(AgentSession):
    """The overflow terminal keeps the engine's generic text instead of the KD-OVF-2 wording."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.CONTEXT_OVERFLOW:
            end = replace(end, error_message=None)
        return await super()._settle(end, progress)


@break_of(
    name="overflow-hides-tools-ran",
    summary="the context_overflow message does not say that tools already ran",
    clauses=("AS-OVF-003",),
)
class _ToolsRanUnsaid(AgentSession):
    """The overflow message never says that tools already ran."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_message is not None:
            end = replace(end, error_message=end.error_message.replace(TOOLS_RAN_SUFFIX, ""))
        return await super()._settle(end, progress)


@break_of(
    name="overflow-fails-over",
    summary="an overflow of an entry with a fallback after it moves on to that fallback like any failure",
    clauses=("AS-OVF-001",),
)
class _OverflowFailsOver(AgentSession):
    """An overflow before the plan's last entry is read as an overloaded entry: the turn fails over."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        resolve, last = setup.resolve_provider, self._agent.model
        if self._agent.fallback_chain:
            last = self._agent.fallback_chain[-1].model

        def change(chunk: StreamChunk) -> StreamChunk:
            if isinstance(chunk, StreamErrorChunk) and chunk.error.kind is LlmErrorKind.CONTEXT_OVERFLOW:
                error = chunk.error.model_copy(update={"kind": LlmErrorKind.OVERLOADED, "evidence": None})
                return chunk.model_copy(update={"error": error})
            return chunk

        def resolved(provider: ProviderId, model: str) -> LlmProvider:
            inner = resolve(provider, model)
            return inner if model == last else _Rewritten(inner, change)

        return replace(setup, resolve_provider=resolved)


# -- a boundary the hand-written corpus does not reach; generated cases of area ``overflow`` find it
# (``_corpus/boundary_breaks.py``, ``docs/proofs.md``) ----------------------------------------------------


@break_of(
    name="failed-recovery-latches",
    summary="after an overflow recovery whose summary pass failed, no later overflow of the session recovers",
    clauses=("AS-OVF-005", "AS-OVF-009"),
)
class _FailedRecoveryLatches(AgentSession):
    """A failed recovery is remembered by the session instead of the turn: every later turn is set up
    without its recovery."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recovery_failed = False

    async def run_compaction(
        self, reason: Any, *, pending_user: str | None = None, manual: bool = False
    ) -> Any:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if reason == "auto-overflow" and isinstance(report.result, CompactionFailed):
            self._recovery_failed = True  # a pass that ran and failed (nothing to fold does not latch)
        return report

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return replace(setup, recover=None) if self._recovery_failed else setup


@break_of(
    name="cut-short-recovery-retries",
    summary="a recovery whose compaction was cut short by an abort retries the turn on the unfolded history",
    clauses=("AS-OVF-006",),
)
class _CutShortRecoveryRetries(AgentSession):
    """An aborted recovery pass is taken for a finished one: the fresh retry goes out anyway."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        recover = setup.recover
        if recover is None:
            return setup

        async def retries(current: TurnSetup) -> Recovered | RecoveryRefused | None:
            try:
                return await recover(current)
            except asyncio.CancelledError:
                self._interrupt = None
                return Recovered(history=tuple(current.history))

        return replace(setup, recover=retries)
