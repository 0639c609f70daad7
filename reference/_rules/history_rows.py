"""The row codec of ``history.db``: pure mapping between durable shapes and table rows.

No I/O here: timestamps to epoch milliseconds and back, strict JSON, the denormalised columns a
message row carries (derived from its canonical body on write, compared with it again on read), and
the fixed errors of the store (KD-DB-3, KD-DB-4).
:mod:`relavium_reference._host.history_store` runs SQLite around it.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from relavium_reference._model.errors import DependencyError, InvalidInputError
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_text,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._model.shapes import AgentSnapshot, SessionContext
from relavium_reference._model.vocabulary import TERMINAL_FINISH_REASONS

__all__ = [
    "MAX_EPOCH_MS",
    "MIN_EPOCH_MS",
    "STORE_ERRORS",
    "MessageColumns",
    "StoreError",
    "derive_columns",
    "epoch_ms",
    "iso_from_ms",
    "message_from_row",
    "message_row",
    "session_from_row",
    "session_row",
    "stored_message",
    "strict_json",
    "values_row",
]

#: The fixed messages of :class:`StoreError` (KD-DB-4), keyed by a stable code.
STORE_ERRORS: dict[str, str] = {
    "session_not_found": "session not found",
    "session_exists": "a session with this id already exists",
    "malformed_json": "stored JSON is malformed",
    "invalid_message": "stored message is not a valid session message",
    "invalid_session": "stored session row is not a valid session record",
    "text_mismatch": "stored text projection does not match the canonical body",
    "tool_calls_mismatch": "stored tool calls do not match the canonical body",
    "tool_call_id_mismatch": "stored tool call id does not match the canonical body",
    "name_mismatch": "stored tool name does not match the canonical body",
    "finish_reason_invalid": "stored finish reason is not allowed for this row",
    "context_mismatch": "stored context columns do not match the canonical context",
    "sequence_gap": "stored message sequence numbers are not gap-free",
    "totals_mismatch": "stored session totals do not match the cost rows",
    "totals_range": "the write would carry a token or money total past a 64-bit integer",
    "schema_version": "history.db has an unsupported schema version",
    "closed": "the session store is closed",
    "unavailable": "history.db could not be opened, read or written",
    "constraint": "history.db refused a write that breaks its constraints",
    "permissions": "history.db or its side files could not be made private to their owner",
    "writer_busy": "another live writer holds this session",
    "not_history": "the file is not a history.db (it lacks the session tables)",
}


class StoreError(DependencyError):
    """The durable store refused or could not serve a request.

    ``code`` is a key of :data:`STORE_ERRORS`; the message is the fixed text for it and never holds
    stored content.

    ``row`` names the stored row a read refused (its table and SQLite ``rowid``, never its content),
    when the store knows it; ``str(error)`` then ends with it.
    """

    def __init__(self, code: str, *, row: str | None = None) -> None:
        super().__init__(STORE_ERRORS[code] if row is None else f"{STORE_ERRORS[code]} ({row})")
        self.code = code
        self.message = STORE_ERRORS[code]
        self.row = row


# ---------------------------------------------------------------------------------------------
# Pure helpers: JSON, time, and the denormalised columns of a message row
# ---------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)
#: The instants the store can hold (KD-DB-7): UTC years 1 to 9999, in epoch milliseconds.
MIN_EPOCH_MS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _ONE_MS
MAX_EPOCH_MS = (datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC) - _EPOCH) // _ONE_MS


def epoch_ms(timestamp: str, *, location: str = "timestamp") -> int:
    """ISO 8601 (with offset) to integer epoch milliseconds, truncating below the millisecond.

    A timestamp that is not ISO 8601 with an offset, or whose instant lies outside UTC years 1 to 9999
    (``0001-01-01T00:00:00+23:59``: it could be written but never read back), raises
    :class:`InvalidInputError` (KD-DB-7).
    """
    try:
        parsed = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            raise ValueError("no offset")
        ms = (parsed - _EPOCH) // _ONE_MS
    except (AttributeError, TypeError, ValueError, OverflowError):
        raise InvalidInputError("timestamp must be ISO 8601 with an offset", location=location) from None
    if not MIN_EPOCH_MS <= ms <= MAX_EPOCH_MS:
        raise InvalidInputError("timestamp is outside the range the store can hold", location=location)
    return ms


def iso_from_ms(ms: int) -> str:
    """Integer epoch milliseconds to the store's canonical form ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    Anything but an integer in the store's range (KD-DB-7) raises :class:`InvalidInputError`.
    """
    if isinstance(ms, bool) or not isinstance(ms, int) or not MIN_EPOCH_MS <= ms <= MAX_EPOCH_MS:
        raise InvalidInputError("stored time is not epoch milliseconds in range", location="created_at")
    seconds, millis = divmod(ms, 1000)
    return f"{_second_text(seconds)}{millis:03d}Z"


@functools.lru_cache(maxsize=1024)  # rows of one turn, and of one load, share their seconds
def _second_text(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.`` of whole epoch seconds."""
    moment = _EPOCH + timedelta(seconds=seconds)
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.")


def _stored_time(value: Any, code: str) -> str:
    """A stored epoch-milliseconds column as ISO text; anything else is the row's :class:`StoreError`."""
    try:
        return iso_from_ms(value)
    except InvalidInputError:
        raise StoreError(code) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError("duplicate key")
        out[key] = value
    return out


def strict_json(text: str) -> Any:
    """Parse JSON refusing duplicate keys and non-finite numbers; raise :class:`StoreError`."""
    try:  # fast path: text in the store's own compact form cannot hide a duplicate key or a NaN
        value = json.loads(text)
        if _dumps(value) == text:
            return value
    except (ValueError, TypeError, RecursionError):
        pass  # the strict parse below decides, and names the defect
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_refuse_constant)
    except (ValueError, TypeError, RecursionError):
        raise StoreError("malformed_json") from None


# One encoder for every row: ``json.dumps`` with these options builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


MessageColumns = dict[str, Any]


def derive_columns(message: SessionMessage, finish_reason: str | None = None) -> MessageColumns:
    """The denormalised columns of a message row, computed from its canonical body (KD-DB-3).

    * ``content``: the text projection when the message has a text part, else ``NULL``;
    * ``tool_calls``: the JSON array of its call parts, else ``NULL``;
    * ``tool_call_id`` / ``name``: those of the single result part of a ``tool`` row, else ``NULL``;
    * ``finish_reason``: only on assistant rows: ``tool_use`` for a call row, and for any other
      assistant row the given terminal reason (default ``stop``).
    """
    return _derived(message.role, message.content, finish_reason)


def _derived(role: str, content: tuple[Any, ...], finish_reason: str | None) -> MessageColumns:
    calls = [part.to_wire() for part in content if isinstance(part, ToolCallPart)]
    result = next((p for p in content if isinstance(p, ToolResultPart)), None)
    reason: str | None = None
    if role == "assistant":
        reason = "tool_use" if calls else (finish_reason or "stop")
    has_text = any(isinstance(part, TextPart) for part in content)
    return {
        "content": message_text(content) if has_text else None,
        "tool_calls": _dumps(calls) if calls else None,
        "tool_call_id": result.tool_call_id if role == "tool" and result else None,
        "name": result.name if role == "tool" and result else None,
        "finish_reason": reason,
    }


def _check_columns(message: SessionMessage, row: dict[str, Any]) -> None:
    """Compare a row's denormalised columns with the canonical body; raise :class:`StoreError`."""
    stored_reason = row["finish_reason"]
    if message.role == "assistant":
        wanted_tool_use = any(isinstance(p, ToolCallPart) for p in message.content)
        allowed = {"tool_use"} if wanted_tool_use else TERMINAL_FINISH_REASONS
        if stored_reason not in allowed:
            raise StoreError("finish_reason_invalid")
    elif stored_reason is not None:
        raise StoreError("finish_reason_invalid")
    expected = derive_columns(message, stored_reason if stored_reason in TERMINAL_FINISH_REASONS else None)
    if row["content"] != expected["content"]:
        raise StoreError("text_mismatch")
    stored_calls = row["tool_calls"]
    if (stored_calls is None) != (expected["tool_calls"] is None) or (
        stored_calls is not None and strict_json(stored_calls) != json.loads(expected["tool_calls"])
    ):
        raise StoreError("tool_calls_mismatch")
    if row["tool_call_id"] != expected["tool_call_id"]:
        raise StoreError("tool_call_id_mismatch")
    if row["name"] != expected["name"]:
        raise StoreError("name_mismatch")


def message_from_row(row: dict[str, Any]) -> SessionMessage:
    """Rebuild and check one ``session_messages`` row; raise :class:`StoreError` on any defect."""
    raw_parts = row["content_parts"]
    parts = [] if raw_parts is None else strict_json(raw_parts)
    wire: dict[str, Any] = {
        "id": row["id"],
        "sessionId": row["session_id"],
        "sequenceNumber": row["sequence_number"],
        "role": row["role"],
        "content": parts,
        "timestamp": _stored_time(row["created_at"], "invalid_message"),
    }
    if row["model_id"] is not None:
        wire["modelId"] = row["model_id"]
    if row["compaction_dropped_through_sequence"] is not None:
        wire["compaction"] = {"droppedThroughSequence": row["compaction_dropped_through_sequence"]}
    try:
        message = parse_session_message(wire)
    except InvalidInputError as exc:
        raise StoreError("invalid_message") from exc
    _check_columns(message, row)
    return message


def message_row(message: SessionMessage, finish_reason: str | None = None) -> dict[str, Any]:
    """The ``session_messages`` row of ``message``; :class:`InvalidInputError` if it cannot be read back."""
    return stored_message(message, finish_reason)[0]


def stored_message(
    message: SessionMessage, finish_reason: str | None = None
) -> tuple[dict[str, Any], SessionMessage]:
    """:func:`message_row` and the message its reader rebuilds from that row (what a later load returns).

    The write side passes the read side's checks, so the one read both proves the row and gives the
    stored form (a caller's timestamp in UTC milliseconds) without reading it back from the database.
    """
    row = values_row(
        message_id=message.id,
        session_id=message.session_id,
        sequence_number=message.sequence_number,
        role=message.role,
        content=message.content,
        model_id=message.model_id,
        dropped_through=message.compaction.dropped_through_sequence if message.compaction else None,
        created_at=epoch_ms(message.timestamp, location="timestamp"),
        finish_reason=finish_reason,
    )
    try:
        return row, message_from_row(row)
    except StoreError:
        raise InvalidInputError("this value cannot be stored and read back", location="timestamp") from None


def values_row(
    *,
    message_id: str,
    session_id: str,
    sequence_number: int,
    role: str,
    content: tuple[Any, ...],
    model_id: str | None,
    dropped_through: int | None,
    created_at: int,
    finish_reason: str | None,
) -> dict[str, Any]:
    """The ``session_messages`` row of a message with these values (``created_at`` in epoch ms), unchecked.

    :func:`stored_message` builds every row with it and then reads the row back.  A writer that builds a
    row straight from values it holds (a turn's drafts) gets the same row, and must have it decided by
    the store's reader before it writes it.
    """
    return {
        "id": message_id,
        "session_id": session_id,
        "sequence_number": sequence_number,
        "role": role,
        "content_parts": _dumps([part.to_wire() for part in content]),
        "model_id": model_id,
        "compaction_dropped_through_sequence": dropped_through,
        "created_at": created_at,
        **_derived(role, content, finish_reason),
    }


def _readable(read: Any, row: dict[str, Any], location: str) -> None:
    """Refuse to write a row its own reader would refuse (nothing the store accepts can poison it)."""
    try:
        read(row)
    except StoreError:
        raise InvalidInputError("this value cannot be stored and read back", location=location) from None


def session_row(record: AgentSessionRecord) -> dict[str, Any]:
    """The ``agent_sessions`` row of ``record``; :class:`InvalidInputError` if it could not be read back."""
    context = record.context
    row = {
        "id": record.id,
        "agent_id": record.agent_id,
        "agent_slug": record.agent_slug,
        "agent_snapshot": _dumps(record.agent_snapshot.to_wire()) if record.agent_snapshot else None,
        "title": record.title,
        "model_id": record.model_id,
        "working_dir": context.working_dir,
        "git_ref": context.git_ref,
        "fs_scope_tier": context.fs_scope_tier.value,
        "status": record.status,
        "context_json": _dumps(context.to_wire()),
        "total_input_tokens": record.total_input_tokens,
        "total_output_tokens": record.total_output_tokens,
        "total_cost_microcents": record.total_cost_microcents,
        "exported_workflow_path": record.exported_workflow_path,
        "deleted_at": epoch_ms(record.deleted_at, location="deletedAt") if record.deleted_at else None,
        "created_at": epoch_ms(record.created_at, location="createdAt"),
        "updated_at": epoch_ms(record.updated_at, location="updatedAt"),
    }
    _readable(session_from_row, row, "record")
    return row


def session_from_row(row: dict[str, Any]) -> AgentSessionRecord:
    """Rebuild and check one ``agent_sessions`` row; raise :class:`StoreError` on any defect."""
    context_wire = strict_json(row["context_json"])
    snapshot_wire = None if row["agent_snapshot"] is None else strict_json(row["agent_snapshot"])
    try:
        context = SessionContext.model_validate(context_wire)
        snapshot = None if snapshot_wire is None else AgentSnapshot.model_validate(snapshot_wire)
    except ValidationError:
        raise StoreError("invalid_session") from None
    if (row["working_dir"], row["git_ref"], row["fs_scope_tier"]) != (
        context.working_dir,
        context.git_ref,
        context.fs_scope_tier.value,
    ):
        raise StoreError("context_mismatch")
    wire: dict[str, Any] = {
        "id": row["id"],
        "agentSlug": row["agent_slug"],
        "context": context.to_wire(),
        "status": row["status"],
        "totalInputTokens": row["total_input_tokens"],
        "totalOutputTokens": row["total_output_tokens"],
        "totalCostMicrocents": row["total_cost_microcents"],
        "createdAt": _stored_time(row["created_at"], "invalid_session"),
        "updatedAt": _stored_time(row["updated_at"], "invalid_session"),
    }
    optional = {
        "agentId": row["agent_id"],
        "title": row["title"],
        "modelId": row["model_id"],
        "exportedWorkflowPath": row["exported_workflow_path"],
        "deletedAt": (
            None if row["deleted_at"] is None else _stored_time(row["deleted_at"], "invalid_session")
        ),
    }
    wire.update({key: value for key, value in optional.items() if value is not None})
    if snapshot is not None:
        wire["agentSnapshot"] = snapshot.to_wire()
    try:
        return parse_agent_session_record(wire)
    except InvalidInputError as exc:
        raise StoreError("invalid_session") from exc


# ---------------------------------------------------------------------------------------------
# Files: 0700 directory, 0600 database, created before SQLite opens them
# ---------------------------------------------------------------------------------------------
