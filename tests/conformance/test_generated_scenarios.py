"""Generated scenarios: random operation sequences, judged by the kit's model of the rules, on any adapter."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import Case, load_case
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases_sync
from relavium_conformance._selftest.breaks import broken_by_name
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance.strategies import build_case, case_to_yaml, generated_cases


def _verdict(adapter_name: str, case: Case) -> tuple[CaseStatus, str]:
    outcome = run_cases_sync(resolve_adapter(adapter_name), [case], snapshots=False)
    [result] = outcome.run.cases
    details = "; ".join(f"{d.path}: {d.message}" for d in result.differences)
    return result.status, f"{result.reason} {details}\n{case_to_yaml(case)}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=generated_cases())
def test_reference_meets_the_model_in_process(case: Case) -> None:
    status, why = _verdict("reference", case)
    assert status is CaseStatus.PASSED, why


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=generated_cases())
def test_reference_meets_the_model_over_stdio(case: Case) -> None:
    status, why = _verdict("reference-stdio", case)
    assert status is CaseStatus.PASSED, why


_TWO_SENDS = [("send", "text", "None"), ("send", "tool", "None")]


def test_generated_sequences_mix_compaction_with_sends_aborts_and_cancels() -> None:
    actions = [("start",), ("compact", "summarised"), *_TWO_SENDS, ("send", "text", "abort")]
    actions += [("compact", "summarised"), ("send", "text", "compact"), ("compact", "summarised")]
    actions += [("resume",), ("send", "empty", "None"), ("compact", "cancelled"), ("compact", "summarised")]
    case = build_case(actions, 4)
    kinds = [
        (s.expect or {}).get("kind") or (s.expect_error or {}).get("code")
        for s in case.steps
        if s.op == "compact"
    ]
    assert kinds == ["nothing_to_compact", "compacted", "compacted", "cancelled", "not_active"]
    dos = [getattr(step, "do", None) for call in case.provider for step in call]
    busy = [do for do in dos if getattr(do, "op", None) == "compact"]
    assert len(busy) == 1  # the compact issued while a turn streams, refused busy
    assert busy[0].expect_error == {"kind": "session_state", "code": "busy"}
    assert case.expect.summary_request_count == 3
    status, why = _verdict("reference", case)
    assert status is CaseStatus.PASSED, why


@pytest.mark.parametrize(
    ("broken", "actions", "max_turns"),
    [
        ("no-hard-cap", [("start",), ("send", "text", "None"), ("send", "text", "None")], 1),
        ("turn-completed-after-cancel", [("start",), ("send", "text", "cancel")], 2),
        ("idle-abort-emits", [("start",), ("abort",), ("send", "text", "None")], 2),
        ("persists-aborted-turn", [("start",), ("send", "text", "abort"), ("send", "empty", "None")], 3),
        ("drops-empty-terminal", [("start",), ("send", "empty", "None")], 1),
        # manual compaction mixed into the sequences (issue 13, point 9)
        ("compacted-without-kept-turn-count", [("start",), *_TWO_SENDS, ("compact", "summarised")], 3),
        ("compaction-without-marker", [("start",), *_TWO_SENDS, ("compact", "summarised")], 3),
        ("compaction-while-busy", [("start",), ("send", "text", "compact")], 2),
    ],
)
def test_a_generated_case_catches_a_broken_implementation(
    broken: str, actions: list[tuple[str, ...]], max_turns: int
) -> None:
    case = build_case(actions, max_turns)
    assert _verdict("reference", case)[0] is CaseStatus.PASSED
    implementation = broken_by_name(broken)
    adapter = InProcessAdapter(broken, implementation.factory())
    [result] = run_cases_sync(adapter, [case], snapshots=False).run.cases
    assert result.status is CaseStatus.FAILED


def test_a_generated_case_round_trips_as_a_golden_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = build_case([("start",), ("send", "tool", "None"), ("send", "text", "abort"), ("cancel",)], 3)
    monkeypatch.setattr("relavium_conformance._corpus.cases.transcripts_dir", lambda: tmp_path)
    path = tmp_path / "generated" / "generated.yaml"
    path.parent.mkdir()
    path.write_text(case_to_yaml(case), encoding="utf-8")
    assert load_case(path).model_dump(exclude={"source"}) == case.model_dump(exclude={"source"})
