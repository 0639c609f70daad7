"""Hypothesis strategies for the engine's fuzz tests: hostile values and near-valid wire data.

Near-valid data is built from valid pieces with a chance of a bad piece at every level, so that most
examples pass the outer checks and reach the code behind them (a fuzzer that only produces garbage
tests nothing but the first check).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from relavium_reference._model.errors import RelaviumError

__all__ = [
    "FUZZ",
    "HOSTILE",
    "JSON",
    "ROUND_TRIP",
    "SQLITE_VALUES",
    "mutated",
    "only_documented",
    "quick_record",
    "quick_timestamps",
    "quick_transcript",
    "quick_turn",
    "ready_part",
    "timestamps",
]

#: Every fuzz target runs 2,000 examples, with no per-example deadline (the machine is shared).
#: ``ROUND_TRIP`` (500) is for the extra codec properties that are not a public parser or a pure.* method.
FUZZ = settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


ROUND_TRIP = settings(FUZZ, max_examples=500)


def only_documented(call: Callable[[], Any]) -> Any:
    """Run ``call``; a :class:`RelaviumError` is a documented refusal, anything else fails the test."""
    try:
        return call()
    except RelaviumError:
        return None


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([0, -1, 2**63, -(2**63) - 1, 10**15, -(10**14)])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
#: Values no JSON parser produces, as a careless caller could pass them.
HOSTILE = JSON | st.sampled_from([b"\x00", (), (1, "a"), frozenset(), object(), math.nan, 1j, [[[]]] * 3])
#: What a SQLite column can hold (a tampered row may hold any of it in any column).
SQLITE_VALUES = (
    st.none()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=16)
    | st.binary(max_size=8)
)

_EXTREME_TIMES = [
    "0001-01-01T00:00:00+23:59",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00-23:59",
    "9999-12-31T23:59:59-23:59",
    "9999-12-31T23:59:59.999999999Z",
    "9999-12-31T23:59:59+23:59",
    "1970-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T00:00:00+24:00",
    "",
]


def _moment(value: datetime, minutes: int) -> str:
    zone = timezone(timedelta(minutes=minutes))
    return value.replace(tzinfo=zone).isoformat()


timestamps = (
    st.sampled_from(_EXTREME_TIMES)
    | st.builds(_moment, st.datetimes(), st.integers(min_value=-1439, max_value=1439))
    | st.builds(
        lambda d: d.astimezone(UTC).isoformat().replace("+00:00", "Z"), st.datetimes(timezones=st.just(UTC))
    )
    | st.from_regex(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})\Z")
)

#: Cheap bad values for single fields.
_BAD = st.sampled_from(
    [
        None,
        True,
        0,
        -1,
        2**63,
        10**15,
        -(10**14),
        1.5,
        math.nan,
        math.inf,
        "",
        "x",
        "\x00",
        "1",
        [],
        {},
        [1],
        {"type": []},
        [{"type": []}],
        b"\x00",
        (),
        object(),
    ]
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside nested dicts and lists (the root excluded)."""
    found: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found.append((*prefix, key))
        found.extend(_paths(inner, (*prefix, key)))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = _BAD) -> Any:
    """``base`` with up to three edits anywhere inside: a value replaced, a key dropped, a key added.

    Near-valid data reaches past the first check of a parser; the edits find what lies behind it.
    """
    value = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        paths = _paths(value)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.integers(min_value=0, max_value=4))
        if action == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == 1 and isinstance(parent, dict):
            key = draw(st.sampled_from(["extra", "signature", "arguments", "result", "content", "type"]))
            parent[key] = copy.deepcopy(draw(bad))  # a fresh copy: sampled values are shared objects
        else:
            parent[path[-1]] = copy.deepcopy(draw(bad))
    return value


# -- cheap transcripts for the pure.* targets ------------------------------------------------------
# Built from tables of ready parts, so that an example costs a few draws and the time goes into the
# code under test.  The bad pieces in the tables are the ones that broke the engine before.

_HANDLE_REF = "media://sha256-" + "ab" * 32
_READY_PARTS: dict[str, list[Any]] = {
    "system": [{"type": "text", "text": "summary"}, {"type": "text", "text": ""}],
    "user": [
        {"type": "text", "text": "question {{x}}"},
        {"type": "text", "text": ""},
        {"type": "text", "text": "  \u2028\ufeff\r"},
        {"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": _HANDLE_REF}},
        {
            "type": "media",
            "mimeType": "audio/ogg",
            "source": {"kind": "handle", "ref": _HANDLE_REF},
            "byteLength": 9,
            "durationMs": 1200,
        },
    ],
    "assistant": [
        {"type": "text", "text": "answer"},
        {"type": "text", "text": ""},
        {"type": "tool_call", "id": "c1", "name": "read"},
        {"type": "tool_call", "id": "c2", "name": "unknown_tool"},
        {"type": "reasoning", "text": "because"},
        {"type": "reasoning", "text": "", "redacted": True},
    ],
    "tool": [
        {"type": "tool_result", "toolCallId": "c1", "name": "read", "isError": False},
        {"type": "tool_result", "toolCallId": "c2", "name": "unknown_tool", "isError": True, "byteLength": 3},
        {
            "type": "tool_result",
            "toolCallId": "c1",
            "name": "read",
            "isError": False,
            "truncated": True,
            "attachments": [{"mimeType": "image/png", "ref": _HANDLE_REF, "byteLength": 4}],
        },
    ],
}
ready_part = st.sampled_from([part for parts in _READY_PARTS.values() for part in parts])
_BAD_CONTENT = [1, "ab", None, [{"type": []}], [{"type": "text"}], [1], {"type": "text", "text": "x"}]
quick_timestamps = st.sampled_from(
    [*_EXTREME_TIMES, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456+05:30", "2026-06-01T12:00:00-07:00"]
)


@st.composite
def quick_transcript(draw: st.DrawFn, max_size: int = 8, min_size: int = 0) -> list[Any]:
    """Up to ``max_size`` wire messages of session ``s-1``: mostly valid, numbered 0..n-1 or shuffled."""
    size = draw(st.integers(min_value=min_size, max_value=max_size))
    numbering = draw(st.sampled_from(["gap-free", "gap-free", "gap-free", "shuffled", "repeated", "huge"]))
    numbers = list(range(size))
    if numbering == "shuffled":
        numbers = draw(st.permutations(numbers))
    elif numbering == "repeated" and size:
        numbers[-1] = 0
    elif numbering == "huge" and size:
        numbers[-1] = 2**63
    rows = []
    for number in numbers:
        role = draw(st.sampled_from(["user", "assistant", "assistant", "tool", "system"]))
        if draw(st.integers(min_value=0, max_value=19)) == 0:
            content: Any = draw(st.sampled_from(_BAD_CONTENT))
        else:
            count = 1 if role == "tool" else draw(st.integers(min_value=0, max_value=2))
            content = [draw(st.sampled_from(_READY_PARTS[role])) for _ in range(count)]
        row: dict[str, Any] = {
            "id": f"m{number}",
            "sessionId": "s-1",
            "sequenceNumber": number,
            "role": role,
            "content": content,
            "timestamp": draw(quick_timestamps),
        }
        if role == "system" and draw(st.booleans()):
            row["compaction"] = {"droppedThroughSequence": draw(st.integers(min_value=0, max_value=max_size))}
        if role == "assistant" and draw(st.booleans()):
            row["modelId"] = draw(st.sampled_from(["model-a", "model-b"]))
        rows.append(row)
    return rows


@st.composite
def quick_record(draw: st.DrawFn) -> dict[str, Any]:
    """A wire session record of ``s-1`` with the values that once broke a store or an export."""
    record: dict[str, Any] = {
        "id": "s-1",
        "agentSlug": draw(st.sampled_from(["coder", "a-b-c"])),
        "context": {"workingDir": "/w"},
        "createdAt": draw(quick_timestamps),
        "updatedAt": draw(quick_timestamps),
    }
    title = draw(
        st.sampled_from(
            [None, "Fix the bug", "", "   ", "\u00c4\u00d6 \u00df \u0131 \u1e9e", "{{x}}", "x" * 200]
        )
    )
    if title is not None:
        record["title"] = title
    if draw(st.booleans()):
        record["agentSnapshot"] = {
            "id": "coder",
            "model": "model-a",
            "provider": "anthropic",
            "system_prompt": "be brief {{x}}",
            "tools": draw(st.sampled_from([[], ["read"], ["read", "read"]])),
            "fallback_chain": draw(
                st.sampled_from(
                    [
                        [],
                        [{"model": "model-a", "provider": "anthropic"}],
                        [{"model": "m", "provider": "openai"}],
                    ]
                )
            ),
        }
    return record


@st.composite
def quick_turn(draw: st.DrawFn) -> dict[str, Any]:
    """A wire completed turn: user row, zero to two call/result pairs, terminal row, cost entries."""
    structural = []
    for index in range(draw(st.integers(min_value=0, max_value=2))):
        call = f"c{index}"
        structural.append(
            {"role": "assistant", "content": [{"type": "tool_call", "id": call, "name": "read"}]}
        )
        result = {"type": "tool_result", "toolCallId": call, "name": "read", "isError": draw(st.booleans())}
        structural.append({"role": "tool", "content": [result]})
    terminal: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    if draw(st.booleans()):
        terminal["timestamp"] = draw(quick_timestamps)
    return {
        "user": {"role": "user", "content": [{"type": "text", "text": "q"}]},
        "structural": structural,
        "terminal": terminal,
        "finishReason": draw(st.sampled_from(["stop", "length", "content_filter"])),
        "costs": [{"model": "m", "inputTokens": 1, "callCount": 2, "unpricedCalls": draw(st.integers(0, 3))}],
    }
