"""The matcher and the normaliser: each operator matches what it should and refuses what it should not."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relavium_conformance._judge.matching import check_envelope, match, normalise


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ({"a": 1}, {"a": 1, "b": 2}),
        ([1, {"x": "y"}], [1, {"x": "y", "z": 0}]),
        ({"a": {"$absent": True}}, {"b": 1}),
        ({"a": {"$any": True}}, {"a": None}),
        ({"a": {"$contains": "ell"}}, {"a": "hello"}),
        ({"a": {"$contains": {"k": 1}}}, {"a": [{"k": 2}, {"k": 1}]}),
        ({"a": {"$not_contains": "secret"}}, {"a": {"deep": ["nothing here"]}}),
        ({"a": {"$len": 2}}, {"a": [1, 2]}),
        ({"a": {"$gte": 3}}, {"a": 3}),
        ({"a": {"$one_of": [1, 2]}}, {"a": 2}),
    ],
)
def test_matches(expected: object, actual: object) -> None:
    assert match(expected, actual) == []


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ({"a": 1}, {"a": 2}),
        ({"a": 1}, {}),
        ([1, 2], [1, 2, 3]),
        ({"a": {"$absent": True}}, {"a": 1}),
        ({"a": {"$any": True}}, {}),
        ({"a": {"$contains": "xyz"}}, {"a": "hello"}),
        ({"a": {"$not_contains": "secret"}}, {"a": ["the secret"]}),
        ({"a": {"$len": 1}}, {"a": [1, 2]}),
        ({"a": {"$gte": 4}}, {"a": 3}),
        ({"a": {"$one_of": [1, 2]}}, {"a": 3}),
        ({"a": True}, {"a": 1}),
        ({"a": {"$bogus": 1}}, {"a": 1}),
    ],
)
def test_mismatches_are_reported_with_a_path(expected: object, actual: object) -> None:
    differences = match(expected, actual)
    assert differences
    assert differences[0].path.startswith("$")


def test_normalise_hides_session_ids_timestamps_and_the_workdir() -> None:
    value = {"sessionId": "abc", "timestamp": "2026-01-01T00:00:00Z", "context": {"workingDir": "/tmp/w1/x"}}
    assert normalise(value, session_ids=["abc"], workdir="/tmp/w1") == {
        "sessionId": "<session-id-1>",
        "timestamp": "<timestamp>",
        "context": {"workingDir": "<workdir>/x"},
    }


def _event(n: int, sid: str = "s", stamp: str = "2026-01-01T00:00:00.000Z") -> dict[str, object]:
    return {"type": "x", "sequenceNumber": n, "sessionId": sid, "timestamp": stamp}


def test_envelope_accepts_a_gap_free_sequence() -> None:
    assert check_envelope([_event(0), _event(1), _event(2)], "s") == []


@pytest.mark.parametrize(
    "events",
    [
        [_event(1)],
        [_event(0), _event(2)],
        [_event(0), _event(0)],
        [_event(0, sid="other")],
        [_event(0, stamp="yesterday")],
    ],
)
def test_envelope_refuses_gaps_foreign_ids_and_bad_timestamps(events: list[dict[str, object]]) -> None:
    assert check_envelope(events, "s")


def test_normalise_hides_a_session_id_inside_texts_but_not_a_longer_one() -> None:
    value = {"id": "exported-session-session-2", "other": "session-28", "yaml": "sessionId: session-2\n"}
    assert normalise(value, session_ids=["session-2"], workdir=None) == {
        "id": "exported-session-<session-id-1>",
        "other": "session-28",
        "yaml": "sessionId: <session-id-1>\n",
    }


def _plain_normalise(value: Any, session_ids: Sequence[str], workdir: str | None) -> Any:
    """The rule ``normalise`` implements, written as plainly as possible: its fast walk must agree."""
    if isinstance(value, Mapping):
        return {
            key: "<timestamp>"
            if key == "timestamp" and isinstance(item, str)
            else _plain_normalise(item, session_ids, workdir)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_plain_normalise(item, session_ids, workdir) for item in value]
    if isinstance(value, str):
        for index, sid in enumerate(session_ids):
            if sid and value == sid:
                return f"<session-id-{index + 1}>"
            if sid and sid in value:
                value = re.sub(
                    rf"(?<![A-Za-z0-9]){re.escape(sid)}(?![A-Za-z0-9])", f"<session-id-{index + 1}>", value
                )
        if workdir and workdir in value:
            value = value.replace(workdir, "<workdir>")
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", "<timestamp>", value)
    return value


class _Text(str):
    """A str subclass: the walk's exact-type shortcuts must not change what it gets."""


_PIECES = st.sampled_from(
    ["s-1", "s-12", "/tmp/w", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.5+01:00", ":", "x", " ", "٣"]
)
_TEXTS = st.lists(_PIECES, max_size=6).map("".join) | st.text(max_size=30)
_VALUES = st.recursive(
    _TEXTS | _TEXTS.map(_Text) | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.sampled_from(["timestamp", "id", "text"]) | _TEXTS, inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    value=_VALUES,
    session_ids=st.lists(st.sampled_from(["s-1", "s-12", "", "x"]), max_size=3),
    workdir=st.sampled_from([None, "", "/tmp/w"]),
)
def test_normalise_agrees_with_the_plain_rule(
    value: Any, session_ids: list[str], workdir: str | None
) -> None:
    assert normalise(value, session_ids=session_ids, workdir=workdir) == _plain_normalise(
        value, session_ids, workdir
    )
