"""The engine schedules the close of each provider stream it stops reading (``_host/provider_stream``).

The provider here keeps a strong reference to every stream it hands out, so nothing but the engine can
close one: without the scheduled close, a stream stopped at its stop chunk would stay suspended (and an
HTTP dialect's response open) for as long as the provider lives.  The close starts on the loop's next
turn and the attempt never waits for it: a cleanup that never ends cannot hang the turn, and an abort
that lands while it runs cannot lose the round's usage write.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tests.reference.enginekit import make_session, run

from relavium_reference._host.provider_stream import close_soon, closing
from relavium_reference._model.history_results import Compacted
from relavium_reference._model.invocation import ModelInfo
from relavium_reference._model.llm import (
    LlmError,
    LlmRequest,
    StopChunk,
    StreamChunk,
    StreamErrorChunk,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from relavium_reference._model.vocabulary import LlmErrorKind


def _reply(text: str) -> list[StreamChunk]:
    return [
        TextDelta(text=text),
        StopChunk(stop_reason="stop", usage=Usage(input_tokens=20, output_tokens=2)),
    ]


class _KeepingProvider:
    """Plays one script per call; every stream is kept, and each stream's cleanup is logged."""

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


async def _next_turn_of_the_loop() -> None:
    await asyncio.sleep(0)


async def _within_loop_turns(work: Any, turns: int = 2000) -> Any:
    """``await work``, failing (not hanging) if it has not finished within ``turns`` turns of the loop.

    These sessions do no I/O, so a turn that does not wait on its provider's cleanup finishes within a
    bounded number of loop turns; one that waits on a cleanup that never ends never does.  Counted in
    loop turns, not seconds: nothing here depends on timing."""
    task = asyncio.ensure_future(work)
    for _ in range(turns):
        if task.done():
            return task.result()
        await asyncio.sleep(0)
    task.cancel()
    raise AssertionError(f"not finished within {turns} turns of the loop")


def test_a_turn_schedules_the_close_of_its_stream() -> None:
    log: list[str] = []
    provider = _KeepingProvider([_reply("one"), _reply("two")], log)
    h = make_session(provider)

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("first")
        await _next_turn_of_the_loop()
        log.append("after turn 1")
        await h.session.send_message("second")
        await _next_turn_of_the_loop()
        log.append("after turn 2")

    run(scenario())
    assert log == ["closed 0", "after turn 1", "closed 1", "after turn 2"]
    assert all(_closed(stream) for stream in provider.streams)


def test_a_stream_error_closes_the_stream_too() -> None:
    log: list[str] = []
    failure = StreamErrorChunk(error=LlmError(kind=LlmErrorKind.UNKNOWN, message="boom"))
    provider = _KeepingProvider([[TextDelta(text="partial"), failure]], log)
    h = make_session(provider)

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("first")
        await _next_turn_of_the_loop()
        log.append("after")

    run(scenario())
    assert log == ["closed 0", "after"]
    assert _closed(provider.streams[0])


def test_a_compaction_pass_schedules_the_close_of_its_stream() -> None:
    log: list[str] = []
    provider = _KeepingProvider([_reply("one"), _reply("two"), _reply("a summary")], log)
    h = make_session(provider, models={"model-a": ModelInfo(context_window=100000)})

    async def scenario() -> Any:
        await h.session.start()
        await h.session.send_message("first")
        await h.session.send_message("second")
        await _next_turn_of_the_loop()
        log.append("before compact")
        result = await h.session.compact()
        await _next_turn_of_the_loop()
        log.append("after compact")
        return result

    run(scenario())
    assert len(provider.streams) == 3  # the pass did call the provider
    assert log[-3:] == ["before compact", "closed 2", "after compact"]
    assert all(_closed(stream) for stream in provider.streams)


class _HangingCleanup(_KeepingProvider):
    """A provider whose cleanup never ends (until the test lets it)."""

    def __init__(self, calls: Sequence[Sequence[StreamChunk]], log: list[str]) -> None:
        super().__init__(calls, log)
        self.release = asyncio.Event()

    async def _play(self, number: int, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
        try:
            for chunk in chunks:
                yield chunk
        finally:
            self.log.append(f"cleanup {number} started")
            await self.release.wait()
            self.log.append(f"cleanup {number} ended")


def test_a_cleanup_that_never_ends_does_not_hold_the_turn() -> None:
    log: list[str] = []
    provider = _HangingCleanup([_reply("one")], log)
    h = make_session(provider)

    async def scenario() -> Any:
        before = closing()
        await h.session.start()
        result = await _within_loop_turns(h.session.send_message("first"))
        log.append(f"answered {result.status}")
        await _next_turn_of_the_loop()
        still = closing() - before
        provider.release.set()
        for _ in range(5):
            await _next_turn_of_the_loop()
        return still

    still = run(scenario())
    assert still == 1  # the cleanup was still running when the turn had answered
    assert log == ["cleanup 0 started", "answered completed", "cleanup 0 ended"] or log == [
        "answered completed",
        "cleanup 0 started",
        "cleanup 0 ended",
    ]


def test_an_abort_while_a_tool_rounds_stream_is_cleaned_up_keeps_the_rounds_usage() -> None:
    """The cleanup of the tool-use attempt's stream aborts the session and then waits: the round's usage
    write must still start, settle and be published (KD-USE-1)."""

    class _Writer:
        def __init__(self) -> None:
            self.settled: list[int] = []

        async def open(self, basis: Any) -> Any:
            from relavium_reference._model.usage_writer import UsageTotals

            return UsageTotals()

        async def pending(self, record: Any) -> None:
            return None

        async def resolved(self, record: Any) -> Any:
            from relavium_reference._model.usage_writer import UsageSettled, UsageTotals

            self.settled.append(record.attempt)
            return UsageSettled(cost_microcents=40, priced=True, totals=UsageTotals(amount_microcents=40))

    writer = _Writer()
    h: Any = None
    release = asyncio.Event()

    class _AbortingCleanup(_KeepingProvider):
        async def _play(self, number: int, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
            try:
                for chunk in chunks:
                    yield chunk
            finally:
                h.session.abort()
                await release.wait()

    round_chunks: list[StreamChunk] = [
        ToolCallStart(id="call-1", name="echo"),
        ToolCallDelta(id="call-1", args_json_delta="{}"),
        ToolCallEnd(id="call-1"),
        StopChunk(stop_reason="tool_use", usage=Usage(input_tokens=7, output_tokens=3)),
    ]
    provider = _AbortingCleanup([round_chunks, _reply("after")], [])
    h = make_session(provider, usage_writer=writer)

    async def scenario() -> Any:
        await h.session.start()
        result = await _within_loop_turns(h.session.send_message("go"))
        release.set()
        await _next_turn_of_the_loop()
        return result

    result = run(scenario())
    assert writer.settled == [1], "the tool round's usage was never resolved"
    costs = [e for e in h.events if e.type == "cost:updated"]
    assert costs, "the tool round's cost was never published"
    assert result.status == "aborted"  # the abort did land, while the stream's cleanup was running


def test_a_compaction_pass_does_not_wait_for_a_cleanup_that_never_ends() -> None:
    log: list[str] = []
    provider = _HangingCleanup([_reply("one"), _reply("two"), _reply("a summary")], log)
    h = make_session(provider, models={"model-a": ModelInfo(context_window=100000)})

    async def scenario() -> tuple[Any, int]:
        before = closing()
        await h.session.start()
        await _within_loop_turns(h.session.send_message("first"))
        await _within_loop_turns(h.session.send_message("second"))
        result = await _within_loop_turns(h.session.compact())
        still = closing() - before
        provider.release.set()
        for _ in range(5):
            await _next_turn_of_the_loop()
        return result, still

    result, still = run(scenario())
    assert len(provider.streams) == 3  # the pass did call the provider
    assert isinstance(result, Compacted)
    assert still == 3  # every cleanup, the pass's included, was still running when compact answered
    assert log.count("cleanup 2 ended") == 1


class _SyncCancelledClose:
    """A stream whose ``aclose`` is a plain function that raises ``CancelledError`` when called."""

    def __init__(self, chunks: list[StreamChunk]) -> None:
        self._chunks = iter(chunks)

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> StreamChunk:
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None

    def aclose(self) -> Any:
        raise asyncio.CancelledError


def test_what_a_providers_cleanup_raises_never_reaches_the_turn() -> None:
    class _Provider:
        def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
            return _SyncCancelledClose(_reply("kept"))

    h = make_session(_Provider())

    async def scenario() -> Any:
        await h.session.start()
        result = await _within_loop_turns(h.session.send_message("first"))
        for _ in range(3):
            await _next_turn_of_the_loop()
        return result

    result = run(scenario())
    assert result.status == "completed"
    assert [e.type for e in h.events].count("session:turn_completed") == 1


def test_closing_drops_the_providers_own_cleanup_failure_and_skips_what_cannot_close() -> None:
    import gc

    class _FailingClose:
        def __init__(self, error: BaseException) -> None:
            self.closed = False
            self.error = error

        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> StreamChunk:
            raise StopAsyncIteration

        async def aclose(self) -> None:
            self.closed = True
            raise self.error

    class _NoClose:
        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> StreamChunk:
            raise StopAsyncIteration

    async def scenario() -> tuple[bool, int, list[str]]:
        before = closing()
        reported: list[str] = []
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: reported.append(str(context.get("message"))))
        failing = [
            _FailingClose(RuntimeError("the provider's cleanup failed")),
            _FailingClose(GeneratorExit()),
        ]
        for stream in failing:
            close_soon(stream)
        close_soon(_NoClose())  # nothing to close: nothing scheduled, no error
        for _ in range(3):
            await _next_turn_of_the_loop()
        gc.collect()  # a task whose exception nobody retrieved reports it when it is collected
        return all(stream.closed for stream in failing), closing() - before, reported

    closed, left, reported = run(scenario())
    assert closed
    assert left == 0
    assert reported == []  # nothing escaped as an unretrieved task exception
