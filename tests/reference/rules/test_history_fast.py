"""The fast read of stored message rows (``_rules/history_fast.py``) against the full read it shortcuts.

* A row the write side produced, of any shape the fast path covers (text with any unicode, empty
  text, reasoning with and without ``redacted``, tool calls after preamble text, tool results with
  their optional sizes, system markers), is decided by the fast path, into the very value the full
  path (:func:`message_from_row`) gives: same fields in the same order, same fields set, same parts.
* A row in any other form (media, attachments, corrupted columns, non-canonical or hostile JSON) is
  either refused by the fast path (``None``: the full path decides it and names its defect) or read
  into the same value the full path gives.  The fast path never accepts a row the full path refuses.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, PrivateAttr, RootModel, ValidationError
from tests.reference.fuzzkit import SQLITE_VALUES

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.messages import (
    TOOL_CALL_ID_PATTERN,
    TOOL_NAME_PATTERN,
    Compaction,
    ReasoningPart,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    parse_session_message,
)
from relavium_reference._model.prebuilt import prebuilt, prebuilt_supported
from relavium_reference._rules.history_fast import FAST_ROW_COLUMNS, fast_message
from relavium_reference._rules.history_rows import (
    MAX_EPOCH_MS,
    MIN_EPOCH_MS,
    StoreError,
    iso_from_ms,
    message_from_row,
    message_row,
)

_MANY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_HANDLE = "media://sha256-" + "ab" * 32


def _same(fast: Any, full: Any) -> None:
    """Equal as values and as pydantic instances: type, field order, fields set, no extra/private state."""
    assert type(fast) is type(full)
    if isinstance(full, BaseModel):
        assert list(fast.__dict__) == list(full.__dict__)
        assert fast.model_fields_set == full.model_fields_set
        assert fast.__pydantic_extra__ == full.__pydantic_extra__
        assert fast.__pydantic_private__ == full.__pydantic_private__
        for name in full.__dict__:
            _same(getattr(fast, name), getattr(full, name))
    elif isinstance(full, tuple):
        assert len(fast) == len(full)
        for a, b in zip(fast, full, strict=True):
            _same(a, b)
    else:
        assert fast == full
    assert fast == full


def _tuple(row: dict[str, Any], rowid: int = 1) -> tuple[Any, ...]:
    return (*(row[name] for name in FAST_ROW_COLUMNS[:-1]), rowid)


_texts = st.text(max_size=30) | st.sampled_from(
    ["", '"', "\\", "\u2028", "\x00\x1f", "é💡", '"},{"type":"text"']
)
_call_ids = st.from_regex(TOOL_CALL_ID_PATTERN, fullmatch=True)
_names = st.from_regex(TOOL_NAME_PATTERN, fullmatch=True)


@st.composite
def _result(draw: st.DrawFn, attachments: bool = False) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "tool_result",
        "toolCallId": draw(_call_ids),
        "name": draw(_names),
        "isError": draw(st.booleans()),
    }
    if draw(st.booleans()):
        part["byteLength"] = draw(st.integers(min_value=0, max_value=2**63 - 1))
    if draw(st.booleans()):
        part["truncated"] = draw(st.booleans())
    if attachments:
        part["attachments"] = [{"mimeType": "image/png", "ref": _HANDLE, "byteLength": 4}]
    return part


_text_part = st.builds(lambda text: {"type": "text", "text": text}, _texts)
_reasoning = st.builds(lambda text: {"type": "reasoning", "text": text}, _texts) | st.builds(
    lambda text, redacted: {"type": "reasoning", "text": text, "redacted": redacted}, _texts, st.booleans()
)
_call = st.builds(lambda call_id, name: {"type": "tool_call", "id": call_id, "name": name}, _call_ids, _names)
_media = st.just({"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": _HANDLE}})
#: Parts per role: those the fast path covers, and (second) those it leaves to the full path.
_PARTS = {
    "system": (_text_part, _text_part),
    "user": (_text_part, _media),
    "assistant": (_text_part | _reasoning | _call, _text_part | _call),
    "tool": (_result(), _result(attachments=True)),
}


@st.composite
def _messages(draw: st.DrawFn, covered: bool = True) -> tuple[SessionMessage, str | None]:
    role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool"]))
    kinds = _PARTS[role][0] if covered else _PARTS[role][0] | _PARTS[role][1]
    count = 1 if role == "tool" else draw(st.integers(min_value=0, max_value=3))
    wire: dict[str, Any] = {
        "id": draw(st.text(min_size=1, max_size=8)),
        "sessionId": draw(st.text(min_size=1, max_size=8)),
        "sequenceNumber": draw(st.integers(min_value=0, max_value=2**63 - 1)),
        "role": role,
        "content": [draw(kinds) for _ in range(count)],
        "timestamp": iso_from_ms(draw(st.integers(min_value=MIN_EPOCH_MS, max_value=MAX_EPOCH_MS))),
    }
    if draw(st.booleans()):
        wire["modelId"] = draw(st.text(min_size=1, max_size=8))
    if role == "system" and draw(st.booleans()):
        wire["compaction"] = {"droppedThroughSequence": draw(st.integers(min_value=0, max_value=2**40))}
    reason = draw(st.none() | st.sampled_from(["stop", "length", "content_filter", "error", "tool_use"]))
    return parse_session_message(wire), reason


def _written(message: SessionMessage, reason: str | None) -> dict[str, Any]:
    try:
        return message_row(message, reason)
    except InvalidInputError:  # e.g. ``tool_use`` asked for a row without a call: never written
        assume(False)
        raise


@_MANY
@given(_messages())
def test_a_row_the_store_wrote_reads_fast_into_the_full_value(
    drawn: tuple[SessionMessage, str | None],
) -> None:
    row = _written(*drawn)
    fast = fast_message(_tuple(row))
    assert fast is not None
    _same(fast, message_from_row(row))
    _same(fast, drawn[0])
    assert fast.to_wire() == drawn[0].to_wire()


_SNEAKY_BODIES = [
    '[{"type":"text","text":"a","text":"b"}]',  # duplicate key
    '[{"type":"text","text":"a"},{"type":"text","text":NaN}]',
    '[{"type": "text", "text": "a"}]',  # not compact
    '[{"text":"a","type":"text"}]',  # another key order
    '[{"type":"text","text":"a","note":1}]',
    '[{"type":"text","text":"\\u0061"}]',  # an escape the store would not write
    '[{"type":"text","text":"a"}],[{"type":"text","text":"b"}]',
    '[{"type":"text","text":"a"}] ',
    '[{"type":"text","text":"a"}',
    '[{"type":"text","text":"\\ud800"}]',
    '[{"type":"reasoning","text":"a","redacted":null}]',
    '[{"type":"reasoning","text":"a","signature":"s"}]',
    '[{"type":"tool_call","id":"c1","name":"read","arguments":{}}]',
    '[{"type":"tool_call","id":"c 1","name":"read"}]',
    '[{"type":"tool_result","toolCallId":"c1","name":"read","isError":0}]',
    '[{"type":"tool_result","toolCallId":"c1","name":"read","isError":false,"byteLength":-1}]',
    '[{"type":"tool_result","toolCallId":"c1","name":"read","isError":false,"byteLength":1.0}]',
    '[{"type":"tool_result","toolCallId":"c1","name":"read","isError":false,"truncated":null}]',
    '[{"type":"tool_result","toolCallId":"c1","name":"read","isError":false,"result":"x"}]',
    '[{"type":"media","mimeType":"image/png","source":{"kind":"handle","ref":"' + _HANDLE + '"}}]',
    '[{"type":"unknown"}]',
    '[{"type":[]}]',
    '[{"type":{"a":1}}]',
    "[1]",
    '[{"type":"text","text":"a"},null]',
    "[]",
    "{}",
    "",
    "[" * 5000,
]


@_MANY
@given(
    _messages(covered=False),
    st.lists(
        st.tuples(st.sampled_from(FAST_ROW_COLUMNS[:-1]), SQLITE_VALUES | st.sampled_from(_SNEAKY_BODIES)),
        max_size=3,
    ),
)
def test_the_fast_read_never_accepts_what_the_full_read_refuses(
    drawn: tuple[SessionMessage, str | None], edits: list[tuple[str, Any]]
) -> None:
    row = _written(*drawn)
    row.update(edits)
    fast = fast_message(_tuple(row))
    try:
        full = message_from_row(row)
    except StoreError:
        assert fast is None
        return
    if fast is not None:
        _same(fast, full)


_BASE_ROW: dict[str, Any] = {
    "id": "m0",
    "session_id": "s-1",
    "sequence_number": 0,
    "role": "user",
    "content": "question",
    "content_parts": '[{"type":"text","text":"question"}]',
    "tool_calls": None,
    "tool_call_id": None,
    "name": None,
    "finish_reason": None,
    "model_id": None,
    "compaction_dropped_through_sequence": None,
    "created_at": 0,
}


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        ({"content_parts": _SNEAKY_BODIES[0]}, "malformed_json"),
        ({"content_parts": _SNEAKY_BODIES[1]}, "malformed_json"),
        ({"content_parts": '[{"type":"text","text":"question","note":1}]'}, "invalid_message"),
        ({"content": "forged"}, "text_mismatch"),
        ({"content": None}, "text_mismatch"),
        ({"finish_reason": "stop"}, "finish_reason_invalid"),
        ({"role": "assistant"}, "finish_reason_invalid"),
        ({"role": "tool"}, "invalid_message"),
        ({"tool_calls": "[]"}, "tool_calls_mismatch"),
        ({"tool_call_id": "c1"}, "tool_call_id_mismatch"),
        ({"name": "read"}, "name_mismatch"),
        ({"created_at": MAX_EPOCH_MS + 1}, "invalid_message"),
        ({"created_at": "0"}, "invalid_message"),
        ({"sequence_number": -1}, "invalid_message"),
        ({"id": ""}, "invalid_message"),
        ({"model_id": ""}, "invalid_message"),
        ({"compaction_dropped_through_sequence": 0}, "invalid_message"),
    ],
)
def test_a_corrupted_row_is_left_to_the_full_read_which_names_it(edit: dict[str, Any], code: str) -> None:
    assert fast_message(_tuple(_BASE_ROW)) is not None
    row = {**_BASE_ROW, **edit}
    assert fast_message(_tuple(row)) is None
    with pytest.raises(StoreError) as caught:
        message_from_row(row)
    assert caught.value.code == code


_RESULT = '{"type":"tool_result","toolCallId":"c1","name":"read","isError":false}'
_TOOL_COLUMNS = {"role": "tool", "content": None, "tool_call_id": "c1", "name": "read"}


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        # Bodies whose other columns agree with what they would parse to: only the body is wrong.
        ({"content_parts": '[{"type":"text","text":"a","text":"question"}]'}, "malformed_json"),
        ({"content_parts": '[{"type":"text","text":"question","text":"question"}]'}, "malformed_json"),
        (
            {"content_parts": '[{"type":"text","text":"question"},{"type":"text","text":NaN}]'},
            "malformed_json",
        ),
        (
            {"content_parts": '[{"type":"text","text":"question"}],[{"type":"text","text":"b"}]'},
            "malformed_json",
        ),
        (
            {
                "role": "assistant",
                "finish_reason": "stop",
                "content": None,
                "content_parts": '[{"type":"reasoning","text":"a","signature":"s"}]',
            },
            "invalid_message",
        ),
        ({**_TOOL_COLUMNS, "content_parts": "[]"}, "invalid_message"),
        ({**_TOOL_COLUMNS, "content_parts": f"[{_RESULT},{_RESULT}]"}, "invalid_message"),
        ({**_TOOL_COLUMNS, "content_parts": f'[{_RESULT[:-1]},"isError":true}}]'}, "malformed_json"),
        ({**_TOOL_COLUMNS, "content_parts": _RESULT.replace("false", "0").join("[]")}, "invalid_message"),
        ({**_TOOL_COLUMNS, "content_parts": '[{"type":"text","text":"question"}]'}, "invalid_message"),
        (
            {
                "role": "assistant",
                "finish_reason": "tool_use",
                "content": None,
                "content_parts": '[{"type":"tool_call","id":"c1","name":"read","id":"c1"}]',
                "tool_calls": '[{"type":"tool_call","id":"c1","name":"read"}]',
            },
            "malformed_json",
        ),
        (
            {
                "role": "assistant",
                "finish_reason": "tool_use",
                "content": None,
                "content_parts": '[{"type":"tool_call","id":"c1","name":"read"}]',
                "tool_calls": '[{"type":"tool_call","id":"c1","name":"read","id":"c1"}]',
            },
            "malformed_json",
        ),
        (
            {"role": "system", "content_parts": '[{"type":"media","mimeType":"image/png"}]', "content": None},
            "invalid_message",
        ),
    ],
)
def test_a_wrong_body_behind_agreeing_columns_is_left_to_the_full_read(
    edit: dict[str, Any], code: str
) -> None:
    row = {**_BASE_ROW, **edit}
    assert fast_message(_tuple(row)) is None
    with pytest.raises(StoreError) as caught:
        message_from_row(row)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("body", "text"),
    [('[{"type":"text","text":"\\u0071uestion"}]', "question"), ('[{"type":"text","text":"q\\/"}]', "q/")],
)
def test_any_escape_in_a_single_text_literal_reads_as_the_full_read_does(body: str, text: str) -> None:
    row = {**_BASE_ROW, "content_parts": body, "content": text}
    fast = fast_message(_tuple(row))
    assert fast is not None
    assert fast.text == text
    _same(fast, message_from_row(row))


@pytest.mark.parametrize(
    "model", [TextPart, ToolCallPart, ToolResultPart, ReasoningPart, Compaction, SessionMessage]
)
def test_every_model_built_by_prebuilt_qualifies(model: type[BaseModel]) -> None:
    assert prebuilt_supported(model)


class _FrozenPrivate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    x: int
    _cache: int = PrivateAttr(default=0)


class _FrozenOpen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    x: int


class _FrozenPostInit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    x: int

    def model_post_init(self, context: Any, /) -> None:
        object.__setattr__(self, "x", self.x + 1)  # validation runs it; a prebuilt model would not


class _FrozenRoot(RootModel[int]):
    model_config = ConfigDict(frozen=True)


# each model is frozen, so the frozen check alone would accept it.  The guards overlap: pydantic gives a
# model with private attributes a post-init, and a root model is not extra="forbid"; each case still fails
# when prebuilt_supported keeps only the frozen check.
@pytest.mark.parametrize("model", [_FrozenPrivate, _FrozenOpen, _FrozenPostInit, _FrozenRoot])
def test_prebuilt_supported_refuses_a_frozen_model_it_would_not_build_as_validation_does(
    model: type[BaseModel],
) -> None:
    assert model.model_config.get("frozen")
    assert not prebuilt_supported(model)


def test_a_prebuilt_model_with_private_state_would_not_read_as_a_validated_one() -> None:
    # why the private-state guard exists: such a model, prebuilt, has no private storage to read
    assert _FrozenPrivate.model_validate({"x": 1})._cache == 0
    built = prebuilt(_FrozenPrivate, {"x": 1}, {"x"})
    with pytest.raises((AttributeError, TypeError)):
        _ = built._cache
    assert prebuilt(TextPart, {"type": "text", "text": "a"}, {"type", "text"}) == TextPart(text="a")


def test_a_shared_fields_set_survives_model_copy_and_refused_assignment() -> None:
    first = fast_message(_tuple(_BASE_ROW))
    second = fast_message(_tuple({**_BASE_ROW, "id": "m1"}))
    assert first is not None
    assert second is not None
    assert first.model_fields_set is second.model_fields_set  # one set for rows of one shape
    before = set(first.model_fields_set)
    copied = first.model_copy(update={"model_id": "model-a"})
    assert "model_id" in copied.model_fields_set
    with pytest.raises(ValidationError):
        first.model_id = "model-b"  # type: ignore[misc]
    assert first.model_fields_set == second.model_fields_set == before


def test_prebuilt_supported_refuses_a_model_that_is_not_frozen() -> None:
    class Open(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: int

    assert not prebuilt_supported(Open)
