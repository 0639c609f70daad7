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


# -- areas, determinism, boundary breaks (issue 34) ------------------------------------------------------


def test_an_area_narrows_generation_and_an_unknown_one_is_a_usage_error() -> None:
    from hypothesis import seed as fixed_seed

    from relavium_conformance._corpus.generated import AREAS
    from relavium_conformance._errors import KitUsageError

    assert set(AREAS) >= {"lifecycle", "history"}
    seen: list[str] = []

    @fixed_seed(5)
    @settings(max_examples=20, database=None, suppress_health_check=list(HealthCheck))
    @given(case=generated_cases("history"))
    def collect(case: Case) -> None:
        seen.append(case.title)

    collect()
    assert seen
    assert all("memory policy" in title for title in seen)
    with pytest.raises(KitUsageError, match="no generated area"):
        generated_cases("no-such-area")


def test_a_fixed_seed_gives_the_same_cases_and_verdicts_run_after_run() -> None:
    from relavium_conformance._run.fuzz import fuzz
    from relavium_conformance.strategies import case_to_yaml as dump

    def one_run() -> list[tuple[str, str]]:
        adapter = InProcessAdapter("broken", broken_by_name("trim-counts-its-marker").factory())
        outcome = fuzz(adapter, examples=30, seed=7, area="history", shrink=False)
        found = [] if outcome.failure is None else [("failure", dump(outcome.failure))]
        return [(c.id, c.status.value) for c in outcome.run.cases] + found

    assert one_run() == one_run()


def test_boundary_breaks_pass_the_corpus_but_not_generation() -> None:
    """Each break in BOUNDARY_BREAKS is found by its area's generated cases at the proof's seed (the
    corpus side, that no hand-written case catches them, is what the selftest reports)."""
    from relavium_conformance._corpus.boundary_breaks import BOUNDARY_BREAKS, PROOF_EXAMPLES, PROOF_SEED
    from relavium_conformance._run.fuzz import fuzz

    assert len(BOUNDARY_BREAKS) >= 3
    for name, area in BOUNDARY_BREAKS.items():
        adapter = InProcessAdapter(name, broken_by_name(name).factory())
        outcome = fuzz(adapter, examples=PROOF_EXAMPLES, seed=PROOF_SEED, area=area, shrink=False)
        assert outcome.failure is not None, name
        failed = [c for c in outcome.run.cases if c.status is not CaseStatus.PASSED]
        assert failed, name
        assert set(broken_by_name(name).clauses) & set(failed[0].booked_clauses()), name


@pytest.mark.parametrize(
    ("memory", "actions", "kept"),
    [
        # a bound exactly at the newest two slots' units (2 + 1) keeps both; one below keeps one
        (None, [("send", "full"), ("send", "full"), ("send", "empty"), ("trim", 2, 0)], 3),
        (None, [("send", "full"), ("send", "full"), ("send", "empty"), ("trim", 2, -1)], 1),
        ({"type": "summary"}, [("send", "full"), ("send", "empty"), ("trim", 1, 1)], 1),
    ],
)
def test_history_cases_meet_the_reference_at_trim_bounds(
    memory: dict[str, object] | None, actions: list[tuple[object, ...]], kept: int
) -> None:
    from relavium_conformance._corpus.generated.history import build_history_case

    case = build_history_case([("start",), *actions], memory)
    trim = [step for step in case.steps if step.op == "trimHistory"][-1]
    assert (trim.expect or {}).get("keptMessageCount", (trim.expect or {}).get("messageCount")) == kept
    status, why = _verdict("reference", case)
    assert status is CaseStatus.PASSED, why


ALL_AREAS = ["lifecycle", "history", "chain", "presend", "overflow", "dialects", "usage", "compaction"]


@pytest.mark.parametrize("area", ALL_AREAS)
def test_every_area_meets_the_reference(area: str) -> None:
    """Each area's own draw (the mixed draw above may visit a small area rarely), at a fixed seed."""
    from hypothesis import seed as fixed_seed

    @fixed_seed(11)
    @settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=generated_cases(area))
    def check(case: Case) -> None:
        status, why = _verdict("reference", case)
        assert status is CaseStatus.PASSED, why

    check()


def test_presend_cases_sit_at_the_bounds_they_name() -> None:
    from relavium_conformance._corpus.generated.presend import build_presend_case

    at = build_presend_case(2, 0.0625, None, "threshold", 0)
    over = build_presend_case(2, 0.0625, None, "threshold", 1)
    [estimate_at] = [s for s in at.steps if s.op == "contextEstimate"]
    assert estimate_at.expect == {"inputTokens": 500}  # 0.0625 x 8000, exactly: no fold (strict comparison)
    assert at.expect.summary_request_count == 0
    assert over.expect.summary_request_count == 1
    reserved = build_presend_case(3, 0.25, 7500, "reservation", 1)  # 501 + 7500 > 8000: a fold
    assert reserved.expect.summary_request_count == 1
    for case in (at, over, reserved):
        status, why = _verdict("reference", case)
        assert status is CaseStatus.PASSED, why
