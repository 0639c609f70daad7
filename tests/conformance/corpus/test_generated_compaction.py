"""Generated area ``compaction``: the after-turn trigger at its bounds, its outcomes, the passes, the
irreducible part; the reference meets the model, and the area finds a break the corpus misses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as fixed_seed

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.generated.compaction import (
    build_after_turn_case,
    build_irreducible_case,
    build_passes_case,
    fallback_trim,
    planned_passes,
)
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.fuzz import fuzz
from relavium_conformance._run.runner import run_cases_sync
from relavium_conformance._selftest.breaks import broken_by_name
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance.strategies import case_to_yaml, generated_cases

BREAK = "after-turn-reservation-ignores-estimate"


def _status(case: Case, broken: str | None = None) -> tuple[CaseStatus, str]:
    if broken is None:
        adapter: Any = resolve_adapter("reference")
    else:
        adapter = InProcessAdapter(broken, broken_by_name(broken).factory())
    [result] = run_cases_sync(adapter, [case], snapshots=False).run.cases
    details = "; ".join(f"{d.path}: {d.message}" for d in result.differences)
    return result.status, f"{result.reason} {details}\n{case_to_yaml(case)[:2000]}"


def test_the_area_meets_the_reference_at_a_fixed_seed() -> None:
    @fixed_seed(3)
    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=generated_cases("compaction"))
    def check(case: Case) -> None:
        status, why = _status(case)
        assert status is CaseStatus.PASSED, why

    check()


@pytest.mark.parametrize(
    ("bound", "threshold", "reservation", "offset", "passes"),
    [
        ("threshold", 0.125, None, 0, 0),  # exactly 1000 of 8000: strict, no pass
        ("threshold", 0.125, None, 1, 1),
        ("threshold", 0.125, None, -1, 0),
        ("reservation", None, 7000, 0, 0),  # 1000 + 7000 fills the window exactly
        ("reservation", None, 7000, 1, 1),
    ],
)
def test_after_turn_cases_sit_at_the_bounds_they_name(
    bound: str, threshold: float | None, reservation: int | None, offset: int, passes: int
) -> None:
    case = build_after_turn_case(2, bound, threshold, reservation, offset)
    assert case.expect.summary_request_count == passes
    status, why = _status(case)
    assert status is CaseStatus.PASSED, why


def test_after_turn_defaults_and_the_setting() -> None:
    at_default = build_after_turn_case(1, "threshold", None, None, 0, window=40000)  # 32000: no pass
    over_default = build_after_turn_case(1, "threshold", None, None, 1, window=40000)
    reserved = build_after_turn_case(2, "reservation", None, None, 1, window=16000, bulk=5900)
    off = build_after_turn_case(2, "threshold", 0.125, None, 1, enabled=False)
    assert "afterTurnCompaction" not in (over_default.setup.deps or {})  # unset means on
    assert at_default.expect.summary_request_count == 0
    assert over_default.expect.summary_request_count == 1
    assert (off.setup.deps or {})["afterTurnCompaction"] is False
    assert off.expect.summary_request_count == 0
    for case in (at_default, over_default, reserved, off):
        status, why = _status(case)
        assert status is CaseStatus.PASSED, why


def test_after_turn_failure_trims_only_with_a_bound_and_refusal_never() -> None:
    assert fallback_trim(3, None) is None
    assert fallback_trim(3, 6) is None  # every exchange fits: nothing to trim
    assert fallback_trim(3, 5) == {"keptMessageCount": 4, "droppedMessageCount": 2, "keptTurnCount": 2}
    assert fallback_trim(3, 1) == {"keptMessageCount": 0, "droppedMessageCount": 6, "keptTurnCount": 0}
    trims = build_after_turn_case(2, "threshold", 0.125, None, 1, outcome="fail", max_messages=3)
    keeps = build_after_turn_case(2, "threshold", 0.125, None, 1, outcome="fail")
    refused = build_after_turn_case(2, "threshold", 0.125, None, 1, outcome="refused", max_messages=2)
    assert "session:trimmed" in (trims.expect.events or {})
    assert "session:trimmed" in (keeps.expect.absent_events or ())
    assert "session:trimmed" in (refused.expect.absent_events or ())
    for case in (trims, keeps, refused):
        status, why = _status(case)
        assert status is CaseStatus.PASSED, why


@pytest.mark.parametrize("older", [1, 2, 3, 4, 5])
def test_passes_under_a_small_fallback_window(older: int) -> None:
    case = build_passes_case(older, 12000)
    assert case.expect.summary_request_count == planned_passes(older, 12000) <= 4
    status, why = _status(case)
    assert status is CaseStatus.PASSED, why


@pytest.mark.parametrize(("outcome", "at"), [("fail", 2), ("refused", 1), ("refused", 3)])
def test_a_pass_that_fails_or_is_refused_in_the_walk(outcome: str, at: int) -> None:
    case = build_passes_case(4, 12000, outcome, at)
    assert case.expect.summary_request_count == (at if outcome == "fail" else at - 1)
    status, why = _status(case)
    assert status is CaseStatus.PASSED, why


def test_automatic_work_uses_no_soft_bound_and_skips_an_irreducible_history() -> None:
    soft = build_passes_case(1, None, size=20000)  # one pass above 16,384 tokens, no acknowledgement
    assert soft.expect.compaction_starts == ()
    assert soft.expect.summary_requests is not None
    assert soft.expect.summary_requests[0]["estimate"]["$all"][0] == {"$gte": 20000}
    over = build_irreducible_case(2, "over", 200)
    under = build_irreducible_case(2, "under", 200)
    assert over.expect.summary_request_count == 0
    assert under.expect.summary_request_count == 1
    for case in (soft, over, under):
        status, why = _status(case)
        assert status is CaseStatus.PASSED, why
    assert _status(over, "presend-ignores-irreducible")[0] is CaseStatus.FAILED


def test_the_area_finds_the_break_the_corpus_misses() -> None:
    """The after-turn reservation read without maxTokensEstimate: one token over a 7000-token reservation's
    bound fires only with it; the generated area finds it within the proof's examples."""
    from relavium_conformance._corpus.boundary_breaks import BOUNDARY_BREAKS, PROOF_EXAMPLES, PROOF_SEED

    assert BOUNDARY_BREAKS[BREAK] == "compaction"
    case = build_after_turn_case(2, "reservation", None, 7000, 1)
    assert _status(case)[0] is CaseStatus.PASSED
    assert _status(case, BREAK)[0] is CaseStatus.FAILED
    adapter = InProcessAdapter(BREAK, broken_by_name(BREAK).factory())
    outcome = fuzz(adapter, examples=PROOF_EXAMPLES, seed=PROOF_SEED, area="compaction", shrink=False)
    assert outcome.failure is not None


def test_the_area_finds_a_fallback_trim_that_keeps_the_new_reply() -> None:
    """maxMessages 1 is below one exchange: the fallback trim keeps nothing (KD-TRIM-1), so a trim
    raised to keep the exchange just completed fails; the hand-written cases all trim to 2."""
    from relavium_conformance._corpus.boundary_breaks import BOUNDARY_BREAKS, PROOF_EXAMPLES, PROOF_SEED

    name = "fallback-trim-keeps-the-new-reply"
    assert BOUNDARY_BREAKS[name] == "compaction"
    case = build_after_turn_case(1, "threshold", 0.125, None, 1, outcome="fail", max_messages=1)
    assert _status(case)[0] is CaseStatus.PASSED
    assert _status(case, name)[0] is CaseStatus.FAILED
    adapter = InProcessAdapter(name, broken_by_name(name).factory())
    outcome = fuzz(adapter, examples=PROOF_EXAMPLES, seed=PROOF_SEED, area="compaction", shrink=False)
    assert outcome.failure is not None


def test_a_fixed_seed_gives_the_same_cases_and_verdicts() -> None:
    def one_run() -> list[tuple[str, str]]:
        adapter = InProcessAdapter(BREAK, broken_by_name(BREAK).factory())
        outcome = fuzz(adapter, examples=25, seed=4, area="compaction", shrink=False)
        return [(c.id, c.status.value) for c in outcome.run.cases]

    assert one_run() == one_run()
