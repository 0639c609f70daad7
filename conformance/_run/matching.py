"""Matching observations against expectations, and normalising volatile data.

Matching rules (expected on the left, what the implementation did on the right):

* a mapping matches when every expected key matches the actual value under that key (extra actual
  keys are allowed: normative assertions name only what the clauses require);
* a list matches a list of the same length, item by item;
* a scalar matches an equal scalar;
* operators, as one-key mappings: ``{$absent: true}`` (the key must not be there),
  ``{$any: true}`` (present, any value), ``{$contains: "s"}`` (a string containing ``s``, or a list
  containing a matching item), ``{$not_contains: "s"}`` (``s`` appears nowhere in the value's JSON),
  ``{$len: n}``, ``{$gte: n}``, ``{$one_of: [...]}``, ``{$matches: "regex"}`` (a string matching it
  whole), ``{$if_present: x}`` (an optional field: absent is fine, present must match ``x``).

Normalising replaces ids and timestamps by placeholders so that snapshots compare; the envelope
checks (``check_envelope``) verify what the placeholders hide: format, uniqueness and order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relavium_conformance._report.results import Difference

__all__ = ["ABSENT", "check_envelope", "match", "normalise"]

ABSENT = object()
_EMBEDDED_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _short(value: Any) -> Any:
    if value is ABSENT:
        return "<absent>"
    text = _json(value)
    return value if len(text) <= 300 else text[:300] + "..."


def match(expected: Any, actual: Any, path: str = "$", *, exact: bool = False) -> list[Difference]:
    """Every way ``actual`` departs from ``expected`` (empty: it matches).

    With ``exact`` (for language-neutral vectors) there are no operators, an actual mapping may hold
    no key the expected one lacks, and scalars must also agree in JSON type.
    """
    if (
        not exact
        and isinstance(expected, Mapping)
        and len(expected) == 1
        and next(iter(expected)).startswith("$")
    ):
        return _operator(next(iter(expected)), next(iter(expected.values())), actual, path)
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [
                Difference(
                    path=path, message="expected an object", expected=_short(expected), actual=_short(actual)
                )
            ]
        out: list[Difference] = []
        for key, want in expected.items():
            got = actual.get(key, ABSENT)
            tolerant = isinstance(want, Mapping) and ("$absent" in want or "$if_present" in want)
            if got is ABSENT and (exact or not tolerant):
                out.append(
                    Difference(path=f"{path}.{key}", message="missing", expected=_short(want), actual=None)
                )
                continue
            out.extend(match(want, got, f"{path}.{key}", exact=exact))
        if exact:
            out += [
                Difference(path=f"{path}.{key}", message="not expected", actual=_short(actual[key]))
                for key in actual
                if key not in expected
            ]
        return out
    if isinstance(expected, list | tuple):
        if not isinstance(actual, list | tuple):
            return [
                Difference(
                    path=path, message="expected a list", expected=_short(expected), actual=_short(actual)
                )
            ]
        if len(expected) != len(actual):
            return [
                Difference(
                    path=path,
                    message=f"expected {len(expected)} items, got {len(actual)}",
                    expected=_short(expected),
                    actual=_short(actual),
                )
            ]
        return [
            d
            for i, (w, g) in enumerate(zip(expected, actual, strict=True))
            for d in match(w, g, f"{path}[{i}]", exact=exact)
        ]
    same_type = (
        type(expected) is type(actual) if exact else not (type(expected) is bool) ^ (type(actual) is bool)
    )
    if expected != actual or not same_type:
        return [Difference(path=path, message="differs", expected=_short(expected), actual=_short(actual))]
    return []


def _operator(name: str, argument: Any, actual: Any, path: str) -> list[Difference]:
    def fail(message: str) -> list[Difference]:
        return [Difference(path=path, message=message, expected={name: argument}, actual=_short(actual))]

    if name == "$absent":
        return (
            []
            if (actual is ABSENT) == bool(argument)
            else fail("must be absent" if argument else "must be present")
        )
    if name == "$if_present":
        return [] if actual is ABSENT else match(argument, actual, path)
    if actual is ABSENT:
        return fail("missing")
    if name == "$matches":
        return (
            []
            if isinstance(actual, str) and re.fullmatch(argument, actual)
            else fail(f"must match {argument}")
        )
    if name == "$any":
        return []
    if name == "$contains":
        if isinstance(actual, str) and isinstance(argument, str):
            return [] if argument in actual else fail(f"does not contain {argument!r}")
        if isinstance(actual, list | tuple):
            return [] if any(not match(argument, item) for item in actual) else fail("no item matches")
        return fail("cannot contain")
    if name == "$not_contains":
        return fail(f"must not contain {argument!r}") if str(argument) in _json(actual) else []
    if name == "$len":
        return (
            []
            if isinstance(actual, Sequence) and len(actual) == argument
            else fail(f"length must be {argument}")
        )
    if name == "$gte":
        return (
            [] if isinstance(actual, int | float) and actual >= argument else fail(f"must be >= {argument}")
        )
    if name == "$one_of":
        return (
            []
            if any(not match(option, actual) for option in argument)
            else fail("matches none of the options")
        )
    return fail(f"unknown operator {name}")


def normalise(value: Any, *, session_ids: Sequence[str], workdir: str | None) -> Any:
    """Replace volatile data: the session id, timestamps, the case's working directory."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "timestamp" and isinstance(item, str):
                out[key] = "<timestamp>"
            else:
                out[key] = normalise(item, session_ids=session_ids, workdir=workdir)
        return out
    if isinstance(value, list | tuple):
        return [normalise(item, session_ids=session_ids, workdir=workdir) for item in value]
    if isinstance(value, str):
        for index, sid in enumerate(session_ids):
            if sid and value == sid:
                return f"<session-id-{index + 1}>"
            if sid and sid in value:  # inside a text (a workflow id, an exported YAML), as a whole token
                value = re.sub(
                    rf"(?<![A-Za-z0-9]){re.escape(sid)}(?![A-Za-z0-9])", f"<session-id-{index + 1}>", value
                )
        if workdir and workdir in value:
            value = value.replace(workdir, "<workdir>")
        return _EMBEDDED_TIMESTAMP.sub("<timestamp>", value)  # also inside texts (an exported YAML)
    return value


def check_envelope(
    events: Sequence[Mapping[str, Any]], session_id: str | None, *, first: int | None = 0
) -> list[Difference]:
    """Per-instance sequence numbers rising by one with no gap; the session id; ISO 8601 timestamps.

    ``first`` is the number the instance's first event must carry; None accepts any (a resumed instance
    may restart at 0 or continue the session's numbering, KD-EVT-4), the rest must follow it gap-free.
    Each rule reports its first offending event only, booked on its own clause: the numbering on
    AS-EVT-002, the id and the timestamp on AS-EVT-001 (the envelope, KD-EVT-2).
    """
    start = events[0].get("sequenceNumber") if events and first is None else first
    if not isinstance(start, int) or isinstance(start, bool):
        start = 0
    rules: list[tuple[str, str, Callable[[int, Mapping[str, Any]], bool], Callable[[int], Any]]] = [
        (
            "sequenceNumber",
            "sequence numbers rise by one with no gap"
            + (f" from {first}" if first is not None else " from the instance's first event"),
            lambda index, event: event.get("sequenceNumber") == start + index,
            lambda index: start + index,
        ),
        (
            "sessionId",
            "every event carries the session's id",
            lambda _index, event: session_id is None or event.get("sessionId") == session_id,
            lambda _index: session_id,
        ),
        (
            "timestamp",
            "timestamps are ISO 8601 with a zone",
            lambda _index, event: (
                isinstance(event.get("timestamp"), str) and bool(_TIMESTAMP.match(event["timestamp"]))
            ),
            lambda _index: "ISO 8601",
        ),
    ]
    out: list[Difference] = []
    for key, message, holds, expected in rules:
        index = next((i for i, event in enumerate(events) if not holds(i, event)), None)
        if index is not None:
            numbering = key == "sequenceNumber"
            out.append(
                Difference(
                    path=f"events[{index}].{key}",
                    message=message,
                    expected=expected(index),
                    actual=_short(events[index].get(key)),
                    clauses=("AS-EVT-002",) if numbering else ("AS-EVT-001",),
                    # starting at 0 is the kit's choice; rising by one with no gap is the spec's
                    kit_defined=() if numbering and index > 0 else ("KD-EVT-2",),
                )
            )
    return out
