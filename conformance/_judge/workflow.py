"""The kit's own strict reading of an exported workflow (KD-EXP-6, KD-EXP-7): no engine code involved.

An exported text is read the way any strict reader of the workflow format would read it, in four steps,
the first refusal answering:

1. the kit's YAML reader (:func:`read_yaml_text`, ruamel's pure-Python safe loader): one well-formed
   document, no alias (an export never needs one), no duplicate key, no tag beyond the JSON types;
2. JSON-shaped data: mappings with string keys, lists, strings, integers, finite numbers, booleans and
   null, nested at most :data:`MAX_DEPTH` deep;
3. the shipped ``schemas/workflow.schema.json`` (draft 2020-12): every field known, every required one
   present, every value of its type and pattern;
4. the rules a schema cannot state: node ids and agent ids are unique; an agent's plan (its own
   provider and model, then each fallback entry) names no provider/model pair twice (KD-EXP-7); the
   transcript in ``metadata.relaviumExport`` is in strictly increasing ``sequenceNumber`` order and every
   message belongs to its session; each message holds only the parts its role may hold (a tool row
   exactly one result), only a ``system`` row carries ``compaction``, and only a timed medium (audio,
   video) has a duration.

A refusal is a fixed reason and, where it has one, the location of the offending field; never the value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from relavium_conformance._judge.export_text import has_aliases, read_yaml_text
from relavium_conformance._wire.model import shape_validator

__all__ = ["MAX_DEPTH", "workflow_refusal"]

#: The deepest nesting of mappings and lists an exported document may have (KD-EXP-6).
MAX_DEPTH = 64
_REMEMBERED = 256

_PARTS_OF_ROLE: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "user": frozenset({"text", "media"}),
    "assistant": frozenset({"text", "tool_call", "reasoning", "media"}),
    "tool": frozenset({"tool_result"}),
}
_TIMED_MEDIA = ("audio/", "video/")


@lru_cache(maxsize=_REMEMBERED)
def workflow_refusal(text: str) -> str | None:
    """Why a strict reader refuses ``text`` as an exported workflow (``None``: it is one), remembered."""
    if has_aliases(text):
        return "YAML aliases are not accepted in a workflow"
    try:
        data = read_yaml_text(text)
    except Exception:  # the reader raises many unrelated types for bad input
        return "workflow YAML is not well-formed"
    return _json_problem(data, "", 0) or _schema_problem(data) or _rule_problem(data)


def _at(reason: str, location: str) -> str:
    return f"{reason} (at {location})" if location else reason


def _json_problem(value: Any, location: str, depth: int) -> str | None:
    """Why ``value`` is not JSON-shaped data nested at most :data:`MAX_DEPTH` deep (``None``: it is)."""
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else _at("non-finite number refused", location)
    if isinstance(value, list | dict) and depth >= MAX_DEPTH:
        return _at("workflow YAML is nested too deeply", location)
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _json_problem(item, f"{location}.{index}" if location else str(index), depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return _at("mapping key is not a string", location)
            found = _json_problem(item, f"{location}.{key}" if location else key, depth + 1)
            if found:
                return found
        return None
    return _at("value is not JSON data", location)


def _schema_problem(data: Any) -> str | None:
    error = next(iter(shape_validator("workflow").iter_errors(data)), None)
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path)
    return _at(f"breaks the workflow schema ({error.validator})", where)


def _rule_problem(document: dict[str, Any]) -> str | None:
    """The first rule of the module's step 4 that ``document`` (schema-valid) breaks."""
    workflow = document["workflow"]
    return next(_broken_rules(workflow), None)


def _broken_rules(workflow: dict[str, Any]) -> Iterator[str]:
    node_ids = [node["id"] for node in workflow["nodes"]]
    if len(node_ids) != len(set(node_ids)):
        yield _at("duplicate node id", "workflow.nodes")
    agents = workflow.get("agents") or ()
    agent_ids = [agent["id"] for agent in agents]
    if len(agent_ids) != len(set(agent_ids)):
        yield _at("duplicate agent id", "workflow.agents")
    for index, agent in enumerate(agents):
        seen = {(agent["provider"], agent["model"])}
        for position, entry in enumerate(agent.get("fallback_chain") or ()):
            pair = (entry["provider"], entry["model"])
            if pair in seen:
                where = f"workflow.agents.{index}.fallback_chain.{position}"
                yield _at("agent fallback plan repeats a provider/model pair", where)
            seen.add(pair)
    export = (workflow.get("metadata") or {}).get("relaviumExport")
    if export is not None:
        yield from _transcript_problems(export, "workflow.metadata.relaviumExport")


def _transcript_problems(export: dict[str, Any], where: str) -> Iterator[str]:
    messages = export["messages"]
    sequence = [message["sequenceNumber"] for message in messages]
    if any(later <= earlier for earlier, later in itertools.pairwise(sequence)):
        yield _at("transcript messages must be in strictly increasing sequenceNumber order", where)
    if any(message["sessionId"] != export["sessionId"] for message in messages):
        yield _at("a transcript message belongs to another session", where)
    for index, message in enumerate(messages):
        problem = _message_problem(message)
        if problem is not None:
            yield _at(problem, f"{where}.messages.{index}")


def _message_problem(message: dict[str, Any]) -> str | None:
    """Why a schema-valid message breaks a rule of its role (``None``: it keeps them)."""
    role, content = message["role"], message["content"]
    if any(part["type"] not in _PARTS_OF_ROLE[role] for part in content):
        return "a part is not allowed for the message's role"
    if role == "tool" and len(content) != 1:
        return "a tool row holds exactly one tool result"
    if message.get("compaction") is not None and role != "system":
        return "only a system row carries compaction"
    for part in content:
        timed = str(part.get("mimeType", "")).startswith(_TIMED_MEDIA)
        if part["type"] == "media" and part.get("durationMs") is not None and not timed:
            return "only a timed medium has a duration"
    return None
