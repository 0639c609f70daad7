"""Strict SessionMessage, the session-only content parts, the session record, turns and their schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import LlmMessage, LlmTextPart, LlmToolCallPart, LlmToolResultPart
from relavium_reference._model.messages import (
    UNKNOWN_TOOL,
    MediaPart,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    json_schemas,
    message_text,
    parse_agent_session_record,
    parse_content_part,
    parse_session_message,
)
from relavium_reference._model.records import (
    TITLE_MAX_CODE_POINTS,
    CompletedTurn,
    CostEntry,
    MessageDraft,
    derive_title,
    parse_completed_turn,
    result_byte_length,
    structural_drafts,
)
from relavium_reference._schemas import render

ROOT = Path(__file__).resolve().parents[3]
HANDLE = "media://sha256-" + "0123456789abcdef" * 4


def _message(content: list[Any], role: str = "assistant", **extra: Any) -> dict[str, Any]:
    return {
        "id": "m1",
        "sessionId": "s1",
        "sequenceNumber": 0,
        "role": role,
        "content": content,
        "timestamp": "2026-01-01T10:00:00+02:00",
        **extra,
    }


# -- the content-part union --------------------------------------------------------------------

VALID_PARTS: list[tuple[str, dict[str, Any]]] = [
    ("assistant", {"type": "text", "text": ""}),
    ("assistant", {"type": "tool_call", "id": "toolu_01A.b:c-d", "name": "read_file"}),
    ("assistant", {"type": "tool_call", "id": "call-1", "name": UNKNOWN_TOOL}),
    ("assistant", {"type": "tool_call", "id": "call-1", "name": "mcp.github:create-issue"}),
    ("tool", {"type": "tool_result", "toolCallId": "call-1", "name": "read_file", "isError": False}),
    (
        "tool",
        {
            "type": "tool_result",
            "toolCallId": "call-1",
            "name": "screenshot",
            "isError": True,
            "byteLength": 1024,
            "truncated": True,
            "attachments": [{"mimeType": "image/png", "ref": HANDLE, "byteLength": 99}],
        },
    ),
    ("assistant", {"type": "reasoning", "text": "thinking", "redacted": False}),
    ("user", {"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": HANDLE}}),
    (
        "user",
        {
            "type": "media",
            "mimeType": "audio/ogg",
            "source": {"kind": "handle", "ref": HANDLE},
            "byteLength": 10,
            "durationMs": 1500,
        },
    ),
]


@pytest.mark.parametrize(("role", "part"), VALID_PARTS, ids=lambda v: v if isinstance(v, str) else v["type"])
def test_valid_parts_round_trip_exactly(role: str, part: dict[str, Any]) -> None:
    message = parse_session_message(_message([part], role=role))
    assert message.to_wire()["content"] == [part]
    assert parse_session_message(message.to_wire()) == message


REFUSED_PARTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "tool_call with args",
        {"type": "tool_call", "id": "c1", "name": "read_file", "args": {"path": "/etc/passwd"}},
        "raw tool arguments are not allowed in a session message",
    ),
    (
        "tool_call with arguments",
        {"type": "tool_call", "id": "c1", "name": "read_file", "arguments": "{}"},
        "raw tool arguments are not allowed in a session message",
    ),
    (
        "tool_result with result",
        {"type": "tool_result", "toolCallId": "c1", "name": "read_file", "isError": False, "result": "x"},
        "raw tool results are not allowed in a session message",
    ),
    (
        "tool_result with content",
        {"type": "tool_result", "toolCallId": "c1", "name": "read_file", "isError": False, "content": []},
        "raw tool results are not allowed in a session message",
    ),
    (
        "reasoning with signature",
        {"type": "reasoning", "text": "t", "signature": "EqQBCkgIARABGAIiQL"},
        "reasoning signatures are not allowed in a session message",
    ),
    (
        "inline base64 media",
        {"type": "media", "mimeType": "image/png", "source": {"kind": "base64", "data": "iVBORw0KGgo="}},
        "session media must be a handle reference",
    ),
    (
        "url media",
        {
            "type": "media",
            "mimeType": "image/png",
            "source": {"kind": "url", "url": "https://example.com/a.png"},
        },
        "session media must be a handle reference",
    ),
    (
        "string media source",
        {"type": "media", "mimeType": "image/png", "source": "data:image/png;base64,AAAA"},
        "session media must be a handle reference",
    ),
    (
        "media with a file name",
        {
            "type": "media",
            "mimeType": "image/png",
            "source": {"kind": "handle", "ref": HANDLE},
            "name": "a.png",
        },
        "unknown field refused",
    ),
    (
        "media with a transcript",
        {
            "type": "media",
            "mimeType": "audio/ogg",
            "source": {"kind": "handle", "ref": HANDLE},
            "transcript": "hello",
        },
        "unknown field refused",
    ),
    (
        "duration on an image",
        {
            "type": "media",
            "mimeType": "image/png",
            "source": {"kind": "handle", "ref": HANDLE},
            "durationMs": 3,
        },
        "durationMs is only allowed on audio or video media",
    ),
    (
        "attachment with a file name",
        {
            "type": "tool_result",
            "toolCallId": "c1",
            "name": "screenshot",
            "isError": False,
            "attachments": [{"mimeType": "image/png", "ref": HANDLE, "name": "shot.png"}],
        },
        "unknown field refused",
    ),
    (
        "unknown field on text",
        {"type": "text", "text": "a", "cacheControl": {"type": "ephemeral"}},
        "unknown field refused",
    ),
    ("unknown part type", {"type": "image", "data": "AAAA"}, "unknown session content part type"),
]


@pytest.mark.parametrize(("case", "part", "message"), REFUSED_PARTS, ids=[c[0] for c in REFUSED_PARTS])
def test_forbidden_content_is_refused_with_a_fixed_message(
    case: str, part: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_content_part(part)
    assert caught.value.message == message


def test_refusal_never_echoes_the_refused_value() -> None:
    secret = "sk-live-0000-SECRET"
    for part in (
        {"type": "tool_call", "id": "c1", "name": "http", "args": {"token": secret}},
        {"type": "tool_result", "toolCallId": "c1", "name": "http", "isError": False, "result": secret},
        {"type": "reasoning", "text": "t", "signature": secret},
        {"type": "text", "text": "a", secret: 1},
    ):
        with pytest.raises(InvalidInputError) as caught:
            parse_content_part(part)
        assert secret not in str(caught.value)


def test_forbidden_content_wins_over_other_errors_in_the_same_message() -> None:
    parts = [
        {"type": "text", "text": "a", "surprise": 1},
        {"type": "tool_call", "id": "c1", "name": "read_file", "args": {}},
    ]
    with pytest.raises(InvalidInputError) as caught:
        parse_session_message(_message(parts))
    assert caught.value.message == "raw tool arguments are not allowed in a session message"


@pytest.mark.parametrize(
    "part",
    [
        {"type": "tool_call", "id": "", "name": "read_file"},
        {"type": "tool_call", "id": "has space", "name": "read_file"},
        {"type": "tool_call", "id": "c" * 129, "name": "read_file"},
        {"type": "tool_call", "id": "c1", "name": ""},
        {"type": "tool_call", "id": "c1", "name": "read file"},
        {"type": "tool_call", "id": "c1", "name": "-leading"},
        {"type": "tool_result", "toolCallId": "c1", "name": "x", "isError": "no"},
        {"type": "tool_result", "toolCallId": "c1", "name": "x", "isError": False, "byteLength": -1},
        {"type": "tool_result", "toolCallId": "c1", "name": "x"},
        {"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": "media://sha256-abc"}},
        {"type": "media", "mimeType": "not a mime", "source": {"kind": "handle", "ref": HANDLE}},
        {"type": "text", "text": 5},
    ],
)
def test_malformed_parts_are_refused(part: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        parse_content_part(part)


# -- message-level rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "content", "extra", "message"),
    [
        (
            "user",
            [{"type": "tool_call", "id": "c", "name": "x"}],
            {},
            "content part not allowed for this message role",
        ),
        (
            "assistant",
            [{"type": "tool_result", "toolCallId": "c", "name": "x", "isError": False}],
            {},
            "content part not allowed for this message role",
        ),
        (
            "system",
            [{"type": "reasoning", "text": "r"}],
            {},
            "content part not allowed for this message role",
        ),
        ("tool", [{"type": "text", "text": "t"}], {}, "content part not allowed for this message role"),
        ("tool", [], {}, "a tool message holds exactly one tool result"),
        (
            "tool",
            [{"type": "tool_result", "toolCallId": "c", "name": "x", "isError": False}] * 2,
            {},
            "a tool message holds exactly one tool result",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"compaction": {"droppedThroughSequence": 0}},
            "a compaction boundary is only allowed on a system message",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"timestamp": "2026-01-01T10:00:00"},
            "invalid SessionMessage: string_pattern_mismatch",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"timestamp": "2026-02-30T10:00:00Z"},
            "timestamp must be ISO 8601 with an offset",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"sequenceNumber": "3"},
            "invalid SessionMessage: int_type",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"sequenceNumber": True},
            "invalid SessionMessage: int_type",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"sequenceNumber": -1},
            "invalid SessionMessage: greater_than_equal",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"sessionId": ""},
            "invalid SessionMessage: string_too_short",
        ),
        (
            "user",
            [{"type": "text", "text": "t"}],
            {"modelId": ""},
            "invalid SessionMessage: string_too_short",
        ),
        ("user", [{"type": "text", "text": "t"}], {"finishReason": "stop"}, "unknown field refused"),
        ("owner", [{"type": "text", "text": "t"}], {}, "invalid SessionMessage: literal_error"),
    ],
)
def test_message_rules_are_enforced(
    role: str, content: list[Any], extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_session_message(_message(content, role=role, **extra))
    assert caught.value.message == message


def test_a_boundary_marker_is_a_system_message() -> None:
    marker = parse_session_message(
        _message([], role="system", compaction={"droppedThroughSequence": 0}, sequenceNumber=3)
    )
    assert marker.compaction is not None
    assert marker.compaction.dropped_through_sequence == 0
    assert marker.to_wire()["compaction"] == {"droppedThroughSequence": 0}


def test_missing_required_field_is_refused() -> None:
    data = _message([{"type": "text", "text": "t"}])
    del data["timestamp"]
    with pytest.raises(InvalidInputError) as caught:
        parse_session_message(data)
    assert caught.value.message == "required field missing"
    assert caught.value.location == "timestamp"


def test_text_projection_joins_text_parts_with_a_blank_line() -> None:
    content = (
        TextPart(text="first"),
        ToolCallPart(id="c1", name="read_file"),
        TextPart(text=""),
        TextPart(text="third"),
    )
    assert message_text(content) == "first\n\n\n\nthird"
    assert message_text(()) == ""


def test_models_are_frozen() -> None:
    message = parse_session_message(_message([{"type": "text", "text": "t"}], role="user"))
    with pytest.raises(Exception, match="frozen"):
        message.role = "assistant"  # type: ignore[misc]


# -- the session record ------------------------------------------------------------------------


def _record(**extra: Any) -> dict[str, Any]:
    return {
        "id": "s1",
        "agentSlug": "code-reviewer",
        "context": {"workingDir": "/w", "fsScopeTier": "project", "variables": {"ticket": "A-1"}},
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
        **extra,
    }


def test_session_record_round_trips_with_a_snapshot() -> None:
    snapshot = {
        "id": "code-reviewer",
        "model": "claude-sonnet-4-5",
        "provider": "anthropic",
        "system_prompt": "Review code.",
        "tools": ["read_file"],
        "memory": {"type": "summary"},
    }
    record = parse_agent_session_record(_record(agentSnapshot=snapshot, title="Fix", status="ended"))
    assert record.agent_snapshot is not None
    assert record.agent_snapshot.system_prompt == "Review code."
    assert parse_agent_session_record(record.to_wire()) == record
    assert record.to_wire()["agentSnapshot"]["system_prompt"] == "Review code."


@pytest.mark.parametrize(
    "extra",
    [
        {"agentSlug": "Not Kebab"},
        {"title": ""},
        {"status": "cancelled"},
        {"totalCostMicrocents": -1},
        {"totalInputTokens": 1.5},
        {"createdAt": "yesterday"},
        {"context": {}},
        {"surprise": 1},
        {
            "agentSnapshot": {
                "id": "x",
                "model": "m",
                "provider": "anthropic",
                "system_prompt": "p",
                "extra": 1,
            }
        },
    ],
)
def test_session_record_refuses_invalid_fields(extra: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        parse_agent_session_record(_record(**extra))


# -- completed turns ---------------------------------------------------------------------------


def _user(text: str = "question") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _terminal(text: str = "answer") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def _call(*ids: str, preamble: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [] if preamble is None else [{"type": "text", "text": preamble}]
    parts += [{"type": "tool_call", "id": i, "name": "read_file"} for i in ids]
    return {"role": "assistant", "content": parts}


def _result(call_id: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "content": [{"type": "tool_result", "toolCallId": call_id, "name": "read_file", "isError": False}],
    }


def test_a_turn_with_tools_and_an_empty_final_is_accepted() -> None:
    turn = parse_completed_turn(
        {
            "user": _user(),
            "structural": [
                _call("a", "b", preamble="Reading."),
                _result("b"),
                _result("a"),
                _call("c"),
                _result("c"),
            ],
            "terminal": _terminal(""),
            "costs": [{"model": "m", "inputTokens": 3, "outputTokens": 4, "costMicrocents": 5}],
        }
    )
    assert isinstance(turn, CompletedTurn)
    assert [row.role for row in turn.rows] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert (turn.input_tokens, turn.output_tokens, turn.cost_microcents) == (3, 4, 5)


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            {"user": _terminal(), "terminal": _terminal()},
            "the first row of a turn must be a user message with a text part",
        ),
        (
            {"user": {"role": "user", "content": []}, "terminal": _terminal()},
            "the first row of a turn must be a user message with a text part",
        ),
        (
            {"user": _user(), "terminal": _call("a")},
            "the terminal row must be an assistant message with a text part and no tool call",
        ),
        (
            {"user": _user(), "terminal": {"role": "assistant", "content": []}},
            "the terminal row must be an assistant message with a text part and no tool call",
        ),
        (
            {"user": _user(), "structural": [_terminal()], "terminal": _terminal()},
            "a structural row must be an assistant tool call or a tool result",
        ),
        (
            {
                "user": _user(),
                "structural": [_call("a", "a"), _result("a"), _result("a")],
                "terminal": _terminal(),
            },
            "a tool call id is already waiting for its result",
        ),
        (
            {
                "user": _user(),
                "structural": [_call("a"), _call("a"), _result("a"), _result("a")],
                "terminal": _terminal(),
            },
            "a tool call id is already waiting for its result",
        ),
        (
            {"user": _user(), "structural": [_result("a"), _call("a")], "terminal": _terminal()},
            "a tool result must answer an earlier call of the same turn",
        ),
        (
            {"user": _user(), "structural": [_call("a", "b"), _result("a")], "terminal": _terminal()},
            "every tool call of a completed turn needs exactly one result",
        ),
        (
            {
                "user": _user(),
                "structural": [_call("a"), _result("a"), _result("a")],
                "terminal": _terminal(),
            },
            "a tool result must answer an earlier call of the same turn",
        ),
        (
            {"user": _user(), "terminal": _terminal(), "finishReason": "tool_use"},
            "invalid CompletedTurn: literal_error",
        ),
        (
            {"user": _user(), "terminal": _terminal(), "finishReason": "error"},
            "invalid CompletedTurn: literal_error",
        ),
        (
            {
                "user": _user(),
                "terminal": _terminal(),
                "costs": [{"model": "m", "callCount": 1, "unpricedCalls": 2}],
            },
            "unpriced calls cannot exceed the call count",
        ),
        (
            {"user": _user(), "structural": [{"role": "tool", "content": []}], "terminal": _terminal()},
            "a tool message holds exactly one tool result",
        ),
        (
            {
                "user": {"role": "user", "content": [{"type": "tool_call", "id": "a", "name": "x"}]},
                "terminal": _terminal(),
            },
            "content part not allowed for this message role",
        ),
        (
            {
                "user": _user(),
                "structural": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_call", "id": "a", "name": "x", "args": {}}],
                    }
                ],
                "terminal": _terminal(),
            },
            "raw tool arguments are not allowed in a session message",
        ),
    ],
)
def test_malformed_turns_are_refused(turn: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_completed_turn(turn)
    assert caught.value.message == message


def test_a_call_id_may_be_reused_once_its_result_is_in() -> None:
    turn = parse_completed_turn(
        {
            "user": _user(),
            "structural": [_call("a"), _result("a"), _call("a"), _result("a")],
            "terminal": _terminal(),
        }
    )
    assert len(turn.structural) == 4


def test_structural_drafts_keep_structure_and_leave_arguments_and_results_behind() -> None:
    rounds = [
        LlmMessage(
            role="assistant",
            content=[
                LlmTextPart(text="Checking."),
                LlmToolCallPart(id="c1", name="read_file", args={"path": "/secret/key"}),
                LlmToolCallPart(id="c2", name="made_up", args={"x": 1}),
            ],
        ),
        LlmMessage(
            role="tool",
            content=[
                LlmToolResultPart(tool_call_id="c1", result="héllo", is_error=False),
                LlmToolResultPart(tool_call_id="c2", result={"error": "no such tool"}, is_error=True),
            ],
        ),
    ]
    drafts = structural_drafts(rounds, {"c1": "read_file"}, model_id="cat-1")
    wire = [draft.to_wire() for draft in drafts]
    assert wire == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_call", "id": "c1", "name": "read_file"},
                {"type": "tool_call", "id": "c2", "name": UNKNOWN_TOOL},
            ],
            "modelId": "cat-1",
        },
        {"role": "tool", "content": [{"type": "tool_result", "toolCallId": "c1", "name": "read_file",
                                      "isError": False, "byteLength": 6}]},
        {"role": "tool", "content": [{"type": "tool_result", "toolCallId": "c2", "name": UNKNOWN_TOOL,
                                      "isError": True, "byteLength": 24}]},
    ]  # fmt: skip
    assert "secret" not in json.dumps(wire)
    assert "no such tool" not in json.dumps(wire)
    turn = CompletedTurn(
        user=MessageDraft(role="user", content=(TextPart(text="q"),)),
        structural=drafts,
        terminal=MessageDraft(role="assistant", content=(TextPart(text=""),)),
    )
    assert len(turn.rows) == 5


def test_result_byte_length_counts_utf8_bytes() -> None:
    assert result_byte_length("") == 0
    assert result_byte_length("é") == 2
    assert result_byte_length({"a": [1, "ü"]}) == len('{"a":[1,"ü"]}'.encode())


def test_cost_entry_needs_a_model() -> None:
    with pytest.raises(Exception, match="at least 1 character"):
        CostEntry(model="")


# -- titles ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("  Fix   the\n\tbuild  ", "Fix the build"),
        ("", None),
        (" \n\t ", None),
        ("x" * 40, "x" * 40),
        ("x" * 41, "x" * 39 + "…"),
        ("é" * 50, "é" * 39 + "…"),
    ],
)
def test_title_is_the_collapsed_first_user_text(text: str, title: str | None) -> None:
    assert derive_title(text) == title


@given(st.text())
def test_title_never_exceeds_the_cap(text: str) -> None:
    title = derive_title(text)
    assert title is None or (0 < len(title) <= TITLE_MAX_CODE_POINTS)


# -- schemas -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(json_schemas()))
def test_committed_schema_matches_the_models(name: str) -> None:
    committed = (ROOT / "schemas" / name).read_text(encoding="utf-8")
    assert committed == render(json_schemas()[name]), (
        f"schemas/{name} drifted from its model: regenerate it from _messages.json_schemas()"
    )


def _validator(name: str) -> Draft202012Validator:
    schema = json_schemas()[name]
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.parametrize(("role", "part"), VALID_PARTS, ids=lambda v: v if isinstance(v, str) else v["type"])
def test_message_schema_accepts_what_the_model_accepts(role: str, part: dict[str, Any]) -> None:
    _validator("session-message.schema.json").validate(_message([part], role=role))


# The schema cannot express one cross-field rule (durationMs only on audio/video); the model does.
SCHEMA_REFUSED = [case for case in REFUSED_PARTS if case[0] != "duration on an image"]


@pytest.mark.parametrize(("case", "part", "message"), SCHEMA_REFUSED, ids=[c[0] for c in SCHEMA_REFUSED])
def test_message_schema_refuses_forbidden_content(case: str, part: dict[str, Any], message: str) -> None:
    role = {"tool_result": "tool", "media": "user"}.get(part["type"], "assistant")
    with pytest.raises(SchemaError):
        _validator("session-message.schema.json").validate(_message([part], role=role))


def test_message_schema_requires_the_part_discriminator() -> None:
    with pytest.raises(SchemaError):
        _validator("session-message.schema.json").validate(_message([{"text": "no type"}]))


def test_record_schema_accepts_a_record_the_model_writes() -> None:
    wire = parse_agent_session_record(_record(title="t")).to_wire()
    _validator("agent-session-record.schema.json").validate(json.loads(json.dumps(wire)))


def test_part_classes_are_distinct_arms() -> None:
    message = parse_session_message(
        _message(
            [
                {"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": HANDLE}},
                {"type": "text", "text": "t"},
            ],
            role="user",
        )
    )
    assert [type(part) for part in message.content] == [MediaPart, TextPart]
    tool = parse_session_message(
        _message([{"type": "tool_result", "toolCallId": "c", "name": "x", "isError": True}], role="tool")
    )
    assert isinstance(tool.content[0], ToolResultPart)
    assert isinstance(tool, SessionMessage)
