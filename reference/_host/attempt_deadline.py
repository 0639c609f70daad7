"""The attempt deadline: how long one provider attempt may take, whatever the provider sends.

A provider attempt (a turn's or a compaction pass's) reads its provider's stream until a stop or an error
chunk.  A provider that sends nothing, trickles a byte at a time, or streams tokens without end would hold
the turn as long as it likes; the session bounds every attempt twice (:class:`AttemptDeadline`, a session
dependency): ``idle``, the longest wait for the next chunk, and ``total``, the longest attempt from its
invocation.  Whichever passes first ends the attempt with a ``timeout`` error chunk (retryable, session code
``provider_unavailable``), as a vendor's own timeout would, and the provider's stream is closed.

The bound is applied where the session resolves its providers (:func:`bounded_resolver`): every provider
the session reaches, whatever its kind, streams through :class:`_BoundedProvider`.  The deadline counts the
time the engine spends on the chunks too: ``total`` is wall-clock time on the loop's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.invocation import EstimatingProvider, Invocation, open_stream
from relavium_reference._model.llm import (
    LlmError,
    LlmProvider,
    LlmRequest,
    StreamChunk,
    StreamErrorChunk,
)
from relavium_reference._model.vocabulary import LlmErrorKind, ProviderId

__all__ = ["DEFAULT_ATTEMPT_DEADLINE", "AttemptDeadline", "bounded_resolver", "bounded_stream"]


@dataclass(frozen=True)
class AttemptDeadline:
    """How long one provider attempt may take, in seconds: ``idle`` between two chunks (and before the
    first), ``total`` from the invocation to its last chunk.  Defaults: 60 s and 600 s."""

    idle: float = 60.0
    total: float = 600.0

    def __post_init__(self) -> None:
        for name in ("idle", "total"):
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                message = "must be a positive finite number"
                raise InvalidInputError(message, location=f"attemptDeadline.{name}")


DEFAULT_ATTEMPT_DEADLINE = AttemptDeadline()


class _Watchdog:
    """One timer per attempt, not one per chunk: it wakes at the next moment the deadline could pass and,
    if the attempt is then waiting on its provider past ``idle`` or ``total``, cancels that wait."""

    def __init__(self, loop: asyncio.AbstractEventLoop, deadline: AttemptDeadline) -> None:
        self.loop = loop
        self.idle = deadline.idle
        self.due = loop.time() + deadline.total
        self.since = 0.0  # when the current wait began
        self.waiting: asyncio.Task[Any] | None = None  # the task waiting on the provider, if it is
        self.fired: str | None = None
        self._timer = loop.call_at(min(self.due, loop.time() + self.idle), self._check)

    def _check(self) -> None:
        now = self.loop.time()
        if self.waiting is not None:
            if now >= self.due or now >= self.since + self.idle:
                self.fired = "total" if now >= self.due else "idle"
                self.waiting.cancel()
                return
            wake = min(self.due, self.since + self.idle)
        else:
            wake = min(self.due, now + self.idle)
        self._timer = self.loop.call_at(wake, self._check)

    def close(self) -> None:
        self._timer.cancel()


def _timed_out(provider: str, fired: str, deadline: AttemptDeadline) -> StreamErrorChunk:
    if fired == "idle":
        message = f"no chunk for {deadline.idle:g} s"
    else:
        message = f"the attempt passed its {deadline.total:g} s deadline"
    return StreamErrorChunk(error=LlmError(kind=LlmErrorKind.TIMEOUT, message=message, provider=provider))


async def bounded_stream(
    chunks: AsyncIterator[StreamChunk], deadline: AttemptDeadline, provider: str
) -> AsyncGenerator[StreamChunk, None]:
    """``chunks`` as they come, until the stream ends or the deadline passes (then one ``timeout`` error
    chunk ends it); the provider's stream is closed when this one is."""
    iterator = chunks.__aiter__()
    watch = _Watchdog(asyncio.get_running_loop(), deadline)
    try:
        while True:
            if watch.loop.time() >= watch.due:
                yield _timed_out(provider, "total", deadline)
                return
            task = asyncio.current_task()
            watch.since = watch.loop.time()
            watch.waiting = task
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if watch.fired is None or task is None or task.uncancel() > 0:
                    raise  # not (only) the deadline's: the attempt itself is cancelled
                yield _timed_out(provider, watch.fired, deadline)
                return
            finally:
                watch.waiting = None
            if watch.fired is not None:  # the provider swallowed the deadline's cancel
                if task is not None:
                    task.uncancel()
                yield _timed_out(provider, watch.fired, deadline)
                return
            yield chunk
    finally:
        watch.close()
        close = getattr(iterator, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # the provider's cleanup, not the attempt's outcome
                await close()


class _BoundedProvider:
    """A provider whose every stream is bounded by the deadline (the invocation's purpose passes on)."""

    def __init__(self, inner: LlmProvider, deadline: AttemptDeadline, name: str) -> None:
        self._inner = inner
        self._deadline = deadline
        self._name = name

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return bounded_stream(self._inner.stream(request), self._deadline, self._name)

    def stream_invocation(self, request: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        return bounded_stream(open_stream(self._inner, request, invocation), self._deadline, self._name)


class _BoundedEstimatingProvider(_BoundedProvider):
    """The same, for a provider with its own token estimator (kept visible to the compaction)."""

    async def estimate_tokens(self, request: LlmRequest) -> int:
        inner: Any = self._inner
        result: int = await inner.estimate_tokens(request)
        return result


def bounded_resolver(
    resolve: Callable[[ProviderId, str], LlmProvider], deadline: AttemptDeadline
) -> Callable[[ProviderId, str], LlmProvider]:
    """``resolve`` whose providers stream within ``deadline``; what ``resolve`` raises passes unchanged."""

    def resolved(provider: ProviderId, model: str) -> LlmProvider:
        inner = resolve(provider, model)
        name = getattr(provider, "value", str(provider))
        if isinstance(inner, EstimatingProvider):
            return _BoundedEstimatingProvider(inner, deadline, name)
        return _BoundedProvider(inner, deadline, name)

    return resolved
