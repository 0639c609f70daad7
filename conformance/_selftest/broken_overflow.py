"""Broken implementations of the overflow terminal and its one-shot recovery.

Each is the reference session with one behaviour changed; the ``overflow/*`` cases citing its clauses
must catch it (see :mod:`relavium_conformance._selftest.proofs`).  Most change what the provider layer
hands the turn (a wrapper around the resolved provider), or what the session's terminal says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession, TurnResult
from relavium_reference._host.turn import (
    Recovered,
    RecoveryRefused,
    TurnEnd,
    TurnProgress,
    TurnSetup,
)
from relavium_reference._model.invocation import Invocation, open_stream
from relavium_reference._model.llm import LlmProvider, LlmRequest, StreamChunk, StreamErrorChunk, Usage
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import ErrorCode, LlmErrorKind, ProviderId
from relavium_reference._rules.overflow import TOOLS_RAN_SUFFIX, RecoveryFacts

__all__ = ["OVERFLOW_BREAKS", "PRESEND_BREAKS", "RECOVERY_BREAKS"]

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


class _RateLimitAsOverflow(_RewritesChunks):
    """A 429 read as a full context window (the quota wording mentions tokens, after all)."""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk) and chunk.error.kind is LlmErrorKind.RATE_LIMIT:
            error = chunk.error.model_copy(
                update={"kind": LlmErrorKind.CONTEXT_OVERFLOW, "evidence": "official"}
            )
            return chunk.model_copy(update={"error": error})
        return chunk


class _TrustsCustomEndpoints(_RewritesChunks):
    """An overflow from a custom endpoint is taken as the vendor's own (no downgrade)."""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk) and chunk.error.kind is LlmErrorKind.CONTEXT_OVERFLOW:
            return chunk.model_copy(update={"error": chunk.error.model_copy(update={"evidence": "official"})})
        return chunk


class _NativeStopDropsUsage(_RewritesChunks):
    """The usage reported beside a failure is thrown away (only a stop chunk's usage counts)."""

    def _change(self, chunk: StreamChunk) -> StreamChunk:
        if isinstance(chunk, StreamErrorChunk) and chunk.usage is not None:
            return chunk.model_copy(update={"usage": None})
        return chunk


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


class _RestartsAfterTools(_BendsRecovery):
    ignored = "tools_dispatched"


class _RecoversAfterFailedPresend(_BendsRecovery):
    ignored = "presend_suppressed"


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


class _OverflowOtherWording(AgentSession):
    """The overflow terminal keeps the engine's generic text instead of the KD-OVF-2 wording."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is ErrorCode.CONTEXT_OVERFLOW:
            end = replace(end, error_message=None)
        return await super()._settle(end, progress)


class _ToolsRanUnsaid(AgentSession):
    """The overflow message never says that tools already ran."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_message is not None:
            end = replace(end, error_message=end.error_message.replace(TOOLS_RAN_SUFFIX, ""))
        return await super()._settle(end, progress)


OVERFLOW_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "rate-limit-as-overflow",
        "a 429 (rate limit or exhausted quota) is classified as a context overflow",
        ("AS-OVF-002",),
        _RateLimitAsOverflow,
    ),
    BrokenImplementation(
        "overflow-trusts-custom-endpoints",
        "an overflow downgraded from a custom endpoint is treated as authoritative",
        ("AS-OVF-016",),
        _TrustsCustomEndpoints,
    ),
    BrokenImplementation(
        "overflow-leaks-provider-message",
        "the context_overflow terminal carries the provider's own message",
        ("AS-OVF-001",),
        _LeaksProviderMessage,
    ),
    BrokenImplementation(
        "native-context-stop-drops-usage",
        "the usage Anthropic reports with its native context-window stop is dropped",
        ("AS-OVF-015",),
        _NativeStopDropsUsage,
    ),
    BrokenImplementation(
        "overflow-other-wording",
        "the context_overflow terminal carries a generic text, not the KD-OVF-2 wording",
        ("AS-OVF-004",),
        _OverflowOtherWording,
    ),
    BrokenImplementation(
        "overflow-hides-tools-ran",
        "the context_overflow message does not say that tools already ran",
        ("AS-OVF-003",),
        _ToolsRanUnsaid,
    ),
)


PRESEND_BREAKS: tuple[BrokenImplementation, ...] = (
    # registered with the pre-send compaction's cases (a failed or skipped pre-send pass is needed)
    BrokenImplementation(
        "overflow-recovers-after-failed-presend",
        "a turn whose pre-send compaction failed or was skipped still recovers from an overflow",
        ("AS-OVF-008", "AS-COMP-009"),
        _RecoversAfterFailedPresend,
    ),
)

RECOVERY_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "overflow-recovers-twice",
        "an overflow on the retry starts a second compaction and retry",
        ("AS-OVF-011", "AS-OVF-006"),
        _RecoversTwice,
    ),
    BrokenImplementation(
        "overflow-restarts-after-tools",
        "an overflow after a dispatched tool round compacts and restarts the turn",
        ("AS-OVF-014", "AS-OVF-005"),
        _RestartsAfterTools,
    ),
    BrokenImplementation(
        "overflow-retries-with-nothing-folded",
        "with nothing to fold, or a failed summary pass, the turn retries the same request anyway",
        ("AS-OVF-009",),
        _RetriesWithNothingFolded,
    ),
    BrokenImplementation(
        "overflow-summariser-uses-a-slot",
        "the recovery's summary pass uses a slot of the hard turn cap",
        ("AS-OVF-013",),
        _SummariserUsesASlot,
    ),
    BrokenImplementation(
        "overflow-retry-usage-replaces",
        "the retry's usage replaces the first attempt's instead of adding to it",
        ("AS-OVF-012",),
        _RetryUsageReplaces,
    ),
)
