"""The kit's own checks of what the host is asked to store: a committed turn and a boundary marker.

The host's commit receives one completed turn (``host.commitTurn``).  The kit, playing the host, accepts it
only when it has the ``completed-turn`` shape and is one whole exchange: a user row with a text part
first, then structural rows (assistant tool calls, tool results) whose every call is answered once by a
later result, then a terminal assistant row with a text part and no call (KD-RES-1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from relavium_conformance._judge.matching import jsonable
from relavium_conformance._report.results import Difference
from relavium_conformance._wire.model import shape_problem, shape_validator

__all__ = ["marker_problem", "refused_turn", "turn_problem", "turn_rows"]


def _types(row: dict[str, Any]) -> list[str]:
    return [str(part.get("type")) for part in row.get("content", ()) if isinstance(part, dict)]


def _is_structural(row: dict[str, Any]) -> bool:
    return row.get("role") == "tool" or (row.get("role") == "assistant" and "tool_call" in _types(row))


def _is_terminal(row: dict[str, Any]) -> bool:
    types = _types(row)
    return row.get("role") == "assistant" and "text" in types and "tool_call" not in types


def _calls_answered(rows: Iterable[dict[str, Any]]) -> str | None:
    pending: set[str] = set()  # calls not answered yet; an id may be reused once answered
    for row in rows:
        for part in row.get("content", ()):
            if part.get("type") == "tool_call":
                if part.get("id") in pending:
                    return "a tool call id is already waiting for its result"
                pending.add(part.get("id"))
            elif part.get("type") == "tool_result":
                if part.get("toolCallId") not in pending:
                    return "a tool result must answer an earlier call of the same turn"
                pending.remove(part.get("toolCallId"))
    return "every tool call of a completed turn needs exactly one result" if pending else None


def turn_problem(turn: Any) -> str | None:
    """Why ``turn`` is not one whole committed exchange, or ``None`` when it is."""
    problem = shape_problem("completed-turn", turn)
    if problem is not None:
        return problem
    user, terminal = turn["user"], turn["terminal"]
    structural = turn.get("structural", [])
    if user.get("role") != "user" or "text" not in _types(user):
        return "the first row of a turn must be a user message with a text part"
    if not all(_is_structural(row) for row in structural):
        return "a structural row must be an assistant tool call or a tool result"
    if not _is_terminal(terminal):
        return "the terminal row must be an assistant message with a text part and no tool call"
    return _calls_answered(structural)


def turn_rows(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a sound turn in commit order: user, structural rows, terminal."""
    return [turn["user"], *turn.get("structural", []), turn["terminal"]]


_FIELD_WORDS = {"additionalProperties": "unknown field", "required": "required field missing"}


def _dotted(parts: Iterable[Any]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def _turn_fields(turn: Any, limit: int = 5) -> list[tuple[str, str]]:
    """Each field of ``turn`` the ``completed-turn`` schema refuses, as (path, words); unknown ones first."""
    from jsonschema.exceptions import best_match  # (with the validator: only a refused turn gets here)

    found: list[tuple[bool, str, str]] = []
    for error in shape_validator("completed-turn").iter_errors(turn):
        deepest = best_match([error]) or error
        where = list(deepest.absolute_path)
        instance, words = deepest.instance, _FIELD_WORDS.get(str(deepest.validator))
        if deepest.validator == "additionalProperties" and isinstance(instance, dict):
            known = set(deepest.schema.get("properties", {}))
            found += [
                (False, _dotted([*where, key]), "unknown field") for key in instance if key not in known
            ]
        elif deepest.validator == "required" and isinstance(instance, dict):
            found += [
                (True, _dotted([*where, key]), "required field missing")
                for key in deepest.validator_value
                if key not in instance
            ]
        else:
            found.append((True, _dotted(where), words or f"breaks the schema ({deepest.validator})"))
    return [(path, words) for _rank, path, words in sorted(found)[:limit]]


def refused_turn(index: int, turn: Any, problem: str) -> Difference:
    """The kit refused the turn of a ``host.commitTurn``: name the offending fields, first of all."""
    fields = _turn_fields(turn)
    where = f"commits[{index}]"
    if fields:
        details = "; ".join(f"{words}: {path.removeprefix('.')}" for path, words in fields)
        where += fields[0][0]
    else:
        details = problem  # a whole-exchange rule, not a field: the rule's own words
    return Difference(
        path=where,
        message=f"host.commitTurn refused ({details}); nothing of the turn was stored",
        actual=jsonable(turn),
    )


def marker_problem(marker: dict[str, Any], row_count: int) -> str | None:
    """Why ``marker`` is not one durable boundary marker after ``row_count`` rows (``None``: it is).

    A marker is a ``system`` row with a list of text parts (none, for a trim) and
    ``compaction.droppedThroughSequence``: an integer naming an existing earlier row.
    """
    if marker.get("role") != "system":
        return "its role is not system"
    content = marker.get("content")
    if not isinstance(content, list) or any(
        not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str)
        for p in content
    ):
        return "its content is not a list of text parts"
    compaction = marker.get("compaction")
    through = compaction.get("droppedThroughSequence") if isinstance(compaction, dict) else None
    if isinstance(through, bool) or not isinstance(through, int):
        return "it has no compaction.droppedThroughSequence"
    if not 0 <= through < row_count:
        return "compaction.droppedThroughSequence names no earlier row"
    return None
