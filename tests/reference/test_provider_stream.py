"""The engine closes each provider stream it stops reading, inside the attempt (``_host/provider_stream``).

The provider here keeps a strong reference to every stream it hands out, so nothing but the engine can
close one: without the explicit close, a stream stopped at its stop chunk would stay suspended (and an
HTTP dialect's response open) for as long as the provider lives.  The log shows where each stream's
cleanup ran relative to the events of the same attempt, so the order is fixed by the engine, not by the
collector.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from enginekit import make_session, run

from relavium_reference._host.provider_stream import close_stream
from relavium_reference._model.invocation import ModelInfo
from relavium_reference._model.llm import (
    LlmError,
    LlmRequest,
    StopChunk,
    StreamChunk,
    StreamErrorChunk,
    TextDelta,
    Usage,
)
from relavium_reference._model.vocabulary import LlmErrorKind


def _reply(text: str) -> list[StreamChunk]:
    return [
        TextDelta(text=text),
        StopChunk(stop_reason="stop", usage=Usage(input_tokens=20, output_tokens=2)),
    ]


class _KeepingProvider:
    """Plays one script per call; every stream is kept, and what each stream's cleanup did is logged."""

    def __init__(self, calls: Sequence[Sequence[StreamChunk]], log: list[str]) -> None:
        self.calls = [list(call) for call in calls]
        self.log = log
        self.streams: list[Any] = []

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        number = len(self.streams)
        stream = self._play(number, self.calls.pop(0))
        self.streams.append(stream)
        return stream

    async def _play(self, number: int, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
        try:
            for chunk in chunks:
                yield chunk
            yield TextDelta(text="past the stop: never read")
        finally:
            self.log.append(f"closed {number}")


def _closed(stream: Any) -> bool:
    return stream.ag_frame is None  # an async generator that finished or was closed has no frame


def test_a_turn_closes_its_stream_before_it_answers() -> None:
    log: list[str] = []
    provider = _KeepingProvider([_reply("one"), _reply("two")], log)
    h = make_session(provider)

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("first")
        log.append("answered 1")
        await h.session.send_message("second")
        log.append("answered 2")

    run(scenario())
    assert log == ["closed 0", "answered 1", "closed 1", "answered 2"]
    assert all(_closed(stream) for stream in provider.streams)


def test_a_stream_error_closes_the_stream_too() -> None:
    log: list[str] = []
    failure = StreamErrorChunk(error=LlmError(kind=LlmErrorKind.UNKNOWN, message="boom"))
    provider = _KeepingProvider([[TextDelta(text="partial"), failure]], log)
    h = make_session(provider)

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("first")
        log.append("answered")

    run(scenario())
    assert log == ["closed 0", "answered"]
    assert _closed(provider.streams[0])


def test_a_compaction_pass_closes_its_stream_before_the_compaction_answers() -> None:
    log: list[str] = []
    provider = _KeepingProvider([_reply("one"), _reply("two"), _reply("a summary")], log)
    h = make_session(provider, models={"model-a": ModelInfo(context_window=100000)})

    async def scenario() -> Any:
        await h.session.start()
        await h.session.send_message("first")
        await h.session.send_message("second")
        log.append("before compact")
        result = await h.session.compact()
        log.append("compacted")
        return result

    run(scenario())
    assert len(provider.streams) == 3  # the pass did call the provider
    assert log[-3:] == ["before compact", "closed 2", "compacted"]
    assert all(_closed(stream) for stream in provider.streams)


class _FailingClose:
    """A stream whose cleanup raises: the attempt's outcome must not change."""

    def __init__(self) -> None:
        self.closed = False

    def __aiter__(self) -> _FailingClose:
        return self

    async def __anext__(self) -> StreamChunk:
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closed = True
        raise RuntimeError("the provider's cleanup failed")


class _NoClose:
    def __aiter__(self) -> _NoClose:
        return self

    async def __anext__(self) -> StreamChunk:
        raise StopAsyncIteration


def test_closing_drops_the_providers_own_cleanup_failure_and_skips_what_cannot_close() -> None:
    failing = _FailingClose()
    run(close_stream(failing))
    assert failing.closed
    run(close_stream(_NoClose()))  # nothing to close: no error


def test_closing_lets_cancellation_through() -> None:
    import asyncio

    class _Cancelled(_NoClose):
        async def aclose(self) -> None:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        run(close_stream(_Cancelled()))
