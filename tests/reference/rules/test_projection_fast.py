"""The projection's cached paths against the plain formulas they replaced (kept here as oracles).

A :class:`History` folds its request messages and counts their KD-COMP-2 characters once; a request folds
only where the history meets the pending user and the tool rounds, and :func:`estimate_tokens` reads the
history's characters while the request still starts with those very messages.  A session's
:class:`HistoryMemo` extends its last history when slots were only appended.  On random transcripts
(empty finals and legacy bare users, so same-role runs fold across slots and into the pending user; a
summary or none; every memory policy; tool rounds with text, reasoning, tool-call and tool-result parts;
tools) every request must carry exactly the messages the plain fold gives, and every estimate must be the
plain per-part count of the request as built, also after a caller changed the request's own list.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from relavium_reference._model.llm import (
    ContentPart,
    LlmMessage,
    LlmReasoningPart,
    LlmRequest,
    LlmTextPart,
    LlmToolCallPart,
    LlmToolResultPart,
    ToolDef,
)
from relavium_reference._model.shapes import MemoryNone, MemoryPolicySpec, MemorySummary, MemoryWindow
from relavium_reference._rules.projection import (
    Exchange,
    History,
    HistoryMemo,
    HistoryMessage,
    ProjectedRequest,
    estimate_tokens,
    project_history,
    project_request,
    text_message,
)

_SETTINGS = settings(max_examples=300, deadline=None)

_TEXT = st.text(max_size=12)
_EXCHANGE = st.builds(Exchange, _TEXT, st.one_of(st.none(), st.just(""), _TEXT))
_MEMORY: st.SearchStrategy[MemoryPolicySpec] = st.one_of(
    st.just(MemorySummary(type="summary")),
    st.just(MemoryNone(type="none")),
    st.integers(1, 4).map(lambda n: MemoryWindow(type="window", window_size=n)),
)
_PART: st.SearchStrategy[ContentPart] = st.one_of(  # keywords by name (builds() would add the aliases)
    _TEXT.map(lambda t: LlmTextPart(text=t)),
    _TEXT.map(lambda t: LlmReasoningPart(text=t)),
    st.tuples(_TEXT, st.dictionaries(_TEXT, st.integers(), max_size=2)).map(
        lambda p: LlmToolCallPart(id=p[0], name="tool", args=p[1])
    ),
    st.tuples(_TEXT, _TEXT).map(lambda p: LlmToolResultPart(tool_call_id=p[0], result=p[1])),
)
_ROLE = st.sampled_from(["user", "assistant", "tool"])
_ROUND = st.tuples(_ROLE, st.lists(_PART, max_size=3)).map(
    lambda p: LlmMessage(role=p[0], content=tuple(p[1]))
)
_TOOL = st.tuples(_TEXT, st.none() | _TEXT).map(lambda p: ToolDef(name=p[0], description=p[1]))


# --- the oracles: the plain fold and the plain per-part count ----------------------------------------


def plain_fold(messages: Sequence[LlmMessage]) -> list[LlmMessage]:
    """Neighbours of one role become one message whose content is their parts in order."""
    folded: list[LlmMessage] = []
    for message in messages:
        if folded and folded[-1].role == message.role:
            folded[-1] = LlmMessage(role=message.role, content=(*folded[-1].content, *message.content))
        else:
            folded.append(message)
    return folded


def plain_estimate(request: LlmRequest) -> int:
    """KD-COMP-2 on the request as built: system, 8 per message, each part, each tool's compact JSON."""
    chars = len(request.system or "")
    for message in request.messages:
        chars += 8
        for part in message.content:
            chars += len(part.text) if isinstance(part, LlmTextPart) else 256
    for tool in request.tools or ():
        chars += len(json.dumps(tool.to_wire(), separators=(",", ":"), ensure_ascii=False))
    return math.ceil(chars / 4)


def plain_messages(
    history: Sequence[HistoryMessage], pending: str | None, rounds: Sequence[LlmMessage]
) -> list[LlmMessage]:
    tail = [text_message("user", pending)] if pending is not None else []
    return plain_fold([*(text_message(m.role, m.text) for m in history), *tail, *rounds])


def built(projected: ProjectedRequest) -> LlmRequest:
    """What the turn builds from a projection (``turn._to_request``)."""
    return LlmRequest(model="m", system=projected.system, messages=projected.messages, tools=projected.tools)


def _wire(messages: Sequence[LlmMessage]) -> list[dict[str, Any]]:
    return [message.to_wire() for message in messages]


# --- the properties ------------------------------------------------------------------------------------


@_SETTINGS
@given(
    exchanges=st.lists(_EXCHANGE, max_size=8),
    memory=_MEMORY,
    summary=st.none() | _TEXT,
    pending=st.none() | _TEXT,
    rounds=st.lists(_ROUND, max_size=4),
    tools=st.none() | st.lists(_TOOL, max_size=2),
    system=_TEXT,
    as_history=st.booleans(),
)
def test_a_request_folds_and_estimates_like_the_plain_formulas(
    exchanges: list[Exchange],
    memory: MemoryPolicySpec,
    summary: str | None,
    pending: str | None,
    rounds: list[LlmMessage],
    tools: list[ToolDef] | None,
    system: str,
    as_history: bool,
) -> None:
    plain = project_history(exchanges, memory, summary)
    history: Sequence[HistoryMessage] = History.of(plain) if as_history else plain
    projected = project_request(
        system=system, history=history, pending_user=pending, rounds=rounds, tools=tools
    )
    assert projected.messages == plain_messages(plain, pending, rounds)
    assert _wire(projected.messages) == _wire(plain_messages(plain, pending, rounds))
    request = built(projected)
    assert estimate_tokens(projected) == plain_estimate(request)
    unhinted = ProjectedRequest(system=system, messages=projected.messages, tools=projected.tools)
    assert estimate_tokens(unhinted) == plain_estimate(request)


@_SETTINGS
@given(
    exchanges=st.lists(_EXCHANGE, min_size=1, max_size=8),
    summary=st.none() | _TEXT,
    pending=_TEXT,
    change=st.sampled_from(["replace-first", "drop-first", "insert-first", "clear", "replace-last-kept"]),
    stranger=_ROUND,
)
def test_a_request_whose_list_was_changed_is_counted_afresh(
    exchanges: list[Exchange], summary: str | None, pending: str, change: str, stranger: LlmMessage
) -> None:
    history = History.of(project_history(exchanges, MemorySummary(type="summary"), summary))
    projected = project_request(system="s", history=history, pending_user=pending)
    messages = projected.messages
    if change == "replace-first":
        messages[0] = stranger
    elif change == "drop-first":
        del messages[0]
    elif change == "insert-first":
        messages.insert(0, stranger)
    elif change == "clear":
        messages.clear()
    elif projected.known_prefix is not None and projected.known_prefix[0]:
        messages[len(projected.known_prefix[0]) - 1] = stranger
    assert estimate_tokens(projected) == plain_estimate(built(projected))


_STEP = st.one_of(
    st.tuples(st.just("append"), st.lists(_EXCHANGE, min_size=1, max_size=3)),
    st.tuples(st.just("drop"), st.integers(1, 3)),
    st.tuples(st.just("summary"), st.none() | _TEXT),
    st.tuples(st.just("memory"), _MEMORY),
    st.tuples(st.just("same"), st.none()),
    st.tuples(st.just("equal-copy"), st.none()),
)


@_SETTINGS
@given(start=st.lists(_EXCHANGE, max_size=5), steps=st.lists(_STEP, max_size=12))
def test_the_memo_always_equals_a_fresh_projection(
    start: list[Exchange], steps: list[tuple[str, Any]]
) -> None:
    memo = HistoryMemo()
    exchanges = list(start)
    memory: MemoryPolicySpec = MemorySummary(type="summary")
    summary: str | None = None
    for kind, value in [("same", None), *steps]:
        if kind == "append":
            exchanges.extend(value)  # in place: the memo must not rely on the list's identity
        elif kind == "drop":
            exchanges = exchanges[value:]
        elif kind == "summary":
            summary = value
        elif kind == "memory":
            memory = value
        elif kind == "equal-copy":
            exchanges = [Exchange(e.user, e.assistant) for e in exchanges]
        got = memo.project(exchanges, memory, summary)
        fresh = project_history(exchanges, memory, summary)
        assert list(got) == fresh
        assert list(got.folded) == plain_fold([text_message(m.role, m.text) for m in fresh])
        request = LlmRequest(model="m", messages=list(got.folded))
        assert math.ceil(got.chars / 4) == plain_estimate(request)
        assert got == History.of(fresh)
