"""The matcher and the normaliser: each operator matches what it should and refuses what it should not."""

from __future__ import annotations

import pytest

from relavium_conformance._run.matching import check_envelope, match, normalise


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
