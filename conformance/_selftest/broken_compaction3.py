"""Broken implementations of manual compaction: the estimate, the marker commit, observer origin, provider
resolution, keptTurnCount and the result and event shapes.

Each is the reference session (or its adapter) with one behaviour changed; the ``compaction/manual-*``
cases citing its clauses must catch it (see :mod:`relavium_conformance._selftest.proofs`).  The
first set is :mod:`relavium_conformance._selftest.broken_compaction2`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.broken_compaction2 import JobBreak as _JobBreak
from relavium_conformance._wire.messages import HandleParams
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._model.errors import ObserverError
from relavium_reference._model.events import SessionCompacted
from relavium_reference._model.invocation import Invocation, open_stream
from relavium_reference._model.llm import LlmProvider, LlmRequest, StreamChunk
from relavium_reference._model.vocabulary import ProviderId

__all__ = ["COMPACTION_BREAKS_3"]


class _EstimateWrapper:
    """A provider whose own estimator is hidden (``estimate`` None) or replaced."""

    def __init__(self, inner: LlmProvider, estimate: Callable[[LlmProvider, LlmRequest], Any] | None) -> None:
        self._inner = inner
        self._estimate = estimate

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._inner.stream(request)

    def stream_invocation(self, request: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        return open_stream(self._inner, request, invocation)


class _Estimating(_EstimateWrapper):
    async def estimate_tokens(self, request: LlmRequest) -> int:
        assert self._estimate is not None
        return int(await self._estimate(self._inner, request))


def _wrap_estimates(job: CompactionJob, estimate: Callable[[LlmProvider, LlmRequest], Any] | None) -> None:
    resolve = job.resolve_provider

    def resolved(provider: ProviderId, model: str) -> LlmProvider:
        inner = resolve(provider, model)
        if estimate is None:
            return _EstimateWrapper(inner, None)
        return _Estimating(inner, estimate)

    job.resolve_provider = resolved


class _SkipsTheEstimate(_JobBreak):
    """Installs without asking the provider's own estimator about the prospective history."""

    def _bend(self, job: CompactionJob) -> None:
        _wrap_estimates(job, None)


def _shielded(step: Callable[[], Any], late: dict[str, bool]) -> Any:
    """Await ``step()`` through a cancel (recording it in ``late``) instead of being interrupted."""

    async def run() -> Any:
        future = asyncio.ensure_future(step())
        while True:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                if future.done():
                    raise
                late["cancel"] = True
                asyncio.current_task().uncancel()  # type: ignore[union-attr]

    return run()


def _forgetting(job: CompactionJob, late: dict[str, bool]) -> None:
    cancelled = job.cancelled
    job.cancelled = lambda: False if late["cancel"] else cancelled()


class _EstimateNotRechecked(_JobBreak):
    """Finishes the estimate through a cancel and does not recheck it: the marker is still written."""

    def _bend(self, job: CompactionJob) -> None:
        late = {"cancel": False}

        async def estimate(inner: LlmProvider, request: LlmRequest) -> int:
            return int(await _shielded(lambda: inner.estimate_tokens(request), late))  # type: ignore[attr-defined]

        _wrap_estimates(job, estimate)
        _forgetting(job, late)


class _FailingEstimateFails(_JobBreak):
    """A failing provider estimator fails the compaction."""

    def _bend(self, job: CompactionJob) -> None:
        failed = {"estimate": False}
        append = job.append_boundary

        async def estimate(inner: LlmProvider, request: LlmRequest) -> int:
            try:
                return int(await inner.estimate_tokens(request))  # type: ignore[attr-defined]
            except Exception:
                failed["estimate"] = True
                raise

        async def refuse(kept_slots: int, text: str) -> None:
            if failed["estimate"]:
                raise RuntimeError("the estimate failed")
            await append(kept_slots, text)

        _wrap_estimates(job, estimate)
        job.append_boundary = refuse


class _AbortReachesCompaction(AgentSession):
    """``abort`` while a compaction runs cancels it, even after its summary came back."""

    def abort(self) -> None:
        task = self._compaction_task
        if task is not None and not task.done():
            task.cancel()
            return
        super().abort()


class _MarkerCommitNotRechecked(_JobBreak):
    """Finishes the marker commit through a cancel and installs the summary anyway."""

    def _bend(self, job: CompactionJob) -> None:
        late = {"cancel": False}
        append = job.append_boundary

        async def through(kept_slots: int, text: str) -> None:
            await _shielded(lambda: append(kept_slots, text), late)

        job.append_boundary = through
        _forgetting(job, late)


class _MarkerFailureInstalls(_JobBreak):
    """A failed marker append is ignored: the summary is installed without a durable boundary."""

    def _bend(self, job: CompactionJob) -> None:
        append = job.append_boundary

        async def ignore(kept_slots: int, text: str) -> None:
            try:
                await append(kept_slots, text)
            except asyncio.CancelledError:
                raise
            except Exception:
                return

        job.append_boundary = ignore


class _KeptTurnCountRepliesOnly(_JobBreak):
    """``keptTurnCount`` counts only kept exchanges with a nonempty reply (no legacy slot, no empty final)."""

    def _bend(self, job: CompactionJob) -> None:
        inner, exchanges = job.stamper, job.exchanges

        def replies(kept: int) -> int:
            return sum(1 for e in exchanges[len(exchanges) - kept :] if e.assistant)

        class _Counting:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                if event_type is SessionCompacted:
                    payload["kept_turn_count"] = replies(payload["kept_turn_count"])
                return await inner.emit(event_type, **payload)

        job.stamper = _Counting()  # type: ignore[assignment]


class _ObserverOriginLost(_JobBreak):
    """The compaction's notifications lose their failures' origin: ``to_failed`` turns a raw failure into a
    classified one (a fixed failed result); otherwise a classified one is rethrown as raw."""

    to_failed = False

    def _bend(self, job: CompactionJob) -> None:
        inner, to_failed = job.stamper, self.to_failed

        class _Relabel:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                try:
                    return await inner.emit(event_type, **payload)
                except ObserverError as failure:
                    if to_failed:
                        raise
                    raise RuntimeError(str(failure)) from None
                except Exception as failure:
                    if to_failed:
                        raise ObserverError(str(failure)) from None
                    raise

        job.stamper = _Relabel()  # type: ignore[assignment]


class _RawObserverFailureFails(_ObserverOriginLost):
    to_failed = True


class _ResolutionNotRechecked(_JobBreak):
    """Finishes resolving the providers through a cancel and does not recheck it: it goes on to the passes."""

    def _bend(self, job: CompactionJob) -> None:
        late = {"cancel": False}
        prepare = job.prepare_provider
        if prepare is None:
            return

        async def through(provider: ProviderId, model: str) -> None:
            await _shielded(lambda: prepare(provider, model), late)

        job.prepare_provider = through
        _forgetting(job, late)


class _ResultShapeRenamed(ReferenceImplementation):
    """Answers ``session.compact`` with ``keptTurns`` instead of ``keptTurnCount`` and a message on every
    result (the KD-COMP-5 shapes left)."""

    async def on_session_compact(self, params: HandleParams) -> Any:
        result = dict(await super().on_session_compact(params))
        if "keptTurnCount" in result:
            result["keptTurns"] = result.pop("keptTurnCount")
        result.setdefault("message", "compaction finished")
        return result


class _CompactedEventRenamed(ReferenceImplementation):
    """Publishes ``session:compacted`` with ``usage`` instead of ``tokensUsed`` (off the event schema)."""

    def __init__(self, callback: Callback, **kwargs: Any) -> None:
        async def tampered(method: str, params: dict[str, Any]) -> Any:
            event = params.get("event") if method == "host.emit" else None
            if isinstance(event, dict) and event.get("type") == "session:compacted":
                event = dict(event)
                event["usage"] = event.pop("tokensUsed", None)
                params = {**params, "event": event}
            return await callback(method, params)

        super().__init__(tampered, **kwargs)


class _KeptTurnCountWithPendingUser(_JobBreak):
    """Counts the pending user of a turn as a kept slot: ``keptTurnCount`` and the marker keep one more."""

    def _bend(self, job: CompactionJob) -> None:
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


def _b(name: str, rule: str, clauses: tuple[str, ...], session: type[AgentSession]) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, session)


COMPACTION_BREAKS_3: tuple[BrokenImplementation, ...] = (
    _b(
        "compaction-skips-the-estimate",
        "the prospective history is installed without the provider's own estimate",
        ("AS-OBS-028",),
        _SkipsTheEstimate,
    ),
    _b(
        "compaction-estimate-not-rechecked",
        "a cancel during the estimate is not rechecked: the marker is written and the summary installed",
        ("AS-OBS-029", "AS-COMP-023"),
        _EstimateNotRechecked,
    ),
    _b(
        "compaction-failing-estimate-fails",
        "a failing provider estimator fails the compaction",
        ("AS-OBS-030",),
        _FailingEstimateFails,
    ),
    _b(
        "compaction-abort-reaches-compaction",
        "an abort while a compaction runs cancels it, even after its summary came back",
        ("AS-OBS-031", "AS-OBS-022"),
        _AbortReachesCompaction,
    ),
    _b(
        "compaction-marker-commit-not-rechecked",
        "a cancel during the marker commit is not rechecked: the summary is installed and announced",
        ("AS-COMP-036",),
        _MarkerCommitNotRechecked,
    ),
    _b(
        "compaction-marker-failure-installs",
        "a failed marker append is ignored and the summary installed without a durable boundary",
        ("AS-COMP-022", "AS-COMP-023"),
        _MarkerFailureInstalls,
    ),
    _b(
        "kept-turn-count-replies-only",
        "keptTurnCount counts only kept exchanges with a nonempty reply, not legacy slots or empty finals",
        ("AS-COMP-025",),
        _KeptTurnCountRepliesOnly,
    ),
    _b(
        "compaction-classified-observer-failure-rejects",
        "a classified failure of a compaction notification rejects instead of giving the fixed failed result",
        ("AS-OBS-011", "AS-OBS-012"),
        _ObserverOriginLost,
    ),
    _b(
        "compaction-raw-observer-failure-fails",
        "a raw failure of a compaction notification becomes a failed result, not the original rejection",
        ("AS-OBS-011", "AS-OBS-012"),
        _RawObserverFailureFails,
    ),
    _b(
        "compaction-resolution-not-rechecked",
        "a cancel while the providers are resolved is not rechecked: the next entry is resolved and called",
        ("AS-OBS-020", "AS-OBS-021"),
        _ResolutionNotRechecked,
    ),
    _b(
        "kept-turn-count-counts-the-pending-user",
        "a compaction before a turn counts the pending user as a kept turn (keptTurnCount and the marker)",
        ("AS-COMP-025",),
        _KeptTurnCountWithPendingUser,
    ),
    BrokenImplementation(
        "compaction-result-shape-renamed",
        "session.compact answers keptTurns instead of keptTurnCount, and a message on every result",
        ("AS-COMP-040",),
        implementation=_ResultShapeRenamed,
    ),
    BrokenImplementation(
        "compacted-event-off-the-schema",
        "session:compacted carries usage instead of tokensUsed",
        ("AS-COMP-048",),
        implementation=_CompactedEventRenamed,
    ),
)
