"""A turn's rows as the store writes them (``_host/history_writes._stored``) against the full path.

The rows the engine writes (drafts that leave id and timestamp to the store) are built from the draft's
values and decided by the load's fast reader; every other draft takes the full path (the message
validated, its row built and read back by the full reader).  Whatever the draft, the row written and the
message returned are those of the full path, and a draft the full path refuses is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from tests.reference.enginekit import minimal_record

from relavium_reference._host import history_writes
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._host.persister import completed_turn
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import LlmMessage, LlmTextPart, LlmToolCallPart, LlmToolResultPart
from relavium_reference._model.messages import (
    TOOL_CALL_ID_PATTERN,
    TOOL_NAME_PATTERN,
    TextPart,
    ToolResultPart,
)
from relavium_reference._model.records import CostEntry, MessageDraft
from relavium_reference._rules.history_rows import MAX_EPOCH_MS, MIN_EPOCH_MS, iso_from_ms, stored_message

_MANY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_HANDLE = "media://sha256-" + "cd" * 32

_texts = st.text(max_size=20) | st.sampled_from(["", '"', "\\", "\u2028", "\x00\x1f", "é💡", "\ud800"])
_text = st.builds(lambda text: {"type": "text", "text": text}, _texts)
_reasoning = st.builds(
    lambda text, redacted: {
        "type": "reasoning",
        "text": text,
        **({} if redacted is None else {"redacted": redacted}),
    },
    _texts,
    st.none() | st.booleans(),
)
_call = st.builds(
    lambda call_id, name: {"type": "tool_call", "id": call_id, "name": name},
    st.from_regex(TOOL_CALL_ID_PATTERN, fullmatch=True),
    st.from_regex(TOOL_NAME_PATTERN, fullmatch=True),
)
_result = st.builds(
    lambda call_id, name, error, size: {
        "type": "tool_result",
        "toolCallId": call_id,
        "name": name,
        "isError": error,
        **({} if size is None else {"byteLength": size}),
    },
    st.from_regex(TOOL_CALL_ID_PATTERN, fullmatch=True),
    st.from_regex(TOOL_NAME_PATTERN, fullmatch=True),
    st.booleans(),
    st.none() | st.integers(min_value=0, max_value=2**63 - 1),
)
_media = st.just({"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": _HANDLE}})
_parts = _text | _reasoning | _call | _result | _media


_assistant_parts = _text | _reasoning | _call


@st.composite
def _drafts(draw: st.DrawFn, *, odd: bool = False) -> MessageDraft:
    """Drafts shaped as the roles allow, as the engine writes them: each reaches the fast path.

    system and user rows hold text (a user row now and then a medium), a tool row exactly one result,
    an assistant row text, reasoning and calls.  ``odd`` gives the drafts the fast path must leave to
    the full one or refuse alike: any parts for the role, and a caller's id or timestamp.
    """
    role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool", "tool"]))
    if odd:
        content = draw(st.lists(_parts, max_size=3))
    elif role == "tool":
        content = [draw(_result)]
    elif role == "assistant":
        content = draw(st.lists(_assistant_parts, min_size=1, max_size=3))
    else:
        content = draw(st.lists(_text | (_media if role == "user" else _text), min_size=1, max_size=2))
    data: dict[str, Any] = {"role": role, "content": content}
    if draw(st.booleans()):
        data["modelId"] = draw(st.text(min_size=1, max_size=6))
    if odd and draw(st.booleans()):
        data["id"] = draw(st.text(min_size=1, max_size=6))
    if odd and draw(st.booleans()):
        data["timestamp"] = draw(st.sampled_from(["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.678+02:00"]))
    try:
        return MessageDraft.model_validate(data)
    except ValidationError:
        assume(False)
        raise


def _draft(role: str, *parts: dict[str, Any]) -> MessageDraft:
    return MessageDraft.model_validate({"role": role, "content": list(parts)})


#: Rows whose optional fields a fast path could get wrong and still pass on most random drafts.
_EXAMPLES = (
    _draft("assistant", {"type": "reasoning", "text": "r", "redacted": True}, {"type": "text", "text": "a"}),
    _draft("assistant", {"type": "reasoning", "text": "", "redacted": False}),
    _draft("assistant", {"type": "reasoning", "text": "r"}),
    _draft(
        "tool", {"type": "tool_result", "toolCallId": "c1", "name": "read", "isError": True, "byteLength": 7}
    ),
    _draft(
        "tool",
        {"type": "tool_result", "toolCallId": "c1", "name": "read", "isError": False, "truncated": True},
    ),
    _draft(
        "assistant", {"type": "text", "text": "let me"}, {"type": "tool_call", "id": "c1", "name": "read"}
    ),
)


def _same(ours: Any, full: Any) -> None:
    """Equal as values and as pydantic instances (type, field order, fields set)."""
    assert type(ours) is type(full)
    if isinstance(full, BaseModel):
        assert list(ours.__dict__) == list(full.__dict__)
        assert ours.model_fields_set == full.model_fields_set
        for name in full.__dict__:
            _same(getattr(ours, name), getattr(full, name))
    elif isinstance(full, tuple):
        assert len(ours) == len(full)
        for a, b in zip(ours, full, strict=True):
            _same(a, b)
    assert ours == full


def _both(draft: MessageDraft, session_id: str, sequence: int, now: int, reason: str | None) -> None:
    stamp = iso_from_ms(now)
    args = {"session_id": session_id, "sequence": sequence, "message_id": "m-1", "now": now, "stamp": stamp}
    try:
        full = stored_message(
            draft.to_message(
                session_id=session_id, sequence_number=sequence, message_id="m-1", timestamp=stamp
            ),
            reason,
        )
    except (InvalidInputError, ValidationError) as refused:
        with pytest.raises(type(refused)):
            history_writes._stored(draft, finish_reason=reason, **args)
        return
    row, message = history_writes._stored(draft, finish_reason=reason, **args)
    assert row == full[0]
    assert list(row) == list(full[0])
    _same(message, full[1])


def _examples(test: Any) -> Any:
    for draft in _EXAMPLES:
        test = example(draft, "s", 0, 0, None)(test)
    return test


_SEQUENCES = st.integers(min_value=-1, max_value=2**63 - 1)
_INSTANTS = st.integers(min_value=MIN_EPOCH_MS, max_value=MAX_EPOCH_MS)
_REASONS = st.sampled_from([None, None, "stop", "length", "content_filter", "error", "tool_use"])


@_MANY
@_examples
@given(_drafts(), st.text(min_size=1, max_size=6), _SEQUENCES, _INSTANTS, _REASONS)
def test_a_draft_is_stored_as_the_full_path_stores_its_message(
    draft: MessageDraft, session_id: str, sequence: int, now: int, reason: str | None
) -> None:
    _both(draft, session_id, sequence, now, reason)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_drafts(odd=True), st.text(max_size=6), _SEQUENCES, _INSTANTS, _REASONS)
def test_an_odd_draft_is_stored_or_refused_as_the_full_path_does(
    draft: MessageDraft, session_id: str, sequence: int, now: int, reason: str | None
) -> None:
    _both(draft, session_id, sequence, now, reason)


def test_the_engines_rows_take_the_fast_path_and_media_the_full_one() -> None:
    """The rows the engine writes never reach the full path; a row the fast reader leaves (media) does."""
    user = MessageDraft(role="user", content=({"type": "text", "text": "hi"},))
    terminal = MessageDraft(role="assistant", content=({"type": "text", "text": ""},), model_id="m")
    media = MessageDraft.model_validate(
        {
            "role": "user",
            "content": [
                {"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": _HANDLE}}
            ],
        }
    )
    args = {"session_id": "s", "sequence": 0, "message_id": "m-1", "now": 0, "stamp": iso_from_ms(0)}
    with mock.patch.object(history_writes, "stored_message", side_effect=AssertionError("full path")):
        for draft in (user, terminal):
            row, message = history_writes._stored(draft, finish_reason="stop", **args)
            assert message.content == draft.content
            assert row["created_at"] == 0
        with pytest.raises(AssertionError, match="full path"):
            history_writes._stored(media, finish_reason=None, **args)
    row, message = history_writes._stored(media, finish_reason=None, **args)
    assert message.content == media.content


def test_a_draft_built_without_validation_takes_the_full_path() -> None:
    """A part that is not one of the part models (here a dict, as ``model_construct`` leaves it) is
    validated by the full path instead of reaching ``values_row``: stored as the full path stores it."""
    draft = MessageDraft.model_construct(role="user", content=({"type": "text", "text": "q"},))
    args = {"session_id": "s", "sequence": 0, "message_id": "m-1", "now": 0, "stamp": iso_from_ms(0)}
    with (
        mock.patch.object(history_writes, "stored_message", side_effect=AssertionError("full path")),
        pytest.raises(AssertionError, match="full path"),
    ):
        history_writes._stored(draft, finish_reason=None, **args)
    row, message = history_writes._stored(draft, finish_reason=None, **args)
    assert message.content == (TextPart(text="q"),)
    assert row["content"] == "q"


def test_a_structural_turn_takes_the_fast_path_end_to_end(tmp_path: Path) -> None:
    """Every row of a tool turn as the engine builds it (preamble text with a call, a result with its byte
    length, the terminal text) is written by the fast path, and a load returns exactly those messages."""
    rounds = [
        LlmMessage(
            role="assistant",
            content=(LlmTextPart(text="let me"), LlmToolCallPart(id="c1", name="read", args={"p": 1})),
        ),
        LlmMessage(
            role="tool",
            content=(LlmToolResultPart(toolCallId="c1", result={"x": "\u00e9" * 10}, isError=True),),
        ),
    ]
    turn = completed_turn(
        user_text="h\u00e9llo",
        final_text="",
        round_messages=rounds,
        structural_names={"c1": "read"},
        model="m",
        finish_reason="length",
        costs=[CostEntry(model="m", input_tokens=1)],
    )
    store = HistoryStore.open(tmp_path / "history.db")
    store.create_session(minimal_record())
    with mock.patch.object(history_writes, "stored_message", side_effect=AssertionError("full path")):
        committed = store.commit_turn("s-1", turn)
    assert [m.role for m in committed] == ["user", "assistant", "tool", "assistant"]
    result = committed[2].content[0]
    assert isinstance(result, ToolResultPart)
    assert result.is_error is True
    assert result.byte_length == 28  # {"x":"é…é"}: 8 ASCII bytes and 10 two-byte characters (KD-MSG-1)
    assert committed == store.load_messages("s-1")
