"""The durable transcript: strict ``SessionMessage`` and the session-only content-part union.

A durable message records *that* a tool ran and how it ended, never what it was given or what it
returned.  The union refuses raw tool arguments, raw tool results, reasoning continuation
signatures, non-handle media and unknown fields, each with a fixed message (the offending value is
never echoed).  The shapes the specification leaves to a companion document are the kit's choices,
recorded in ``docs/kit-defined.md`` (KD-MSG-*).

Also here: the session row (``AgentSessionRecord``), the plain-text projection shared by the store
and by resume, and the JSON Schema generator behind ``schemas/session-message.schema.json`` and
``schemas/agent-session-record.schema.json``.
"""

from __future__ import annotations

import functools
import re
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.shapes import KEBAB_ID_PATTERN, AgentSnapshot, SessionContext, WireModel

__all__ = [
    "ISO_TIMESTAMP_PATTERN",
    "MEDIA_HANDLE_PATTERN",
    "REFUSAL_MESSAGES",
    "SCHEMA_DRAFT",
    "TOOL_CALL_ID_PATTERN",
    "TOOL_NAME_PATTERN",
    "UNKNOWN_TOOL",
    "AgentSessionRecord",
    "Compaction",
    "MediaHandle",
    "MediaPart",
    "MessageRole",
    "ReasoningPart",
    "SessionContentPart",
    "SessionMessage",
    "SessionStatus",
    "TextPart",
    "ToolAttachment",
    "ToolCallPart",
    "ToolResultPart",
    "fixed_validation_error",
    "json_schemas",
    "message_text",
    "parse_agent_session_record",
    "parse_content_part",
    "parse_session_message",
]

SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: The fixed name a structural call carries when the model asked for a tool that did not resolve.
UNKNOWN_TOOL = "unknown_tool"

MEDIA_HANDLE_PATTERN = r"^media://sha256-[0-9a-f]{64}$"
TOOL_CALL_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
TOOL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$"
ISO_TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$"
_MIME_PATTERN = r"^[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*$"

MessageRole = Literal["system", "user", "assistant", "tool"]
SessionStatus = Literal["active", "idle", "exported", "ended"]

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
NonNegative = Annotated[StrictInt, Field(ge=0)]
Timestamp = Annotated[StrictStr, Field(pattern=ISO_TIMESTAMP_PATTERN)]

# Fixed refusal messages (KD-MSG-2).  Error types are ours; ``parse_*`` turn them into messages.
REFUSAL_MESSAGES: dict[str, str] = {
    "raw_tool_arguments": "raw tool arguments are not allowed in a session message",
    "raw_tool_result": "raw tool results are not allowed in a session message",
    "reasoning_signature": "reasoning signatures are not allowed in a session message",
    "media_not_handle": "session media must be a handle reference",
    "unknown_part_type": "unknown session content part type",
    "part_not_allowed_for_role": "content part not allowed for this message role",
    "tool_row_shape": "a tool message holds exactly one tool result",
    "compaction_not_system": "a compaction boundary is only allowed on a system message",
    "turn_draft_invalid": "a message draft breaks the session message rules",
    "bad_timestamp": "timestamp must be ISO 8601 with an offset",
    "media_duration_not_timed": "durationMs is only allowed on audio or video media",
    "extra_forbidden": "unknown field refused",
    "missing": "required field missing",
}
# Refusals of forbidden content win over any other error reported for the same input.
_PRIORITY = ("raw_tool_arguments", "raw_tool_result", "reasoning_signature", "media_not_handle")

_RAW_ARGUMENT_KEYS = frozenset({"args", "arguments", "input", "parameters"})
_RAW_RESULT_KEYS = frozenset({"result", "content", "output"})


def _refuse(kind: str) -> PydanticCustomError:
    return PydanticCustomError(kind, REFUSAL_MESSAGES[kind])


class TextPart(WireModel):
    type: Literal["text"] = "text"
    text: StrictStr


class ToolCallPart(WireModel):
    """A structural tool call: which tool the model asked for, never with what arguments."""

    type: Literal["tool_call"] = "tool_call"
    id: Annotated[StrictStr, Field(pattern=TOOL_CALL_ID_PATTERN)]
    name: Annotated[StrictStr, Field(pattern=TOOL_NAME_PATTERN)]

    @model_validator(mode="before")
    @classmethod
    def _no_raw_arguments(cls, data: Any) -> Any:
        if isinstance(data, dict) and _RAW_ARGUMENT_KEYS & data.keys():
            raise _refuse("raw_tool_arguments")
        return data


class ToolAttachment(WireModel):
    """Handle metadata of a medium a tool produced: no file name, no transcript."""

    mime_type: Annotated[StrictStr, Field(pattern=_MIME_PATTERN)]
    ref: Annotated[StrictStr, Field(pattern=MEDIA_HANDLE_PATTERN)]
    byte_length: NonNegative | None = None


class ToolResultPart(WireModel):
    """A structural tool result: which call ended, how, and how large its output was."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: Annotated[StrictStr, Field(pattern=TOOL_CALL_ID_PATTERN)]
    name: Annotated[StrictStr, Field(pattern=TOOL_NAME_PATTERN)]
    is_error: StrictBool
    byte_length: NonNegative | None = None
    truncated: StrictBool | None = None
    attachments: Annotated[tuple[ToolAttachment, ...], Field(max_length=16)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_raw_result(cls, data: Any) -> Any:
        if isinstance(data, dict) and _RAW_RESULT_KEYS & data.keys():
            raise _refuse("raw_tool_result")
        return data


class ReasoningPart(WireModel):
    """Model reasoning text; the provider's continuation signature is never stored."""

    type: Literal["reasoning"] = "reasoning"
    text: StrictStr
    redacted: StrictBool | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_signature(cls, data: Any) -> Any:
        if isinstance(data, dict) and "signature" in data:
            raise _refuse("reasoning_signature")
        return data


class MediaHandle(WireModel):
    kind: Literal["handle"]
    ref: Annotated[StrictStr, Field(pattern=MEDIA_HANDLE_PATTERN)]

    @model_validator(mode="before")
    @classmethod
    def _handle_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kind") != "handle":
            raise _refuse("media_not_handle")
        return data


class MediaPart(WireModel):
    """A medium by content-addressed handle only: never inline bytes, a URL, a name or a transcript."""

    type: Literal["media"] = "media"
    mime_type: Annotated[StrictStr, Field(pattern=_MIME_PATTERN)]
    source: MediaHandle
    byte_length: NonNegative | None = None
    duration_ms: NonNegative | None = None

    @model_validator(mode="before")
    @classmethod
    def _handle_source(cls, data: Any) -> Any:
        if isinstance(data, dict) and not isinstance(data.get("source", {}), dict | MediaHandle):
            raise _refuse("media_not_handle")
        return data

    @model_validator(mode="after")
    def _duration_only_when_timed(self) -> MediaPart:
        if self.duration_ms is not None and not self.mime_type.startswith(("audio/", "video/")):
            raise _refuse("media_duration_not_timed")
        return self


SessionContentPart = Annotated[
    TextPart | ToolCallPart | ToolResultPart | ReasoningPart | MediaPart,
    Field(discriminator="type"),
]

_PART_TYPES = frozenset({"text", "tool_call", "tool_result", "reasoning", "media"})
_ALLOWED_PARTS: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "user": frozenset({"text", "media"}),
    "assistant": frozenset({"text", "tool_call", "reasoning", "media"}),
    "tool": frozenset({"tool_result"}),
}


class Compaction(WireModel):
    dropped_through_sequence: NonNegative


# The store's own form (``YYYY-MM-DDTHH:MM:SS.mmmZ``, every stored row): its time fields are in range by
# the pattern, so only the date can make ``fromisoformat`` refuse it, and dates repeat across rows.
_CANONICAL_TIMESTAMP = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z"
)


@functools.lru_cache(maxsize=256)
def _real_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_timestamp(value: str) -> str:
    canonical = _CANONICAL_TIMESTAMP.fullmatch(value)
    if canonical is not None and _real_date(canonical.group(1)):
        return value  # what fromisoformat below would accept, with an offset
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _refuse("bad_timestamp") from None
    if parsed.tzinfo is None:
        raise _refuse("bad_timestamp")
    return value


class SessionMessage(WireModel):
    """One durable, append-only transcript row of a session."""

    id: NonEmpty
    session_id: NonEmpty
    sequence_number: NonNegative
    role: MessageRole
    content: tuple[SessionContentPart, ...]
    model_id: NonEmpty | None = None
    compaction: Compaction | None = None
    timestamp: Timestamp

    @model_validator(mode="before")
    @classmethod
    def _known_part_types(cls, data: Any) -> Any:
        content = data.get("content") if isinstance(data, dict) else None
        if isinstance(content, list | tuple):  # any other shape is left to the field's own check
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if isinstance(part, dict) and not (isinstance(kind, str) and kind in _PART_TYPES):
                    raise _refuse("unknown_part_type")
        return data

    @field_validator("timestamp")
    @classmethod
    def _timestamp_has_offset(cls, value: str) -> str:
        return _check_timestamp(value)

    @model_validator(mode="after")
    def _role_rules(self) -> SessionMessage:
        allowed = _ALLOWED_PARTS[self.role]
        if any(part.type not in allowed for part in self.content):
            raise _refuse("part_not_allowed_for_role")
        if self.role == "tool" and len(self.content) != 1:
            raise _refuse("tool_row_shape")
        if self.compaction is not None and self.role != "system":
            raise _refuse("compaction_not_system")
        return self

    @property
    def text(self) -> str:
        """The plain-text projection of this message (see :func:`message_text`)."""
        return message_text(self.content)

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(part for part in self.content if isinstance(part, ToolCallPart))

    @property
    def has_text_part(self) -> bool:
        return any(isinstance(part, TextPart) for part in self.content)


class AgentSessionRecord(WireModel):
    """The durable session row (companion database contract, ``agent_sessions``)."""

    id: NonEmpty
    agent_slug: Annotated[StrictStr, Field(pattern=KEBAB_ID_PATTERN)]
    agent_id: NonEmpty | None = None
    agent_snapshot: AgentSnapshot | None = None
    title: NonEmpty | None = None
    model_id: NonEmpty | None = None
    context: SessionContext
    status: SessionStatus = "active"
    total_input_tokens: NonNegative = 0
    total_output_tokens: NonNegative = 0
    total_cost_microcents: NonNegative = 0
    exported_workflow_path: NonEmpty | None = None
    created_at: Timestamp
    updated_at: Timestamp
    deleted_at: Timestamp | None = None

    @field_validator("created_at", "updated_at", "deleted_at")
    @classmethod
    def _timestamps_have_offset(cls, value: str | None) -> str | None:
        return value if value is None else _check_timestamp(value)


def message_text(content: tuple[Any, ...] | list[Any]) -> str:
    """The text projection: the message's text parts in order, joined by one blank line (KD-MSG-4)."""
    return "\n\n".join(part.text for part in content if isinstance(part, TextPart))


def fixed_validation_error(
    exc: ValidationError, model_name: str, extra_messages: dict[str, str] | None = None
) -> InvalidInputError:
    """Turn a validation failure into :class:`InvalidInputError` with a fixed, value-free message.

    A refusal of forbidden content (raw arguments or results, signatures, inline media) is
    reported in preference to any other error found in the same input.
    """
    errors = exc.errors()
    chosen = next((e for kind in _PRIORITY for e in errors if e["type"] == kind), errors[0])
    path = chosen["loc"][:-1] if chosen["type"] == "extra_forbidden" else chosen["loc"]
    location = ".".join(str(part) for part in path)  # an unknown key is input: never echoed
    known = {**REFUSAL_MESSAGES, **(extra_messages or {})}
    message = known.get(chosen["type"], f"invalid {model_name}: {chosen['type']}")
    return InvalidInputError(message, location=location)


def parse_session_message(data: Any) -> SessionMessage:
    """Validate a wire-form message; refusals raise :class:`InvalidInputError` with a fixed message."""
    try:
        return SessionMessage.model_validate(data)
    except ValidationError as exc:
        raise fixed_validation_error(exc, "SessionMessage") from None


def parse_content_part(data: Any) -> TextPart | ToolCallPart | ToolResultPart | ReasoningPart | MediaPart:
    """Validate one wire-form content part (same fixed refusals as :func:`parse_session_message`)."""
    probe = {
        "id": "probe",
        "sessionId": "probe",
        "sequenceNumber": 0,
        "role": _role_for_part(data),
        "content": [data],
        "timestamp": "1970-01-01T00:00:00Z",
    }
    try:
        return SessionMessage.model_validate(probe).content[0]
    except ValidationError as exc:
        raise fixed_validation_error(exc, "SessionContentPart") from None


def _role_for_part(data: Any) -> str:
    kind = data.get("type") if isinstance(data, dict) else None
    return {"tool_result": "tool", "media": "user"}.get(str(kind), "assistant")


def parse_agent_session_record(data: Any) -> AgentSessionRecord:
    """Validate a wire-form session row; refusals raise :class:`InvalidInputError`."""
    try:
        return AgentSessionRecord.model_validate(data)
    except ValidationError as exc:
        raise fixed_validation_error(exc, "AgentSessionRecord") from None


_SCHEMA_ID_BASE = "https://relavium.dev/conformance/schemas/"
_SCHEMA_SOURCES: dict[str, tuple[type[WireModel], str]] = {
    "session-message.schema.json": (
        SessionMessage,
        "One durable, append-only session transcript row with its strict session-only content parts.",
    ),
    "agent-session-record.schema.json": (AgentSessionRecord, "The durable session row."),
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """The committed JSON Schemas generated from the models: ``{file name: schema}``.

    Same layout as :mod:`relavium_reference._schemas` (dialect, ``$id`` under the kit's base, a
    description).  The content-part discriminator ``type`` is required on the wire, although the
    Python models default it.
    """
    out: dict[str, dict[str, Any]] = {}
    for name, (model, description) in _SCHEMA_SOURCES.items():
        body = model.model_json_schema(by_alias=True, mode="validation")
        for definition in body.get("$defs", {}).values():
            if "const" in definition.get("properties", {}).get("type", {}):
                required = definition.get("required", [])
                definition["required"] = ["type", *(name for name in required if name != "type")]
                definition["properties"]["type"].pop("default", None)
        out[name] = {
            "$schema": SCHEMA_DRAFT,
            "$id": _SCHEMA_ID_BASE + name,
            "description": description,
            **body,
        }
    return out
