"""The export path as it stood before its fast path (main at d73df1b), kept as the tests' oracle.

``old_export`` is ``dump_yaml(document_to_data(session_to_workflow(record, messages)))`` as those three
functions were written then: one model per node and edge, each node and edge dumped on its own, and the
first direct emitter (``old_fast_dump``, itself checked against ruamel.yaml by test_workflow_yaml.py).
The fast path must give the same document, the same data and the same bytes for every input
(tests/reference/rules/test_export_fast.py).  Nothing here is used by the engine.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.resolver import VersionedResolver

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.messages import UNKNOWN_TOOL, AgentSessionRecord, SessionMessage
from relavium_reference._model.workflow import (
    EXPORT_METADATA_KEY,
    SCHEMA_VERSION,
    AgentNode,
    Edge,
    InputNode,
    OutputNode,
    RelaviumExport,
    WorkflowDocument,
    WorkflowMetadata,
    WorkflowNode,
    WorkflowSpec,
)
from relavium_reference._rules.resume import _slots
from relavium_reference._rules.workflow_id import workflow_id
from relavium_reference._rules.workflow_yaml import ensure_json_data, ruamel_dump

# --- the emitter (reference/_rules/yaml_fast.py) ---------------------------------------------------

# One line of characters the emitter prints as they are (allow_unicode), with no line break, no tab and
# no byte-order mark: the set where no scalar needs escapes beyond ``"`` and ``\\``.
_PRINTABLE_LINE = re.compile(
    "[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*"
)
# What rules a plain scalar out in block context, before the resolver is asked: at the start, a space,
# an indicator, ``? `` / ``: `` / ``- `` (or the lone character) or a document marker; anywhere,
# ``": "`` or ``" #"``; at the end, a space or ``:`` (checked with string methods, faster than a scan).
_NOT_PLAIN_START = re.compile(r"""[ #,\[\]{}&*!|>'"%@`]|[?:-](?: |$)|---|\.\.\.""")
MAX_DEPTH = 64  # the deepest nesting of JSON-shaped data (workflow_yaml re-exports this one)
_MAX_KEY = 100  # well below the emitter's simple-key limit (128)


class _Fallback(Exception):
    """The data holds something this emitter does not write; the caller uses ruamel.yaml."""


def _implicit_table() -> dict[str, tuple[tuple[bool, Callable[[str], object]], ...]]:
    """The resolver's own table: per first character, (is the tag ``str``, the bound ``match``)."""
    resolver = VersionedResolver()
    table: dict[Any, Any] = resolver.versioned_resolver
    if None in table:
        raise RuntimeError("unexpected catch-all implicit resolver")  # the fast path would be wrong
    return {
        key: tuple((str(tag) == "tag:yaml.org,2002:str", pattern.match) for tag, pattern in value)
        for key, value in table.items()
    }


_IMPLICIT = _implicit_table()
# Plain scalars a YAML 1.1 resolver reads as a boolean, null, number or timestamp: always quoted.
YAML11_LOOKALIKE = re.compile(
    r"""^(?:
        y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
      | ~|null|Null|NULL
      | [-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+
      | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
      | [-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)? | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?
    )$""",
    re.X,
)


# First characters after which none of the start checks below can match: no indicator, no document
# marker, no implicit resolver of the table (keyed by first character) and no YAML 1.1 lookalike.
_CHECKED_FIRST = frozenset(_IMPLICIT) | frozenset("yYnNoO~") | frozenset(" #,[]{}&*!|>'\"%@`?:-.")


# Two shapes every transcript row carries, decided without the checks below: a store timestamp is a
# YAML 1.1 lookalike (quoted, and it holds no apostrophe), a lowercase UUID is plain (it starts no
# indicator, holds no ": " or " #", and no resolver pattern of either YAML version matches all of it;
# tests/reference/rules/test_workflow_yaml.py compares both with the ruamel.yaml emitter).
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@functools.lru_cache(maxsize=8192)  # an export repeats roles, part types, ids of its session and model
def _string(text: str) -> str:
    if not text:
        return "''"
    if len(text) in (24, 36):
        if _STAMP.fullmatch(text):
            return "'" + text + "'"
        if _UUID.fullmatch(text):
            return text
    if not _PRINTABLE_LINE.fullmatch(text):
        raise _Fallback
    plain = not (text[-1] in " :" or ": " in text or " #" in text)
    if plain and text[0] in _CHECKED_FIRST:
        plain = _NOT_PLAIN_START.match(text) is None
        plain = plain and not YAML11_LOOKALIKE.match(text)  # a YAML 1.1 reader would misread it (KD-EXP-6)
        for is_str, match in _IMPLICIT.get(text[0], ()) if plain else ():
            if match(text):
                plain = is_str
                break
    return text if plain else _quoted(text)


def _quoted(text: str) -> str:
    if "'" in text:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "'" + text + "'"


def _scalar(value: Any) -> str:
    kind = type(value)  # exact types only: a subclass (or a float, or anything else) falls back
    if kind is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return str(value)
    if kind is dict:
        return "{}"  # only ever called for empty collections
    if kind is list:
        return "[]"
    raise _Fallback  # floats and anything else: the ruamel.yaml emitter decides


@functools.lru_cache(maxsize=4096)
def _key(key: str) -> str:
    if not key or len(key) > _MAX_KEY:
        raise _Fallback
    return _string(key)


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


@functools.lru_cache(maxsize=1024)
def _order(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Sorted keys with their rendered form; an export repeats a few key sets many times."""
    if any(type(key) is not str for key in keys):
        raise _Fallback
    return tuple((key, _key(key)) for key in sorted(keys, key=_utf16))


def _mapping(data: dict[str, Any], indent: int, first: str, out: list[str], depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Fallback  # its values would sit deeper than JSON-shaped data may
    prefix = first
    pad = " " * indent
    for key, shown in _order(tuple(data)):
        value = data[key]
        if type(value) is str:
            out.append(f"{prefix}{shown}: {_string(value)}\n")
        elif type(value) is dict and value:
            out.append(f"{prefix}{shown}:\n")
            _mapping(value, indent + 2, " " * (indent + 2), out, depth + 1)
        elif type(value) is list and value:
            out.append(f"{prefix}{shown}:\n")
            _sequence(value, indent + 2, " " * (indent + 2), out, depth + 1)
        else:
            out.append(f"{prefix}{shown}: {_scalar(value)}\n")
        prefix = pad


def _sequence(items: list[Any], dash: int, first: str, out: list[str], depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Fallback
    prefix = first
    pad = " " * dash
    for item in items:
        if type(item) is dict and item:
            _mapping(item, dash + 2, prefix + "- ", out, depth + 1)
        elif type(item) is list and item:
            _sequence(item, dash + 4, prefix + "-   ", out, depth + 1)
        else:
            out.append(f"{prefix}- {_scalar(item)}\n")
        prefix = pad


def old_fast_dump(data: Any) -> str | None:
    """The canonical YAML text of JSON-shaped ``data``, or ``None`` when ruamel.yaml must write it.

    It answers only for exact dicts (string keys), lists, strings, ints, bools and nulls nested at most
    ``MAX_DEPTH`` deep: an answer also proves the data is JSON-shaped, so the caller need not walk it
    again (``ensure_json_data`` runs only on the fallback path)."""
    if type(data) is not dict or not data:
        return None
    out: list[str] = []
    try:
        _mapping(data, 0, "", out, 0)
    except _Fallback:
        return None
    return "".join(out)


# --- the mapping (reference/_rules/export_mapping.py) ---------------------------------------------

INPUT_NODE_ID = "input"
OUTPUT_NODE_ID = "output"
_OPENER = re.compile(r"\{(?=\{)")
_PROMPT_JOIN = "\n\n"


@dataclass(frozen=True)
class ExportedTurn:
    """One completed logical turn as the export sees it."""

    prompt: str  # raw (not yet neutralised)
    tools: tuple[str, ...]
    user_sequence: int
    terminal_sequence: int


def neutralise_interpolation(text: str) -> str:
    """Insert one space after each ``{`` immediately followed by ``{`` (``{{`` -> ``{ {``) (KD-EXP-4)."""
    return _OPENER.sub("{ ", text)


def _join(texts: Iterable[str]) -> str:
    return _PROMPT_JOIN.join(text for text in texts if text)


def _dedupe_grants(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name in names if name != UNKNOWN_TOOL))


def _ordered(session_id: str, messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    ordered = sorted(messages, key=lambda message: message.sequence_number)
    for index, message in enumerate(ordered):
        if message.session_id != session_id:
            raise InvalidInputError("message belongs to another session", location=f"messages.{index}")
        if index and ordered[index - 1].sequence_number == message.sequence_number:
            raise InvalidInputError("duplicate sequenceNumber", location=f"messages.{index}")
    return ordered


def old_completed_export_turns(messages: Sequence[SessionMessage]) -> list[ExportedTurn]:
    """The completed logical turns of a transcript sorted by sequence number (see the module docstring).

    The grouping into slots is the resume projection's (:mod:`._resume`), applied to every row
    whatever the boundaries: a completed slot is a turn, a retained legacy slot is prompt prefix.
    """
    transcript = [message for message in messages if message.role != "system"]
    position = {message.sequence_number: index for index, message in enumerate(transcript)}
    turns: list[ExportedTurn] = []
    pending_prefix: list[str] = []
    for slot in _slots(transcript):
        if slot.terminal is None:
            pending_prefix.append(slot.user.text)
            continue
        inside = transcript[position[slot.user.sequence_number] + 1 : position[slot.terminal.sequence_number]]
        turns.append(
            ExportedTurn(
                prompt=_join([*pending_prefix, slot.user.text]),
                tools=_dedupe_grants(part.name for row in inside for part in row.tool_calls),
                user_sequence=slot.user.sequence_number,
                terminal_sequence=slot.terminal.sequence_number,
            )
        )
        pending_prefix = []
    return turns


def _agent_node(index: int, agent_ref: str, turn: ExportedTurn) -> AgentNode:
    prompt = neutralise_interpolation(turn.prompt)
    return AgentNode(
        id=f"turn-{index}",
        type="agent",
        agent_ref=agent_ref,
        prompt_template=prompt or None,
        tools=turn.tools or None,
    )


def old_session_to_workflow(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> WorkflowDocument:
    """Build the workflow scaffold of a persisted session, deterministically (no clock, no randomness).

    Raises :class:`InvalidInputError` when a message belongs to another session or two messages share a
    sequence number.  The agent snapshot is copied as captured; no authoring rule is applied to it.
    """
    ordered = _ordered(record.id, messages)
    turns = old_completed_export_turns(ordered)
    agent_nodes = [_agent_node(index, record.agent_slug, turn) for index, turn in enumerate(turns, 1)]
    nodes: list[WorkflowNode] = [
        InputNode(id=INPUT_NODE_ID, type="input"),
        *agent_nodes,
        OutputNode(id=OUTPUT_NODE_ID, type="output"),
    ]
    chain = [node.id for node in nodes]
    edges = tuple(Edge.model_validate({"from": a, "to": b}) for a, b in itertools.pairwise(chain))
    export = RelaviumExport(
        source="session",
        session_id=record.id,
        agent_slug=record.agent_slug,
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        messages=tuple(ordered),
    )
    spec = WorkflowSpec(
        id=workflow_id(record.title, record.id),
        name=record.title,
        metadata=WorkflowMetadata.model_validate({EXPORT_METADATA_KEY: export}),
        agents=(record.agent_snapshot,) if record.agent_snapshot is not None else None,
        nodes=tuple(nodes),
        edges=edges,
    )
    return WorkflowDocument(schema_version=SCHEMA_VERSION, workflow=spec)


# --- the data (reference/_model/workflow.py document_to_data) -----------------------------------


def old_document_to_data(document: WorkflowDocument) -> dict[str, Any]:
    spec = document.workflow
    workflow: dict[str, Any] = {"id": spec.id}
    if spec.name is not None:
        workflow["name"] = spec.name
    if spec.metadata is not None:
        workflow["metadata"] = spec.metadata.to_data()
    if spec.agents is not None:
        workflow["agents"] = [agent.to_wire() for agent in spec.agents]
    workflow["nodes"] = [node.model_dump(mode="json", exclude_none=True) for node in spec.nodes]
    workflow["edges"] = [edge.model_dump(mode="json", by_alias=True) for edge in spec.edges]
    return {"schema_version": document.schema_version, "workflow": workflow}


def old_dump_yaml(data: Any) -> str:
    fast = old_fast_dump(data)
    if fast is not None:
        return fast
    ensure_json_data(data)
    return ruamel_dump(data)


def old_export(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> str:
    return old_dump_yaml(old_document_to_data(old_session_to_workflow(record, messages)))
