"""Broken pure functions, second set: the store's row checks, resume's reading of the rows, and the
export's idea of a turn; one rule each, which the vector suites citing its clause must catch.

Each wraps the engine's own function and damages its input or its output in one place.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import REFERENCE_PURE, PureFunctions, export_workflow
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.broken_store import _body_only
from relavium_reference._host.history_store import StoreError, message_from_row
from relavium_reference._model.messages import (
    AgentSessionRecord,
    ReasoningPart,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from relavium_reference._model.records import is_terminal_row
from relavium_reference._rules.export_mapping import neutralise_interpolation
from relavium_reference._rules.resume import ResumeMessage, SessionResumeState, reconstruct_session_state
from relavium_reference._rules.workflow_yaml import dump_yaml

__all__ = ["PURE_BREAKS_2"]

Document = dict[str, Any]


# --- the store's read side --------------------------------------------------------------------------


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


def _media_names_dropped(row: Mapping[str, Any]) -> SessionMessage:
    """A media part's filename or transcript is dropped before the row is read."""
    try:
        parts = json.loads(row["content_parts"]) if isinstance(row.get("content_parts"), str) else None
    except ValueError:
        parts = None
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "media":
                part.pop("filename", None)
                part.pop("transcript", None)
        row = {**row, "content_parts": json.dumps(parts, separators=(",", ":"))}
    return message_from_row(dict(row))


def _media_refused(row: Mapping[str, Any]) -> SessionMessage:
    if '"type":"media"' in str(row.get("content_parts") or ""):
        raise StoreError("invalid_message")
    return message_from_row(dict(row))


def _one_error_code(row: Mapping[str, Any]) -> SessionMessage:
    try:
        return message_from_row(dict(row))
    except StoreError:
        raise StoreError("invalid_message") from None


def _byte_size_dropped(row: Mapping[str, Any]) -> SessionMessage:
    """A tool result's byte-size fields are read as transient and left out of the message."""
    message = message_from_row(dict(row))
    content = tuple(
        part.model_copy(update={"byte_length": None, "truncated": None})
        if isinstance(part, ToolResultPart)
        else part
        for part in message.content
    )
    return message.model_copy(update={"content": content})


# --- resume's reading of the rows -------------------------------------------------------------------


def _without_empty_terminals(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    kept = [m for m in messages if not (is_terminal_row(m.role, m.content) and not m.text)]
    return reconstruct_session_state(record, kept)


def _folded(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> SessionResumeState:
    """Adjacent messages of one role are folded into one (the spans are left as they were)."""
    state = reconstruct_session_state(record, messages)
    folded: list[ResumeMessage] = []
    for message in state.messages:
        if folded and folded[-1].role == message.role:
            folded[-1] = ResumeMessage(role=message.role, text=folded[-1].text + "\n\n" + message.text)
        else:
            folded.append(message)
    return state.model_copy(update={"messages": tuple(folded)})


def _reasoning_read_as_text(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """A stored reasoning part is read back as text of its reply (so it reaches the next request)."""
    read = [
        m.model_copy(
            update={
                "content": tuple(
                    TextPart(text=part.text) if isinstance(part, ReasoningPart) else part
                    for part in m.content
                )
            }
        )
        for m in messages
    ]
    return reconstruct_session_state(record, read)


def _strip_calls(message: SessionMessage) -> SessionMessage:
    content = tuple(part for part in message.content if not isinstance(part, ToolCallPart))
    return message.model_copy(update={"content": content})


def _preamble_is_terminal(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """An assistant row with text and tool calls is read as the turn's terminal text."""
    read = [
        m if m.role != "assistant" or not m.text or not m.tool_calls else _strip_calls(m) for m in messages
    ]
    return reconstruct_session_state(record, read)


def _rollback_at_write_time(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """A user row followed directly by another user row is dropped, as if it had been rolled back
    when it was written (trailing then) rather than judged at read time."""
    ordered = sorted(messages, key=lambda m: m.sequence_number)
    dropped = {
        a.sequence_number for a, b in itertools.pairwise(ordered) if a.role == "user" and b.role == "user"
    }
    return reconstruct_session_state(record, [m for m in ordered if m.sequence_number not in dropped])


# --- the export's turns -----------------------------------------------------------------------------


def _export_preamble_ends_the_turn(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    read = [
        m if m.role != "assistant" or not m.text or not m.tool_calls else _strip_calls(m) for m in messages
    ]
    turns, _ = export_workflow(record, read)
    workflow = document["workflow"]
    workflow["nodes"], workflow["edges"] = turns["workflow"]["nodes"], turns["workflow"]["edges"]
    return document, dump_yaml(document)


def _export_legacy_text_is_a_node(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    """Bare users after the last terminal (but the final row) each become an agent node."""
    document, _text = export_workflow(record, messages)
    ordered = sorted((m for m in messages if m.role != "system"), key=lambda m: m.sequence_number)
    last_terminal = max((i for i, m in enumerate(ordered) if is_terminal_row(m.role, m.content)), default=-1)
    legacy = [m for m in ordered[last_terminal + 1 : -1] if m.role == "user"]
    if not legacy:
        return document, _text
    workflow = document["workflow"]
    nodes = workflow["nodes"]
    extra = [
        {"type": "agent", "agent_ref": record.agent_slug, "prompt_template": neutralise_interpolation(m.text)}
        for m in legacy
    ]
    agents = [{**node, "id": f"turn-{index}"} for index, node in enumerate([*nodes[1:-1], *extra], 1)]
    chain = [nodes[0], *agents, nodes[-1]]
    workflow["nodes"] = chain
    workflow["edges"] = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(chain)]
    return document, dump_yaml(document)


def _export_text_forgets_markers(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    """The document is right, but its YAML text leaves out the metadata messages' compaction field:
    the metadata does not survive a parse of the text."""
    document, _text = export_workflow(record, messages)
    written = copy.deepcopy(document)
    for message in written["workflow"]["metadata"]["relaviumExport"]["messages"]:
        message.pop("compaction", None)
    return document, dump_yaml(written)


def _pure(**functions: Any) -> PureFunctions:
    return replace(REFERENCE_PURE, **functions)


PURE_BREAKS_2: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "store-names-unchecked",
        "the store reads a row whose name or toolCallId column disagrees with its part",
        ("AS-VAL-008",),
        pure=_pure(read_stored_row=_names_unchecked),
    ),
    BrokenImplementation(
        "store-drops-unknown-fields",
        "the store drops unknown part fields instead of refusing the row",
        ("AS-VAL-010",),
        pure=_pure(read_stored_row=_unknown_fields_dropped),
    ),
    BrokenImplementation(
        "store-drops-media-names",
        "the store drops a media part's filename or transcript instead of refusing the row",
        ("AS-MSG-006",),
        pure=_pure(read_stored_row=_media_names_dropped),
    ),
    BrokenImplementation(
        "store-refuses-media",
        "the store refuses a row with a handle-only media part",
        ("AS-MSG-006",),
        pure=_pure(read_stored_row=_media_refused),
    ),
    BrokenImplementation(
        "store-one-error-code",
        "every refused row is answered invalid_message, whatever its defect",
        ("AS-VAL-011",),
        pure=_pure(read_stored_row=_one_error_code),
    ),
    BrokenImplementation(
        "store-drops-byte-size",
        "the store reads a tool result without its byte-size fields",
        ("AS-MSG-004",),
        pure=_pure(read_stored_row=_byte_size_dropped),
    ),
    BrokenImplementation(
        "reconstruct-folds-same-role",
        "the resume state folds adjacent messages of one role into one",
        ("AS-PROJ-015",),
        pure=_pure(reconstruct_session_state=_folded),
    ),
    BrokenImplementation(
        "reconstruct-empty-terminal-is-absent",
        "an explicit empty terminal is read as no terminal: its user becomes a legacy bare user",
        ("AS-LEG-010",),
        pure=_pure(reconstruct_session_state=_without_empty_terminals),
    ),
    BrokenImplementation(
        "reconstruct-reasoning-as-text",
        "a stored reasoning part is read back as reply text, so a resumed session sends it on",
        ("AS-LIFE-008", "AS-PROJ-015"),
        pure=_pure(reconstruct_session_state=_reasoning_read_as_text),
    ),
    BrokenImplementation(
        "reconstruct-preamble-is-terminal",
        "a tool-call row carrying preamble text is read as the turn's terminal",
        ("AS-MSG-025",),
        pure=_pure(reconstruct_session_state=_preamble_is_terminal),
    ),
    BrokenImplementation(
        "reconstruct-rollback-at-write-time",
        "a bare user followed by another user row is dropped, as if rolled back when written",
        ("AS-LEG-012",),
        pure=_pure(reconstruct_session_state=_rollback_at_write_time),
    ),
    BrokenImplementation(
        "export-preamble-ends-the-turn",
        "the export ends a turn at the first assistant text, a tool-call row's preamble included",
        ("AS-EXP-021",),
        pure=_pure(export_workflow=_export_preamble_ends_the_turn),
    ),
    BrokenImplementation(
        "export-text-forgets-markers",
        "the export's YAML text loses the boundary markers' compaction field from the metadata",
        ("AS-EXP-005",),
        pure=_pure(export_workflow=_export_text_forgets_markers),
    ),
    BrokenImplementation(
        "export-legacy-text-is-a-node",
        "legacy bare-user text with no later terminal becomes an agent node",
        ("AS-LEG-009",),
        pure=_pure(export_workflow=_export_legacy_text_is_a_node),
    ),
)
