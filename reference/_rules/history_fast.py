"""The fast read of a ``session_messages`` row in the store's own canonical form.

A full load of a long session read every row through
:func:`~relavium_reference._rules.history_rows.message_from_row`: strict JSON (parse, then re-dump to
prove the text canonical), a dict in wire form, pydantic validation of the message and of each part,
then the denormalised columns derived again and compared.  About 25 µs a row, against about 3 µs to
select and ``json.loads`` it.

:func:`fast_message` decides the rows the store writes itself, and only those, in one pass:

* the body (``content_parts``) must be exactly the text the store would write for the parts it
  holds (compact, fields in declaration order, no null optionals), so it can hide no duplicate key,
  no ``NaN`` and no unknown field (a body of one text part may spell its string with any JSON escape:
  one string literal hides none of these), and it holds only text, reasoning, tool-call and
  tool-result parts (media and result attachments are left to the full path);
* every field passes the model's own rule, checked directly (types, non-empty ids, the id and name
  patterns, parts allowed for the role, one result on a tool row, a compaction only on a system row);
* the denormalised columns are what :func:`~relavium_reference._rules.history_rows.derive_columns`
  gives for the body (with the tool-calls column in its canonical text).

It then builds the models with :func:`~relavium_reference._model.prebuilt.prebuilt`: the same values
validation builds.  For any other row it returns ``None`` and the caller reads the row through the
full path, which names the defect exactly as before; so a fast read accepts a subset of what the full
path accepts, with the same values (``tests/reference/rules/test_history_fast.py`` compares the two).
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable
from json.decoder import scanstring as _c_scanstring  # type: ignore[attr-defined]  # not in the stubs
from json.encoder import encode_basestring
from typing import Any, cast

from relavium_reference._model.messages import (
    TOOL_CALL_ID_PATTERN,
    TOOL_NAME_PATTERN,
    Compaction,
    ReasoningPart,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from relavium_reference._model.prebuilt import prebuilt, prebuilt_parts
from relavium_reference._model.vocabulary import TERMINAL_FINISH_REASONS
from relavium_reference._rules.history_rows import MAX_EPOCH_MS, MIN_EPOCH_MS, _second_text

__all__ = ["FAST_ROW_COLUMNS", "MESSAGE_COLUMNS", "fast_message"]

#: The columns of a ``session_messages`` row (the keys of a ``message_row``), in the store's order.
MESSAGE_COLUMNS: tuple[str, ...] = (
    "id",
    "session_id",
    "sequence_number",
    "role",
    "content",
    "content_parts",
    "tool_calls",
    "tool_call_id",
    "name",
    "finish_reason",
    "model_id",
    "compaction_dropped_through_sequence",
    "created_at",
)

#: The columns of a tuple row handed to :func:`fast_message`, in order: the message columns, then the
#: ``rowid`` (not read here; it names the row when the full path refuses it).
FAST_ROW_COLUMNS: tuple[str, ...] = (*MESSAGE_COLUMNS, "rowid")

# The patterns of the models, anchored by fullmatch: the same language as the models' ``^...$``.
_CALL_ID = re.compile(TOOL_CALL_ID_PATTERN.removeprefix("^").removesuffix("$"))
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN.removeprefix("^").removesuffix("$"))

_TEXT_HEAD = '[{"type":"text","text":'
_TEXT_TAIL = "}]"
_LITERAL_START = len(_TEXT_HEAD)
#: The string scanner ``json.loads`` itself uses (strict: raw control characters refused).
scanstring: Callable[[str, int], tuple[str, int]] = _c_scanstring
#: The value scanner of ``json.loads`` (the same decoder settings), without its two Python frames:
#: ``(value, end)``; ``StopIteration`` when no value starts at the index.
_Scanner = Callable[[str, int], tuple[Any, int]]
_scan_json = cast(_Scanner, json.scanner.make_scanner(cast(Any, json.JSONDecoder())))
_MILLIS = tuple(f"{millis:03d}Z" for millis in range(1000))
_new, _set_dict, _set_fields_set, _set_extra, _set_private = prebuilt_parts()  # inlined below: hot loop
_ONLY_TEXT: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "user": frozenset({"text"}),
    "assistant": frozenset({"text"}),
}
# The part types each role may hold (the model's table, less media: media rows take the full path).
_ALLOWED: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "user": frozenset({"text"}),
    "assistant": frozenset({"text", "tool_call", "reasoning"}),
    "tool": frozenset({"tool_result"}),
}
# The fields set of each built model, by which optional fields the row gave (shared: see prebuilt).
_TEXT_GIVEN = {"type", "text"}
_CALL_GIVEN = {"type", "id", "name"}
_REASONING_GIVEN = {False: {"type", "text"}, True: {"type", "text", "redacted"}}
_RESULT_GIVEN = {
    (size, truncated): {"type", "tool_call_id", "name", "is_error"}
    | ({"byte_length"} if size else set())
    | ({"truncated"} if truncated else set())
    for size in (False, True)
    for truncated in (False, True)
}
_COMPACTION_GIVEN = {"dropped_through_sequence"}
_MESSAGE_GIVEN = {
    (model, compaction): {"id", "session_id", "sequence_number", "role", "content", "timestamp"}
    | ({"model_id"} if model else set())
    | ({"compaction"} if compaction else set())
    for model in (False, True)
    for compaction in (False, True)
}
_RESULT_KEYS = frozenset({"type", "toolCallId", "name", "isError", "byteLength", "truncated"})
_REASONING_KEYS = frozenset({"type", "text", "redacted"})


def _part(data: dict[str, Any]) -> tuple[Any, str] | None:
    """One stored part (a dict with a known ``type``) as ``(model, canonical text)``, or ``None``."""
    kind = data["type"]
    if kind == "text":
        text = data.get("text")
        if len(data) != 2 or type(text) is not str:
            return None
        return (
            prebuilt(TextPart, {"type": "text", "text": text}, _TEXT_GIVEN),
            '{"type":"text","text":' + encode_basestring(text) + "}",
        )
    if kind == "tool_call":
        call_id, name = data.get("id"), data.get("name")
        if (
            len(data) != 3
            or type(call_id) is not str
            or type(name) is not str
            or _CALL_ID.fullmatch(call_id) is None
            or _TOOL_NAME.fullmatch(name) is None
        ):
            return None
        return (
            prebuilt(ToolCallPart, {"type": "tool_call", "id": call_id, "name": name}, _CALL_GIVEN),
            f'{{"type":"tool_call","id":"{call_id}","name":"{name}"}}',  # the patterns need no escapes
        )
    if kind == "tool_result":
        return _result_part(data)
    if kind == "reasoning":
        text, redacted = data.get("text"), data.get("redacted")
        if not data.keys() <= _REASONING_KEYS or type(text) is not str:
            return None
        if "redacted" in data and type(redacted) is not bool:
            return None
        given = _REASONING_GIVEN["redacted" in data]
        tail = "" if redacted is None else (',"redacted":true' if redacted else ',"redacted":false')
        return (
            prebuilt(ReasoningPart, {"type": "reasoning", "text": text, "redacted": redacted}, given),
            '{"type":"reasoning","text":' + encode_basestring(text) + tail + "}",
        )
    return None


def _result_part(data: dict[str, Any]) -> tuple[Any, str] | None:
    call_id, name, is_error = data.get("toolCallId"), data.get("name"), data.get("isError")
    size, truncated = data.get("byteLength"), data.get("truncated")
    if (
        not data.keys() <= _RESULT_KEYS
        or type(call_id) is not str
        or type(name) is not str
        or type(is_error) is not bool
        or _CALL_ID.fullmatch(call_id) is None
        or _TOOL_NAME.fullmatch(name) is None
    ):
        return None
    text = f'{{"type":"tool_result","toolCallId":"{call_id}","name":"{name}","isError":{_bool(is_error)}'
    if "byteLength" in data:
        if type(size) is not int or size < 0:
            return None
        text += f',"byteLength":{size}'
    if "truncated" in data:
        if type(truncated) is not bool:
            return None
        text += f',"truncated":{_bool(truncated)}'
    values = {
        "type": "tool_result",
        "tool_call_id": call_id,
        "name": name,
        "is_error": is_error,
        "byte_length": size,
        "truncated": truncated,
        "attachments": None,
    }
    given = _RESULT_GIVEN["byteLength" in data, "truncated" in data]
    return prebuilt(ToolResultPart, values, given), text + "}"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _parts(raw: str, role: str) -> tuple[tuple[Any, ...], list[str], list[str]] | None:
    """The parts of a canonical body: ``(parts, texts of its text parts, canonical call texts)``."""
    try:
        data, end = _scan_json(raw, 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if type(data) is not list or end != len(raw):
        return None
    allowed = _ALLOWED[role]
    parts: list[Any] = []
    pieces: list[str] = []
    texts: list[str] = []
    calls: list[str] = []
    for item in data:
        if type(item) is not dict:
            return None
        kind = item.get("type")
        if type(kind) is not str or kind not in allowed:
            return None
        built = _part(item)
        if built is None:
            return None
        part, piece = built
        parts.append(part)
        pieces.append(piece)
        if part.type == "text":
            texts.append(part.text)
        elif part.type == "tool_call":
            calls.append(piece)
    if "[" + ",".join(pieces) + "]" != raw:  # not the store's own text: the full path decides
        return None
    return tuple(parts), texts, calls


def _one_text(raw: str) -> str | None:
    """The text of a body that is exactly one text part (its literal may use any JSON escape), else ``None``.

    One JSON string literal can hide no duplicate key and no ``NaN``, so the full path's strict parse
    reads the same single part from it.
    """
    if raw.startswith(_TEXT_HEAD) and raw.endswith(_TEXT_TAIL) and raw[_LITERAL_START] == '"':
        try:
            text, end = scanstring(raw, _LITERAL_START + 1)
        except ValueError:
            return None
        if end == len(raw) - len(_TEXT_TAIL):
            return text
    return None


def fast_message(row: tuple[Any, ...]) -> SessionMessage | None:
    """The message of a stored row in canonical form (columns :data:`FAST_ROW_COLUMNS`), else ``None``.

    ``None`` means only "not decided here": the row may be sound or not, and the full path says which.
    """
    (mid, session_id, seq, role, content, raw, tool_calls, call_id, name, reason, model, dropped, ms, _) = row
    if (
        type(mid) is not str
        or not mid
        or type(session_id) is not str
        or not session_id
        or type(seq) is not int
        or seq < 0
        or type(raw) is not str
        or type(ms) is not int
        or not MIN_EPOCH_MS <= ms <= MAX_EPOCH_MS
        or (model is not None and (type(model) is not str or not model))
    ):
        return None
    text = _one_text(raw) if role in _ONLY_TEXT else None
    if text is not None:  # the common row: one text part, so no call, no result
        if (
            content != text
            or tool_calls is not None
            or call_id is not None
            or name is not None
            or (reason not in TERMINAL_FINISH_REASONS if role == "assistant" else reason is not None)
        ):
            return None
        part = _new(TextPart)
        _set_dict(part, "__dict__", {"type": "text", "text": text})
        _set_fields_set(part, _TEXT_GIVEN)
        _set_extra(part, None)
        _set_private(part, None)
        parts: tuple[Any, ...] = (part,)
    else:
        decoded = _parts(raw, role) if role in _ALLOWED else None
        if decoded is None or not _columns_match(role, decoded, row):
            return None
        parts = decoded[0]
    compaction = None
    if dropped is not None:
        if role != "system" or type(dropped) is not int or dropped < 0:
            return None
        compaction = prebuilt(Compaction, {"dropped_through_sequence": dropped}, _COMPACTION_GIVEN)
    seconds, millis = divmod(ms, 1000)
    message: SessionMessage = _new(SessionMessage)
    _set_dict(
        message,
        "__dict__",
        {
            "id": mid,
            "session_id": session_id,
            "sequence_number": seq,
            "role": role,
            "content": parts,
            "model_id": model,
            "compaction": compaction,
            "timestamp": _second_text(seconds) + _MILLIS[millis],
        },
    )
    _set_fields_set(message, _MESSAGE_GIVEN[model is not None, compaction is not None])
    _set_extra(message, None)
    _set_private(message, None)
    return message


def _columns_match(
    role: str, decoded: tuple[tuple[Any, ...], list[str], list[str]], row: tuple[Any, ...]
) -> bool:
    """Whether the row's denormalised columns are derive_columns' for its body (and the role rules hold)."""
    parts, texts, calls = decoded
    content, tool_calls, call_id, name, reason = row[4], row[6], row[7], row[8], row[9]
    if role == "tool" and len(parts) != 1:
        return False
    if role == "assistant":
        if (reason != "tool_use") if calls else (reason not in TERMINAL_FINISH_REASONS):
            return False
    elif reason is not None:
        return False
    if content != ("\n\n".join(texts) if texts else None):
        return False
    if calls:
        if tool_calls != "[" + ",".join(calls) + "]":
            return False
    elif tool_calls is not None:
        return False
    if role == "tool":
        return bool(call_id == parts[0].tool_call_id and name == parts[0].name)
    return call_id is None and name is None
