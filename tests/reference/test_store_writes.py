"""A turn's rows as the store writes them (``_host/store_writes._stored``) against the full path.

The rows the engine writes (drafts that leave id and timestamp to the store) are built from the draft's
values and decided by the load's fast reader; every other draft takes the full path (the message
validated, its row built and read back by the full reader).  Whatever the draft, the row written and the
message returned are those of the full path, and a draft the full path refuses is refused.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from relavium_reference._host import store_writes
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.messages import TOOL_CALL_ID_PATTERN, TOOL_NAME_PATTERN
from relavium_reference._model.records import MessageDraft
from relavium_reference._rules.store_rows import MAX_EPOCH_MS, MIN_EPOCH_MS, iso_from_ms, stored_message

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


@st.composite
def _drafts(draw: st.DrawFn) -> MessageDraft:
    data: dict[str, Any] = {
        "role": draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool"])),
        "content": draw(st.lists(_parts, max_size=3)),
    }
    if draw(st.booleans()):
        data["modelId"] = draw(st.text(min_size=1, max_size=6))
    if draw(st.integers(0, 5)) == 0:
        data["id"] = draw(st.text(min_size=1, max_size=6))
    if draw(st.integers(0, 5)) == 0:
        data["timestamp"] = draw(st.sampled_from(["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.678+02:00"]))
    try:
        return MessageDraft.model_validate(data)
    except ValidationError:
        assume(False)
        raise


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
            store_writes._stored(draft, finish_reason=reason, **args)
        return
    row, message = store_writes._stored(draft, finish_reason=reason, **args)
    assert row == full[0]
    assert list(row) == list(full[0])
    _same(message, full[1])


@_MANY
@given(
    _drafts(),
    st.text(max_size=6),
    st.integers(min_value=-1, max_value=2**63 - 1),
    st.integers(min_value=MIN_EPOCH_MS, max_value=MAX_EPOCH_MS),
    st.none() | st.sampled_from(["stop", "length", "content_filter", "error", "tool_use"]),
)
def test_a_draft_is_stored_as_the_full_path_stores_its_message(
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
    with mock.patch.object(store_writes, "stored_message", side_effect=AssertionError("full path")):
        for draft in (user, terminal):
            row, message = store_writes._stored(draft, finish_reason="stop", **args)
            assert message.content == draft.content
            assert row["created_at"] == 0
        with pytest.raises(AssertionError, match="full path"):
            store_writes._stored(media, finish_reason=None, **args)
    row, message = store_writes._stored(media, finish_reason=None, **args)
    assert message.content == media.content
