"""A kit choice named per expectation: the exact event lists rest on KD-EVT-7, their order does not.

An engine that delivers each text chunk as two token events breaks only KD-EVT-7 (the event schema
leaves the granularity open): the six exact-event-order cases fail it as kit-choice failures only. An
engine that breaks the order or the cancel rule fails the same cases as spec failures.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from relavium_conformance._corpus.cases import CaseExpect
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._judge.judge import _ORDER
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus, FailureKind, RunResult
from relavium_conformance._report.wording import difference_lines
from relavium_conformance._run.runner import run_cases
from relavium_conformance._selftest.breaks import broken_by_name
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance._wire.protocol import Callback

MARKED = (
    "events/sequence-gap-free",
    "lifecycle/plain-turn-event-order",
    "lifecycle/cancel-mid-stream",
    "lifecycle/cancel-during-event-delivery",
    "lifecycle/abort-idle-noop",
)


class _TwoTokensPerChunk(ReferenceImplementation):
    """Each text chunk reaches the host as two ``agent:token`` events (its two halves), numbered in line."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        extra: dict[str, int] = {}

        async def split(method: str, params: dict[str, Any]) -> Any:
            event = params.get("event")
            if method != "host.emit" or not isinstance(event, dict):
                return await callback(method, params)
            handle = str(params.get("handle"))
            shift = extra.get(handle, 0)
            event = {**event, "sequenceNumber": event["sequenceNumber"] + shift}
            text = event.get("token")
            if event.get("type") != "agent:token" or not isinstance(text, str) or len(text) < 2:
                return await callback(method, {**params, "event": event})
            half = len(text) // 2
            await callback(method, {**params, "event": {**event, "token": text[:half]}})
            extra[handle] = shift + 1
            later = {**event, "token": text[half:], "sequenceNumber": event["sequenceNumber"] + 1}
            return await callback(method, {**params, "event": later})

        super().__init__(split, name="kit-choice:two-tokens-per-chunk", **options)


def _run(adapter: InProcessAdapter, ids: tuple[str, ...]) -> RunResult:
    cases = [c for c in load_cases() if c.id in ids]
    assert len(cases) == len(ids)
    return asyncio.run(run_cases(adapter, cases, timeout=15.0, snapshots=False)).run


def test_every_expectation_has_a_place_in_the_judging_order() -> None:
    assert set(_ORDER) == set(CaseExpect.model_fields) - {"kit_defined", "sessions"}


def test_a_mark_must_name_a_stated_expectation() -> None:
    with pytest.raises(ValueError, match="names no expectation"):
        CaseExpect.model_validate({"event_types": ["x"], "kit_defined": {"event_typo": ["KD-EVT-7"]}})
    with pytest.raises(ValueError, match="does not state"):
        CaseExpect.model_validate({"event_types": ["x"], "kit_defined": {"rows": ["KD-EVT-7"]}})


def test_the_marked_cases_name_kd_evt_7_on_their_exact_event_lists() -> None:
    cases = {c.id: c for c in load_cases() if c.id in MARKED}
    for case in cases.values():
        assert "KD-EVT-7" in case.expect.kit_defined["event_types"]  # type: ignore[union-attr]
        assert "KD-EVT-7" not in case.kit_defined  # never the whole case


# in lifecycle/cancel-during-event-delivery the cancel comes with the first token event, so a second
# half-chunk event would come after it: that case cannot tell the granularity and is left out here
SPLIT = tuple(c for c in MARKED if c != "lifecycle/cancel-during-event-delivery")


def test_other_token_granularity_fails_only_the_kit_choice() -> None:
    run = _run(InProcessAdapter("two-tokens", _TwoTokensPerChunk), SPLIT)
    for case in run.cases:
        assert case.status is CaseStatus.FAILED, case.id
        assert case.failure_kind is FailureKind.KIT_CHOICE, (case.id, case.differences)
        assert all(d.kit_defined == ("KD-EVT-7",) for d in case.differences), case.id
        assert "[kit choice: KD-EVT-7]" in difference_lines(case.differences[0])[0]
    assert (run.summary.spec_failures, run.summary.kit_choice_failures) == (0, len(SPLIT))


@pytest.mark.parametrize(
    ("name", "case_id"),
    [
        ("turn-completed-after-cancel", "lifecycle/cancel-mid-stream"),
        ("idle-abort-emits", "lifecycle/abort-idle-noop"),
    ],
)
def test_a_broken_order_is_still_a_spec_failure(name: str, case_id: str) -> None:
    run = _run(InProcessAdapter(name, broken_by_name(name).factory()), (case_id,))
    [case] = run.cases
    assert case.status is CaseStatus.FAILED
    assert case.failure_kind is FailureKind.SPEC
    spec = [d for d in case.differences if not d.kit_defined]
    assert {d.path.split("[")[0] for d in spec} & {"event_runs", "session_events"}, case.differences


def test_expectations_of_a_session_no_step_names_are_refused() -> None:
    from relavium_conformance._corpus.cases import Case

    base = {"id": "a/b", "title": "t", "clauses": ["AS-EVT-002"], "steps": [{"op": "start"}]}
    with pytest.raises(ValueError, match="no step acts on"):
        Case.model_validate({**base, "expect": {"sessions": {"second": {"session_events": []}}}})
    with pytest.raises(ValueError, match="first session"):
        Case.model_validate({**base, "steps": [{"op": "start", "session": "main"}]})
    named = {**base, "steps": [{"op": "start", "session": "second"}]}
    Case.model_validate({**named, "expect": {"sessions": {"second": {"session_events": []}}}})
