"""The attempt deadline (``_host/attempt_deadline.py``) on providers that are no HTTP at all.

The watchdog cancels only a wait on the provider, and only its own cancel becomes a ``timeout`` chunk: a
cancel from outside (the session's abort or cancel) still cancels the attempt; a provider that swallows the
deadline's cancel still ends at it; the time the consumer spends between chunks counts toward ``total`` but
never toward ``idle``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from relavium_reference._host.attempt_deadline import AttemptDeadline, bounded_stream
from relavium_reference._model.llm import StreamChunk, StreamErrorChunk, TextDelta
from relavium_reference._model.vocabulary import LlmErrorKind

QUICK = AttemptDeadline(idle=0.2, total=0.6)


async def _silent() -> AsyncIterator[StreamChunk]:
    await asyncio.sleep(3600)
    yield TextDelta(text="never")


async def _stubborn() -> AsyncIterator[StreamChunk]:
    """Swallows every cancel and answers late."""
    while True:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.3)
        yield TextDelta(text="late")


async def _steady(pause: float) -> AsyncIterator[StreamChunk]:
    while True:
        yield TextDelta(text="t")
        await asyncio.sleep(pause)


def _last(chunks: list[StreamChunk]) -> StreamErrorChunk:
    last = chunks[-1]
    assert isinstance(last, StreamErrorChunk)
    assert last.error.kind is LlmErrorKind.TIMEOUT
    return last


def test_a_silent_provider_ends_at_idle_and_the_task_is_not_left_cancelled() -> None:
    async def main() -> list[StreamChunk]:
        chunks = [chunk async for chunk in bounded_stream(_silent(), QUICK, "p")]
        await asyncio.sleep(0)  # the task goes on: no cancel is left pending on it
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0
        return chunks

    assert "no chunk for 0.2 s" in _last(asyncio.run(main())).error.message


def test_a_provider_that_swallows_the_cancel_still_ends_at_the_deadline() -> None:
    async def main() -> list[StreamChunk]:
        return [chunk async for chunk in bounded_stream(_stubborn(), QUICK, "p")]

    chunks = asyncio.run(main())
    assert "no chunk for 0.2 s" in _last(chunks).error.message
    assert len(chunks) == 1


def test_the_consumers_own_time_counts_toward_total_not_idle() -> None:
    async def main() -> list[StreamChunk]:
        seen: list[StreamChunk] = []
        async for chunk in bounded_stream(_steady(0.0), QUICK, "p"):
            seen.append(chunk)
            await asyncio.sleep(0.25)  # longer than idle, between chunks: not the provider's wait
        return seen

    chunks = asyncio.run(main())
    assert "passed its 0.6 s deadline" in _last(chunks).error.message
    assert len(chunks) >= 3


def test_a_cancel_from_outside_cancels_the_attempt() -> None:
    async def main() -> None:
        async def consume() -> list[StreamChunk]:
            return [chunk async for chunk in bounded_stream(_silent(), AttemptDeadline(), "p")]

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
