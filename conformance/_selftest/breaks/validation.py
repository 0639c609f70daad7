"""Breaks of validation and persistence (clauses AS-VAL-*): reading and writing stored rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from relavium_conformance._reference.impl import REFERENCE_PURE
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import ResumeCleansRows
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_reference import InvalidInputError
from relavium_reference._host.history_store import (
    StoreError,
    derive_columns,
    iso_from_ms,
    message_from_row,
    strict_json,
)
from relavium_reference._model.messages import SessionMessage, parse_session_message
from relavium_reference._model.vocabulary import TERMINAL_FINISH_REASONS

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


_FINAL = ("length", "content_filter")


@break_of(
    name="final-stop-flattened",
    summary="a final stop with length or content_filter is reported as stop",
    clauses=("AS-VAL-009",),
)
class _FinalStopFlattened(WireVariant):
    """A final stop's reason other than stop is reported as stop: result, terminal event and row."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed" and event.get("stopReason") in _FINAL:
            event["stopReason"] = "stop"
        return event

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        turn = params.get("turn")
        if method == "host.commitTurn" and isinstance(turn, dict) and turn.get("finishReason") in _FINAL:
            turn["finishReason"] = "stop"
        return params

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        if method == "session.send" and isinstance(result, dict) and result.get("stopReason") in _FINAL:
            result["stopReason"] = "stop"
        return result


def _body_only(row: Mapping[str, Any]) -> SessionMessage:
    """The message a row's canonical columns hold, with no look at its denormalised columns."""
    raw = row["content_parts"]
    wire: dict[str, Any] = {
        "id": row["id"],
        "sessionId": row["session_id"],
        "sequenceNumber": row["sequence_number"],
        "role": row["role"],
        "content": [] if raw is None else strict_json(raw),
        "timestamp": iso_from_ms(row["created_at"]),
    }
    if row["model_id"] is not None:
        wire["modelId"] = row["model_id"]
    if row["compaction_dropped_through_sequence"] is not None:
        wire["compaction"] = {"droppedThroughSequence": row["compaction_dropped_through_sequence"]}
    try:
        return parse_session_message(wire)
    except InvalidInputError:
        raise StoreError("invalid_message") from None


@break_of(
    name="store-names-unchecked",
    summary="the store reads a row whose name or toolCallId column disagrees with its part",
    clauses=("AS-VAL-008",),
    replaces="read_stored_row",
)
def _names_unchecked(row: Mapping[str, Any]) -> SessionMessage:
    try:
        return message_from_row(dict(row))
    except StoreError as refusal:
        if refusal.code in ("name_mismatch", "tool_call_id_mismatch"):
            return _body_only(row)
        raise


_KNOWN_PART_KEYS = {
    "text": {"type", "text"},
    "tool_call": {"type", "id", "name"},
    "tool_result": {"type", "toolCallId", "name", "isError", "byteLength"},
}


@break_of(
    name="store-drops-unknown-fields",
    summary="the store drops unknown part fields instead of refusing the row",
    clauses=("AS-VAL-010",),
    replaces="read_stored_row",
)
def _unknown_fields_dropped(row: Mapping[str, Any]) -> SessionMessage:
    """Unknown keys of a known part are dropped before the row is read, instead of refusing it."""
    try:
        parts = json.loads(row["content_parts"]) if isinstance(row.get("content_parts"), str) else None
    except ValueError:
        parts = None
    if isinstance(parts, list):
        cleaned = [
            {k: v for k, v in part.items() if k in _KNOWN_PART_KEYS.get(str(part.get("type")), set(part))}
            if isinstance(part, dict)
            else part
            for part in parts
        ]
        row = {**row, "content_parts": json.dumps(cleaned)}
    return message_from_row(dict(row))


@break_of(
    name="store-one-error-code",
    summary="every refused row is answered invalid_message, whatever its defect",
    clauses=("AS-VAL-011",),
    replaces="read_stored_row",
)
def _one_error_code(row: Mapping[str, Any]) -> SessionMessage:
    try:
        return message_from_row(dict(row))
    except StoreError:
        raise StoreError("invalid_message") from None


@break_of(
    name="store-skips-column-checks",
    summary="the store reads a row without comparing its denormalised columns with the canonical body",
    clauses=("AS-VAL-005",),
    replaces="read_stored_row",
)
def _skips_column_checks(row: Mapping[str, Any]) -> SessionMessage:
    return _body_only(row)


@break_of(
    name="store-trusts-text-column",
    summary="the store reads a row without comparing its text projection column with the canonical text",
    clauses=("AS-VAL-006",),
    replaces="read_stored_row",
)
def _trusts_text_column(row: Mapping[str, Any]) -> SessionMessage:
    """Every column is checked except ``content``, which is taken as the body's own projection."""
    message = _body_only(row)
    return message_from_row({**row, "content": derive_columns(message)["content"]})


@break_of(
    name="store-allows-finish-reason-anywhere",
    summary="the store accepts any finish reason, or none, on a row of any role",
    clauses=("AS-VAL-009",),
    replaces="read_stored_row",
)
def _allows_finish_reason_anywhere(row: Mapping[str, Any]) -> SessionMessage:
    """Any finish reason on any row is accepted; the other columns are still checked."""
    message = _body_only(row)
    stored = row["finish_reason"]
    wanted = derive_columns(message, stored if stored in TERMINAL_FINISH_REASONS else None)["finish_reason"]
    return message_from_row({**row, "finish_reason": wanted})


@break_of(
    name="store-writes-empty-tool-calls",
    summary="the store writes an empty tool_calls array, not NULL, for a row without call parts",
    clauses=("AS-VAL-007",),
    replaces="stored_row_columns",
)
def _writes_empty_tool_calls(message: SessionMessage, finish_reason: str | None) -> dict[str, Any]:
    """A row without call parts gets an empty array in ``tool_calls`` instead of NULL."""
    columns = REFERENCE_PURE.stored_row_columns(message, finish_reason)
    return {**columns, "toolCalls": columns["toolCalls"] or []}


_PART_FIELDS = {"type", "text", "id", "name", "toolCallId", "isError", "mimeType", "handle", "args"}


@break_of(
    name="unknown-part-fields-dropped",
    summary="resume drops unknown content fields instead of refusing the row",
    clauses=("AS-VAL-001",),
)
class _UnknownPartFieldsDropped(ResumeCleansRows):
    def clean(self, row: dict[str, Any]) -> dict[str, Any]:
        content = row.get("content")
        if isinstance(content, list):
            row["content"] = [
                {k: v for k, v in part.items() if k in _PART_FIELDS} if isinstance(part, dict) else part
                for part in content
            ]
        return row
