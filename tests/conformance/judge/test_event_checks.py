"""Every event is checked against the event schema, on both transports; unknown fields only warn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._judge.events import (
    _accepted,
    _arms,
    _findings_whole,
    _tolerated,
    check_event_shapes,
)
from relavium_conformance._report.results import CaseStatus, FailureKind, RunResult
from relavium_conformance._run.runner import run_cases
from relavium_conformance._selftest.breaks import broken_by_name
from relavium_conformance._selftest.compliant import COMPLIANT_ALTERNATIVES
from relavium_conformance._selftest.proofs import serve_command
from relavium_conformance._wire.adapters import InProcessAdapter, StdioAdapter
from relavium_conformance._wire.protocol_validation import ProtocolValidator

CASE = "lifecycle/plain-turn-event-order"


def _cost(**changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "cost:updated",
        "sessionId": "s-1",
        "sequenceNumber": 3,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "nodeId": "helper",
        "model": "model-a",
        "inputTokens": 5,
        "outputTokens": 1,
        "costMicrocents": 0,
        "cumulativeCostMicrocents": 0,
    }
    event.update(changes)
    return {k: v for k, v in event.items() if v is not None}


def test_a_sound_event_passes_without_warning() -> None:
    assert check_event_shapes([_cost()]) == ([], [])


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"costMicrocents": "free"}, "events[0].costMicrocents"),
        ({"cumulativeCostMicrocents": -1}, "events[0].cumulativeCostMicrocents"),
        ({"model": None}, "events[0]"),
        ({"type": "cost:spent"}, "events[0].type"),
    ],
)
def test_mistyped_missing_or_unknown_type_fails_on_the_event_clause(
    changes: dict[str, Any], path: str
) -> None:
    failures, warnings = check_event_shapes([_cost(**changes)])
    assert [f.path for f in failures] == [path]
    assert failures[0].clauses == ("AS-EVT-001",)
    assert failures[0].kit_defined == ("KD-EVT-2",)
    assert warnings == []


def test_unknown_field_is_one_warning_not_a_failure() -> None:
    failures, warnings = check_event_shapes([_cost(portTrace="x"), _cost(portTrace="y", sequenceNumber=4)])
    assert failures == []
    assert len(warnings) == 1
    assert "portTrace" in warnings[0]
    assert "KD-EVT-6" in warnings[0]


def _run(adapter: InProcessAdapter | StdioAdapter, ids: set[str]) -> RunResult:
    cases = [c for c in load_cases() if c.id in ids]
    return asyncio.run(run_cases(adapter, cases, timeout=15.0, snapshots=False)).run


def _adapters(name: str) -> list[InProcessAdapter | StdioAdapter]:
    factories = {a.name: a.factory() for a in COMPLIANT_ALTERNATIVES}
    factory = factories.get(name) or broken_by_name(name).factory()
    return [
        InProcessAdapter(name, factory),
        StdioAdapter(name, serve_command(name), validate=ProtocolValidator(), request_timeout=15.0),
    ]


@pytest.mark.parametrize("name", ["cost-event-mistyped", "turn-completed-without-usage"])
@pytest.mark.parametrize("transport", [0, 1], ids=["in-process", "stdio"])
def test_broken_event_fails_on_both_transports(name: str, transport: int) -> None:
    run = _run(_adapters(name)[transport], {CASE})
    [case] = run.cases
    assert case.status is CaseStatus.FAILED
    assert "AS-EVT-001" in case.booked_clauses()
    [clause] = [c for c in run.clauses if c.id == "AS-EVT-001"]
    assert clause.status.value == "failed"
    assert clause.failed_by == (CASE,)


@pytest.mark.parametrize("transport", [0, 1], ids=["in-process", "stdio"])
def test_unknown_event_field_passes_with_a_warning(transport: int) -> None:
    run = _run(_adapters("unknown-event-field")[transport], {CASE})
    [case] = run.cases
    assert case.status is CaseStatus.PASSED
    assert case.warnings
    assert all("KD-EVT-6" in w for w in case.warnings)


def test_a_failure_resting_on_a_kit_choice_is_counted_apart() -> None:
    run = _run(InProcessAdapter("broken", broken_by_name("cost-event-mistyped").factory()), {CASE})
    [case] = run.cases
    assert case.failure_kind is FailureKind.KIT_CHOICE  # the event union is KD-EVT-2
    assert (run.summary.spec_failures, run.summary.kit_choice_failures) == (0, 1)
    # the case's own clauses are not failed by a generic check
    own = {c.id: c for c in run.clauses if c.id in ("AS-LIFE-007", "AS-LIFE-047")}
    assert {c.status.value for c in own.values()} == {"passed"}


def test_unknown_field_inside_an_optional_object_is_a_warning_too() -> None:
    completed: dict[str, Any] = {
        "type": "session:turn_completed",
        "sessionId": "s-1",
        "sequenceNumber": 4,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "stopReason": "stop",
        "tokensUsed": {"input": 1, "output": 1},
        "toolHistory": [{"toolCallId": "c-1", "name": "echo", "isError": False, "durationMs": 3}],
    }
    failures, warnings = check_event_shapes([completed])
    assert failures == []
    assert len(warnings) == 1
    assert "durationMs" in warnings[0]
    completed["toolHistory"][0]["isError"] = "no"
    failures, _warnings = check_event_shapes([completed])
    assert [f.path for f in failures] == ["events[0].toolHistory"]


_ODD = st.sampled_from(
    [None, "", "x", -1, 0, 1, 1.0, 1.5, True, False, [], [1], (1,), {}, {"a": 1}, {1: "a"}, float("nan")]
)


@settings(max_examples=400, deadline=None)
@given(
    changes=st.dictionaries(
        st.sampled_from(
            ["sessionId", "sequenceNumber", "timestamp", "nodeId", "model", "inputTokens", "extra", "type"]
        ),
        _ODD | st.text(max_size=3) | st.integers(-2, 2),
        max_size=4,
    ),
    drop=st.sets(st.sampled_from(["sessionId", "sequenceNumber", "timestamp", "nodeId"]), max_size=2),
)
def test_remembered_verdicts_agree_with_the_whole_schema(changes: dict[str, Any], drop: set[str]) -> None:
    """The payload memo (``_accepted``) answers exactly what the closed arm answers for the whole event,
    whatever the envelope holds, asked twice (the second answer comes from the memo)."""
    event = {**_cost(), **changes}
    for name in drop:
        event.pop(name, None)
    arms, _monotone = _arms()
    closed = arms["cost:updated"][1]
    expected = closed.is_valid(event)
    assert _accepted("cost:updated", closed, event) is expected
    assert _accepted("cost:updated", closed, event) is expected


def test_a_payload_json_cannot_hold_exactly_is_judged_whole() -> None:
    """A tuple reads as a JSON array but the schema's ``array`` is a list only: the memo must not let
    the list's verdict answer for the tuple (nor a text key's for an integer key)."""
    arms, _monotone = _arms()
    closed = arms["session:turn_completed"][1]
    base = {
        "type": "session:turn_completed",
        "sessionId": "s-1",
        "sequenceNumber": 1,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "stopReason": "stop",
        "tokensUsed": {"input": 1, "output": 1},
    }
    as_list, as_tuple = {**base, "toolHistory": []}, {**base, "toolHistory": ()}
    assert _accepted("session:turn_completed", closed, as_list) is closed.is_valid(as_list)
    assert _accepted("session:turn_completed", closed, as_tuple) is closed.is_valid(as_tuple)
    assert closed.is_valid(as_list) != closed.is_valid(as_tuple)


def _turn_completed(**changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "session:turn_completed",
        "sessionId": "s-1",
        "sequenceNumber": 4,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "stopReason": "stop",
        "tokensUsed": {"input": 1, "output": 1},
        "toolHistory": [{"toolCallId": "c-1", "name": "echo", "isError": False}],
    }
    event.update(changes)
    return {k: v for k, v in event.items() if v is not None}


@settings(max_examples=400, deadline=None)
@given(
    changes=st.dictionaries(
        st.sampled_from(["sessionId", "sequenceNumber", "timestamp", "stopReason", "portTrace", "type"]),
        _ODD | st.text(max_size=3) | st.integers(-2, 2),
        max_size=3,
    ),
    inner=st.dictionaries(st.sampled_from(["durationMs", "isError", "name", "x"]), _ODD, max_size=2),
    usage=st.dictionaries(
        st.sampled_from(["input", "model", "cached"]), _ODD | st.text(max_size=2), max_size=2
    ),
    drop=st.sets(st.sampled_from(["sessionId", "sequenceNumber", "timestamp", "tokensUsed"]), max_size=2),
)
def test_remembered_unknown_field_findings_agree_with_the_whole_schema(
    changes: dict[str, Any], inner: dict[str, Any], usage: dict[str, Any], drop: set[str]
) -> None:
    """The payload memo of the warnings path (``_tolerated``) answers what the open and closed arms say
    of the whole event: whether the open arm accepts it and, if so, every unknown field's path and
    names, asked twice (the second answer comes from the memo)."""
    event = _turn_completed(**changes)
    event["toolHistory"] = [{**event["toolHistory"][0], **inner}]
    event["tokensUsed"] = {**event["tokensUsed"], **usage}
    for name in drop:
        event.pop(name, None)
    arms, _monotone = _arms()
    opened, closed = arms["session:turn_completed"]
    expected = _findings_whole(opened, closed, event)
    assert _tolerated("session:turn_completed", opened, closed, event) == expected
    assert _tolerated("session:turn_completed", opened, closed, event) == expected


def test_unknown_field_warnings_name_each_event_once_remembered() -> None:
    """Two events with one payload and their own envelopes: the second's findings come from the memo,
    and the warning still names the first event's own index."""
    failures, warnings = check_event_shapes(
        [_cost(), _cost(portTrace="x", sequenceNumber=4), _cost(portTrace="x", sequenceNumber=5)]
    )
    assert failures == []
    assert warnings == [
        "cost:updated: unknown field(s) portTrace at events[1] "
        "(tolerated: consumers ignore unknown event fields, KD-EVT-6)"
    ]
