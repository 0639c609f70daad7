"""One provider attempt's stream, folded chunk by chunk into what the round said.

Pure: ``state = fold_chunk(state, chunk)`` never awaits, never emits and never raises (for any chunk
sequence, however malformed), and a :class:`RoundFold` is immutable.  The turn's shell reads the chunks,
folds each one, publishes its :func:`echo` (a token, a reasoning delta) and, once the fold has
:attr:`RoundFold.end`, does the accounting and the round's sequencing.

The rules of the fold:

* text deltas concatenate into the round's text;
* a reasoning block opens with ``reasoning_start`` (a second start with the same id opens a new block,
  and later deltas of that id go to the newest one); its deltas concatenate; ``reasoning_end`` sets its
  continuation signature.  A delta or an end naming no open block is dropped (a delta is still echoed);
* a tool call opens with ``tool_call_start`` (same rule for a repeated id); its argument deltas
  concatenate as JSON text; ``tool_call_end`` parses the text so far: empty or blank means ``{}``, text
  that is not JSON marks the call's arguments invalid for good (the tool is then never run) and keeps
  the arguments an earlier end parsed.  A call whose end never came keeps ``args`` ``None``.  A delta or
  an end naming no open call is dropped;
* ``stop`` and ``error`` end the fold; a chunk after the end changes nothing;
* anything else (a value of no known chunk type) is ignored.

So splitting a text, reasoning or argument delta into several deltas of the same text never changes the
result, nor does anything after the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from relavium_reference._model.llm import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StopChunk,
    StreamErrorChunk,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

__all__ = [
    "CallDraft",
    "Echo",
    "ReasoningBlock",
    "RoundFold",
    "echo",
    "fold_chunk",
    "fold_chunks",
    "parse_args",
]


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """A reasoning block as streamed so far; it becomes a reasoning part when its round is recorded."""

    text: str = ""
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class CallDraft:
    """A tool call as streamed so far."""

    id: str
    name: str
    args_json: str = ""
    args: Any = None
    """The parsed arguments once the call's end came (``None`` before)."""
    args_valid: bool = True


def parse_args(call: CallDraft) -> CallDraft:
    """The call once its end came: its arguments parsed from the JSON text so far (see the module)."""
    if not call.args_json.strip():
        return CallDraft(call.id, call.name, call.args_json, {}, call.args_valid)
    try:
        args = json.loads(call.args_json)
    except ValueError:
        return CallDraft(call.id, call.name, call.args_json, call.args, False)
    return CallDraft(call.id, call.name, call.args_json, args, call.args_valid)


@dataclass(frozen=True, slots=True)
class RoundFold:
    """What one attempt's stream said so far."""

    text: str = ""
    reasoning: tuple[ReasoningBlock, ...] = ()
    calls: tuple[CallDraft, ...] = ()
    end: StopChunk | StreamErrorChunk | None = None
    """The chunk that ended the stream (``None`` while it runs)."""
    reasoning_at: Mapping[str, int] = field(default_factory=dict)
    """Block id -> index in :attr:`reasoning` of the newest block with that id (never mutated)."""
    call_at: Mapping[str, int] = field(default_factory=dict)
    """Call id -> index in :attr:`calls` of the newest call with that id (never mutated)."""

    @property
    def streamed(self) -> bool:
        """Content reached the caller (text or a tool call): no failover after that."""
        return bool(self.text or self.calls)


def _with(
    state: RoundFold,
    *,
    reasoning: tuple[ReasoningBlock, ...] | None = None,
    calls: tuple[CallDraft, ...] | None = None,
    reasoning_at: Mapping[str, int] | None = None,
    call_at: Mapping[str, int] | None = None,
) -> RoundFold:
    return RoundFold(
        state.text,
        state.reasoning if reasoning is None else reasoning,
        state.calls if calls is None else calls,
        state.end,
        state.reasoning_at if reasoning_at is None else reasoning_at,
        state.call_at if call_at is None else call_at,
    )


def _replaced(items: tuple[Any, ...], index: int, item: Any) -> tuple[Any, ...]:
    return (*items[:index], item, *items[index + 1 :])


def fold_chunk(state: RoundFold, chunk: object) -> RoundFold:
    """The state after ``chunk`` (see the module docstring for the rules); never raises."""
    if state.end is not None:
        return state
    if isinstance(chunk, TextDelta):  # the hot path: one new state, no copying beyond the text
        return RoundFold(
            state.text + chunk.text, state.reasoning, state.calls, None, state.reasoning_at, state.call_at
        )
    if isinstance(chunk, (ReasoningStart, ReasoningDelta, ReasoningEnd)):
        return _fold_reasoning(state, chunk)
    if isinstance(chunk, (ToolCallStart, ToolCallDelta, ToolCallEnd)):
        return _fold_call(state, chunk)
    if isinstance(chunk, (StopChunk, StreamErrorChunk)):
        return RoundFold(state.text, state.reasoning, state.calls, chunk, state.reasoning_at, state.call_at)
    return state


def _fold_reasoning(state: RoundFold, chunk: ReasoningStart | ReasoningDelta | ReasoningEnd) -> RoundFold:
    if isinstance(chunk, ReasoningStart):
        at = {**state.reasoning_at, chunk.id: len(state.reasoning)}
        return _with(state, reasoning=(*state.reasoning, ReasoningBlock()), reasoning_at=at)
    index = state.reasoning_at.get(chunk.id)
    if index is None:
        return state
    block = state.reasoning[index]
    if isinstance(chunk, ReasoningDelta):
        block = ReasoningBlock(block.text + chunk.text, block.signature)
    else:
        block = ReasoningBlock(block.text, chunk.signature)
    return _with(state, reasoning=_replaced(state.reasoning, index, block))


def _fold_call(state: RoundFold, chunk: ToolCallStart | ToolCallDelta | ToolCallEnd) -> RoundFold:
    if isinstance(chunk, ToolCallStart):
        at = {**state.call_at, chunk.id: len(state.calls)}
        return _with(state, calls=(*state.calls, CallDraft(chunk.id, chunk.name)), call_at=at)
    index = state.call_at.get(chunk.id)
    if index is None:
        return state
    call = state.calls[index]
    if isinstance(chunk, ToolCallDelta):
        args_json = call.args_json + chunk.args_json_delta
        call = CallDraft(call.id, call.name, args_json, call.args, call.args_valid)
    else:
        call = parse_args(call)
    return _with(state, calls=_replaced(state.calls, index, call))


def fold_chunks(chunks: Iterable[object], state: RoundFold | None = None) -> RoundFold:
    """Fold a whole sequence (what the shell does one awaited chunk at a time)."""
    folded = RoundFold() if state is None else state
    for chunk in chunks:
        folded = fold_chunk(folded, chunk)
    return folded


@dataclass(frozen=True, slots=True)
class Echo:
    """What the caller sees of a chunk as it streams: a token or a reasoning delta."""

    kind: Literal["token", "reasoning"]
    text: str


def echo(chunk: object) -> Echo | None:
    """The live echo of ``chunk`` (every text and reasoning delta, a dropped reasoning delta included)."""
    if isinstance(chunk, TextDelta):
        return Echo("token", chunk.text)
    if isinstance(chunk, ReasoningDelta):
        return Echo("reasoning", chunk.text)
    return None
