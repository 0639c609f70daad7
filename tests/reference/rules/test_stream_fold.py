"""The fold of one attempt's stream (``_rules/stream_fold``), driven synchronously with Hypothesis.

Properties: any chunk sequence folds without raising; splitting a text, reasoning or argument delta into
several deltas of the same text never changes the result; nothing after the end changes it; the echo of
a sequence is exactly its text and reasoning deltas in order.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from relavium_reference._model.llm import (
    LlmError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StopChunk,
    StreamErrorChunk,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from relavium_reference._model.vocabulary import LlmErrorKind, StopReason
from relavium_reference._rules.stream_fold import (
    CallDraft,
    Echo,
    ReasoningBlock,
    RoundFold,
    echo,
    fold_chunk,
    fold_chunks,
)

ids = st.sampled_from(["a", "b", "c"])
texts = st.text(max_size=6)
json_bits = st.sampled_from(['{"x":', " 1", "}", "[", "]", "", " ", "nul", "l", '"s"', ","])
usages = st.builds(
    lambda i, o: Usage(input_tokens=i, output_tokens=o), st.integers(0, 50), st.integers(0, 50)
)
middle_chunks = st.one_of(
    st.builds(lambda t: TextDelta(text=t), texts),
    st.builds(lambda i: ReasoningStart(id=i), ids),
    st.builds(lambda i, t: ReasoningDelta(id=i, text=t), ids, texts),
    st.builds(lambda i, s: ReasoningEnd(id=i, signature=s), ids, st.one_of(st.none(), texts)),
    st.builds(lambda i, n: ToolCallStart(id=i, name=n), ids, st.sampled_from(["read", "write"])),
    st.builds(lambda i, d: ToolCallDelta(id=i, args_json_delta=d), ids, json_bits),
    st.builds(lambda i: ToolCallEnd(id=i), ids),
    st.just(object()),  # a value of no chunk type: ignored
)
end_chunks = st.one_of(
    st.builds(lambda r, u: StopChunk(stop_reason=r, usage=u), st.sampled_from(list(StopReason)), usages),
    st.builds(
        lambda k, u: StreamErrorChunk(error=LlmError(kind=k), usage=u),
        st.sampled_from(list(LlmErrorKind)),
        st.one_of(st.none(), usages),
    ),
)
streams = st.tuples(st.lists(middle_chunks, max_size=25), st.one_of(st.none(), end_chunks))


def _chunks(stream: tuple[list[object], object | None]) -> list[object]:
    middle, end = stream
    return [*middle, end] if end is not None else list(middle)


def _split(chunk: object, at: int) -> list[object]:
    """The same delta as two deltas (``at`` picks the cut); any other chunk as it is."""
    if isinstance(chunk, TextDelta):
        cut = at % (len(chunk.text) + 1)
        return [TextDelta(text=chunk.text[:cut]), TextDelta(text=chunk.text[cut:])]
    if isinstance(chunk, ReasoningDelta):
        cut = at % (len(chunk.text) + 1)
        return [
            ReasoningDelta(id=chunk.id, text=chunk.text[:cut]),
            ReasoningDelta(id=chunk.id, text=chunk.text[cut:]),
        ]
    if isinstance(chunk, ToolCallDelta):
        cut = at % (len(chunk.args_json_delta) + 1)
        text = chunk.args_json_delta
        return [
            ToolCallDelta(id=chunk.id, args_json_delta=text[:cut]),
            ToolCallDelta(id=chunk.id, args_json_delta=text[cut:]),
        ]
    return [chunk]


def _comparable(state: RoundFold) -> tuple[Any, ...]:
    return (state.text, state.reasoning, state.calls, state.end)


@given(streams)
def test_any_chunk_sequence_folds_without_raising(stream: tuple[list[object], object | None]) -> None:
    state = fold_chunks(_chunks(stream))
    assert (state.end is None) == (stream[1] is None)
    assert state.streamed == bool(state.text or state.calls)


@given(streams, st.lists(st.integers(min_value=0, max_value=10**6), max_size=25))
def test_splitting_deltas_never_changes_the_result(
    stream: tuple[list[object], object | None], cuts: list[int]
) -> None:
    chunks = _chunks(stream)
    split: list[object] = []
    for index, chunk in enumerate(chunks):
        split += _split(chunk, cuts[index]) if index < len(cuts) else [chunk]
    assert _comparable(fold_chunks(split)) == _comparable(fold_chunks(chunks))


@given(streams, end_chunks, st.lists(middle_chunks, max_size=10))
def test_nothing_after_the_end_changes_the_result(
    stream: tuple[list[object], object | None], end: object, after: list[object]
) -> None:
    ended = fold_chunks([*stream[0], end])
    assert fold_chunks([*after, end], ended) is ended


@given(streams, st.integers(min_value=0, max_value=30))
def test_folding_in_two_parts_is_folding_the_whole(
    stream: tuple[list[object], object | None], cut: int
) -> None:
    chunks = _chunks(stream)
    assert fold_chunks(chunks[cut:], fold_chunks(chunks[:cut])) == fold_chunks(chunks)


@given(streams)
def test_the_text_and_the_echo_are_the_deltas_in_order(stream: tuple[list[object], object | None]) -> None:
    chunks = _chunks(stream)
    state = fold_chunks(chunks)
    assert state.text == "".join(c.text for c in chunks if isinstance(c, TextDelta))
    expected = [
        Echo("token", c.text) if isinstance(c, TextDelta) else Echo("reasoning", c.text)
        for c in chunks
        if isinstance(c, (TextDelta, ReasoningDelta))
    ]
    assert [e for e in map(echo, chunks) if e is not None] == expected


def test_a_round_with_reasoning_and_two_calls() -> None:
    state = fold_chunks(
        [
            ReasoningStart(id="r"),
            ReasoningDelta(id="r", text="thin"),
            ReasoningDelta(id="r", text="king"),
            ReasoningEnd(id="r", signature="sig"),
            TextDelta(text="Let me look."),
            ToolCallStart(id="c1", name="read"),
            ToolCallDelta(id="c1", args_json_delta='{"path":'),
            ToolCallDelta(id="c1", args_json_delta=' "a.txt"}'),
            ToolCallEnd(id="c1"),
            ToolCallStart(id="c2", name="write"),
            ToolCallEnd(id="c2"),
            StopChunk(stop_reason="tool_use", usage=Usage(input_tokens=3, output_tokens=4)),
            TextDelta(text="after the end"),
        ]
    )
    assert state.reasoning == (ReasoningBlock("thinking", "sig"),)
    assert state.text == "Let me look."
    assert state.calls == (
        CallDraft("c1", "read", '{"path": "a.txt"}', {"path": "a.txt"}, True),
        CallDraft("c2", "write", "", {}, True),
    )
    assert isinstance(state.end, StopChunk)
    assert state.end.stop_reason is StopReason.TOOL_USE


def test_unknown_ids_are_dropped_and_invalid_arguments_stay_invalid() -> None:
    state = fold_chunks(
        [
            ReasoningDelta(id="nobody", text="lost"),
            ToolCallDelta(id="nobody", args_json_delta="{}"),
            ToolCallEnd(id="nobody"),
            ToolCallStart(id="c", name="read"),
            ToolCallDelta(id="c", args_json_delta="{"),
            ToolCallEnd(id="c"),
            ToolCallDelta(id="c", args_json_delta="}"),
            ToolCallEnd(id="c"),  # valid JSON now, but the call's arguments were invalid once
        ]
    )
    assert state.reasoning == ()
    assert state.calls == (CallDraft("c", "read", "{}", {}, False),)
    assert state.end is None


def test_a_repeated_start_opens_a_new_block_and_later_deltas_go_to_it() -> None:
    state = fold_chunks(
        [
            ToolCallStart(id="c", name="read"),
            ToolCallDelta(id="c", args_json_delta="[1]"),
            ToolCallStart(id="c", name="write"),
            ToolCallDelta(id="c", args_json_delta="[2]"),
            ToolCallEnd(id="c"),
        ]
    )
    assert state.calls == (CallDraft("c", "read", "[1]"), CallDraft("c", "write", "[2]", [2], True))


def test_an_error_chunk_ends_the_fold_with_its_error() -> None:
    error = StreamErrorChunk(error=LlmError(kind=LlmErrorKind.RATE_LIMIT))
    state = fold_chunk(fold_chunk(RoundFold(), TextDelta(text="par")), error)
    assert state.end is error
    assert state.streamed
