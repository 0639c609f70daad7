"""``reconstruct_session_state`` against the plain implementation it replaced (kept here as the oracle).

The shipped function decides the common row (one text part) without scanning its parts, groups the
transcript once when no boundary marker drops anything, and builds its ``ResumeMessage`` and
``TurnSpan`` values with ``prebuilt``.  On random transcripts (every role, text with any unicode, empty
text, media, reasoning, tool calls and results, markers with and without summary, shuffled rows,
repeated sequence numbers) it must give the very state, and the very errors, the oracle gives.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from tests.reference.fuzzkit import quick_transcript

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._model.prebuilt import prebuilt_supported
from relavium_reference._model.records import is_structural_row, is_terminal_row
from relavium_reference._rules.resume import (
    ResumeMessage,
    SessionResumeState,
    TurnSpan,
    reconstruct_session_state,
)

_RECORD = parse_agent_session_record(
    {
        "id": "s-1",
        "agentSlug": "coder",
        "context": {"workingDir": "/w"},
        "totalCostMicrocents": 7,
        "totalInputTokens": 3,
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
    }
)


def _oracle_slots(rows: list[SessionMessage]) -> list[tuple[SessionMessage, SessionMessage | None, int]]:
    slots: list[tuple[SessionMessage, SessionMessage | None, int]] = []
    open_user: SessionMessage | None = None
    saw_structure = False
    for row in rows:
        if row.role == "user":
            if open_user is not None and not saw_structure:
                slots.append((open_user, None, open_user.sequence_number))
            open_user, saw_structure = row, False
        elif is_terminal_row(row.role, row.content):
            if open_user is not None:
                slots.append((open_user, row, row.sequence_number))
            open_user, saw_structure = None, False
        elif open_user is not None and (is_structural_row(row.role, row.content) or row.role == "assistant"):
            saw_structure = True
    return slots


def _oracle(record: AgentSessionRecord, messages: list[SessionMessage]) -> SessionResumeState:
    """The implementation before the fast path, line for line (validated models throughout)."""
    ordered = sorted(messages, key=lambda m: m.sequence_number)
    for earlier, later in itertools.pairwise(ordered):
        if earlier.sequence_number == later.sequence_number:
            raise InvalidInputError("two session messages share a sequence number", location="sequenceNumber")
    if any(m.session_id != record.id for m in ordered):
        raise InvalidInputError("a session message belongs to another session", location="sessionId")
    markers = [m for m in ordered if m.role == "system" and m.compaction is not None]
    transcript = [m for m in ordered if m.role != "system"]
    boundary = max((m.compaction.dropped_through_sequence for m in markers if m.compaction), default=-1)
    preamble = next((m.text for m in reversed(markers) if m.text), None)
    out: list[ResumeMessage] = []
    sequences: list[int] = []
    spans: list[TurnSpan] = []
    boundaries: list[int] = []
    for user, terminal, last in _oracle_slots([m for m in transcript if m.sequence_number > boundary]):
        start = len(out)
        out.append(ResumeMessage(role="user", text=user.text))
        sequences.append(user.sequence_number)
        boundaries.append(last)
        if terminal is None:
            continue
        if terminal.text:
            out.append(ResumeMessage(role="assistant", text=terminal.text))
            sequences.append(terminal.sequence_number)
        spans.append(TurnSpan(start=start, end=len(out)))
    return SessionResumeState(
        messages=tuple(out),
        completed_turn_spans=tuple(spans),
        turn_count=sum(1 for slot in _oracle_slots(transcript) if slot[1] is not None),
        cumulative_cost_microcents=record.total_cost_microcents,
        cumulative_input_tokens=record.total_input_tokens,
        cumulative_output_tokens=record.total_output_tokens,
        context_preamble=preamble,
        message_sequences=tuple(sequences),
        turn_boundary_sequences=tuple(boundaries),
    )


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(b, BaseModel):
        assert list(a.__dict__) == list(b.__dict__)
        assert a.model_fields_set == b.model_fields_set
        assert (a.__pydantic_extra__, a.__pydantic_private__) == (
            b.__pydantic_extra__,
            b.__pydantic_private__,
        )
        for name in b.__dict__:
            _same(getattr(a, name), getattr(b, name))
    elif isinstance(b, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    assert a == b


_UNICODE = st.text(max_size=12) | st.sampled_from(["", "\u2028", "é💡", "\x00"])


def _messages(rows: list[Any], texts: list[str]) -> list[SessionMessage]:
    kept = []
    for index, row in enumerate(rows):
        if isinstance(row.get("content"), list) and texts:  # vary the texts of text parts
            row = {
                **row,
                "content": [
                    {**part, "text": texts[(index + n) % len(texts)]}
                    if isinstance(part, dict) and part.get("type") == "text"
                    else part
                    for n, part in enumerate(row["content"])
                ],
            }
        try:
            kept.append(parse_session_message(row))
        except InvalidInputError:
            continue
    return kept


@settings(max_examples=500, deadline=None)
@given(quick_transcript(max_size=12), st.lists(_UNICODE, max_size=4))
def test_reconstruct_gives_the_oracles_state_and_errors(rows: list[Any], texts: list[str]) -> None:
    messages = _messages(rows, texts)
    expected: SessionResumeState | InvalidInputError
    try:
        expected = _oracle(_RECORD, messages)
    except InvalidInputError as exc:
        expected = exc
    if isinstance(expected, InvalidInputError):
        with pytest.raises(InvalidInputError) as caught:
            reconstruct_session_state(_RECORD, messages)
        assert (str(caught.value), caught.value.location) == (str(expected), expected.location)
        return
    _same(reconstruct_session_state(_RECORD, messages), expected)


def test_a_message_of_another_session_is_still_refused() -> None:
    other = parse_session_message(
        {
            "id": "m0",
            "sessionId": "s-2",
            "sequenceNumber": 0,
            "role": "user",
            "content": [{"type": "text", "text": "q"}],
            "timestamp": "2026-01-01T00:00:00Z",
        }
    )
    with pytest.raises(InvalidInputError, match="another session"):
        reconstruct_session_state(_RECORD, [other])


@pytest.mark.parametrize("model", [ResumeMessage, TurnSpan])
def test_the_resume_values_built_by_prebuilt_qualify(model: type[BaseModel]) -> None:
    assert prebuilt_supported(model)
