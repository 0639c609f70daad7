"""The results model: case and run invariants, clause aggregation, exit codes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import (
    BaselineComparison,
    CapabilityGate,
    CaseResult,
    CaseStatus,
    ClauseInfo,
    ClauseStatus,
    ExitCode,
    FailureKind,
    ImplementationInfo,
    KitInfo,
    RunResult,
    StaleEntry,
    StaleWhy,
    Summary,
    aggregate_clauses,
    area_of,
    exit_code,
    one_line,
)

ROOT = Path(__file__).resolve().parents[3]
STARTED = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
IMPL = ImplementationInfo(name="acme", version="1.0", language="go", adapter="stdio")


def case(case_id: str, status: str = "passed", *clauses: str, **extra: object) -> CaseResult:
    if status != "passed" and "reason" not in extra:
        extra["reason"] = f"{status} for a reason"
    return CaseResult.model_validate(
        {"id": case_id, "title": case_id, "status": status, "clauses": list(clauses), **extra}
    )


def run_of(*cases: CaseResult, catalogue: list[ClauseInfo] | None = None) -> RunResult:
    return RunResult.build(
        implementation=IMPL,
        cases=cases,
        catalogue=catalogue or [],
        started_at=STARTED,
        duration_ms=10,
        kit=KitInfo(version="0.0.test"),
    )


# --- cases ---------------------------------------------------------------------------------------------


def test_case_area_is_the_first_segment_of_its_id() -> None:
    assert case("lifecycle/abort-idle-is-noop").area == "lifecycle"
    assert case("turns/streaming/chunk-order").area == "turns"
    assert area_of("memory/window-trim") == "memory"


@pytest.mark.parametrize("bad_id", ["no-area", "/leading", "trailing/", "has space/x", ""])
def test_case_id_without_an_area_is_refused(bad_id: str) -> None:
    with pytest.raises(ValidationError):
        case(bad_id)
    with pytest.raises(KitUsageError):
        area_of(bad_id)


def test_case_area_contradicting_its_id_is_refused() -> None:
    with pytest.raises(ValidationError, match="first segment"):
        case("lifecycle/x", area="turns")


def test_reason_is_collapsed_to_one_bounded_line() -> None:
    result = case("a/b", "errored", reason="Traceback:\n  File x\n\tboom   " + "y" * 1000)
    assert result.reason is not None
    assert "\n" not in result.reason
    assert "\t" not in result.reason
    assert result.reason.startswith("Traceback: File x boom y")
    assert len(result.reason) == 300
    assert result.reason.endswith("\u2026")
    assert one_line("  short  ") == "short"


def test_passed_case_refuses_a_reason() -> None:
    with pytest.raises(ValidationError, match="no reason"):
        case("a/b", "passed", reason="why?")


@pytest.mark.parametrize("status", ["failed", "errored", "unsupported"])
def test_non_passed_case_needs_a_reason(status: str) -> None:
    with pytest.raises(ValidationError, match="needs a reason"):
        case("a/b", status, reason=" \n ")


def test_differences_belong_to_failed_cases_only() -> None:
    difference = {"path": "events[0]", "expected": 1, "actual": 2, "message": "m"}
    assert case("a/b", "failed", differences=[difference]).differences[0].actual == 2
    with pytest.raises(ValidationError, match="differences"):
        case("a/b", "errored", differences=[difference])


def test_stderr_tail_belongs_to_errored_cases_only() -> None:
    assert case("a/b", "errored", stderr_tail="boom").stderr_tail == "boom"
    with pytest.raises(ValidationError, match="stderr"):
        case("a/b", "failed", stderr_tail="boom")


def test_stderr_tail_lone_surrogates_are_replaced() -> None:
    tail = b"bad \xff byte".decode("utf-8", "surrogateescape")
    result = case("a/b", "errored", stderr_tail=tail)
    assert result.stderr_tail == "bad \ufffd byte"
    result.model_dump_json()  # encodable


def test_failed_handshake_makes_a_case_errored() -> None:
    assert case("a/b", "errored", handshake_failed=True).handshake_failed
    with pytest.raises(ValidationError, match="handshake"):
        case("a/b", "failed", handshake_failed=True)


def test_case_refuses_unknown_fields_and_bad_clause_ids() -> None:
    with pytest.raises(ValidationError, match="extra"):
        case("a/b", colour="red")
    with pytest.raises(ValidationError):
        case("a/b", "passed", "as-life-1")
    with pytest.raises(ValidationError, match="twice"):
        case("a/b", "passed", "AS-LIFE-001", "AS-LIFE-001")


def test_case_result_is_frozen() -> None:
    result = case("a/b")
    with pytest.raises(ValidationError):
        result.title = "changed"  # type: ignore[misc]


# --- clause aggregation --------------------------------------------------------------------------------

TESTABLE = ClauseInfo("AS-LIFE-001", "testable")


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ((), ClauseStatus.UNTESTED),
        (("passed",), ClauseStatus.PASSED),
        (("passed", "passed"), ClauseStatus.PASSED),
        (("passed", "failed"), ClauseStatus.FAILED),
        (("passed", "errored"), ClauseStatus.FAILED),
        (("unsupported", "errored"), ClauseStatus.FAILED),
        (("unsupported",), ClauseStatus.UNSUPPORTED),
        (("passed", "unsupported"), ClauseStatus.UNSUPPORTED),
    ],
)
def test_testable_clause_status_follows_its_cases(statuses: tuple[str, ...], expected: ClauseStatus) -> None:
    cases = [case(f"area/c{i}", status, "AS-LIFE-001") for i, status in enumerate(statuses)]
    [result] = aggregate_clauses(cases, [TESTABLE])
    assert result.status is expected
    assert result.cases == tuple(c.id for c in cases)
    assert result.proven_by == ()


def test_kit_defined_clause_is_tested_like_a_testable_one() -> None:
    clause = ClauseInfo("AS-TEST-002", "kit-defined")
    assert aggregate_clauses([], [clause])[0].status is ClauseStatus.UNTESTED
    failing = [case("turns/x", "failed", "AS-TEST-002")]
    assert aggregate_clauses(failing, [clause])[0].status is ClauseStatus.FAILED


@pytest.mark.parametrize("kind", ["host-specific", "informative"])
def test_unobservable_clause_is_not_applicable_even_when_cited(kind: str) -> None:
    clause = ClauseInfo("AS-TEST-101", kind)
    assert aggregate_clauses([], [clause])[0].status is ClauseStatus.NOT_APPLICABLE
    cited = [case("host/x", "failed", "AS-TEST-101")]
    [result] = aggregate_clauses(cited, [clause])
    assert result.status is ClauseStatus.NOT_APPLICABLE
    assert result.cases == ("host/x",)


def test_aggregation_keeps_catalogue_order_and_only_citing_cases() -> None:
    catalogue = [ClauseInfo("AS-TEST-001", "testable"), ClauseInfo("AS-LIFE-001", "testable")]
    cases = [case("lifecycle/a", "passed", "AS-LIFE-001"), case("turns/b", "failed", "AS-TEST-001")]
    results = aggregate_clauses(cases, catalogue)
    assert [(r.id, r.status, r.cases) for r in results] == [
        ("AS-TEST-001", ClauseStatus.FAILED, ("turns/b",)),
        ("AS-LIFE-001", ClauseStatus.PASSED, ("lifecycle/a",)),
    ]


def test_case_citing_a_clause_missing_from_the_catalogue_is_a_usage_error() -> None:
    with pytest.raises(KitUsageError, match="AS-TEST-901"):
        aggregate_clauses([case("a/b", "passed", "AS-TEST-901")], [TESTABLE])


def test_catalogue_entry_with_unknown_status_is_a_usage_error() -> None:
    with pytest.raises(KitUsageError, match="unknown status"):
        aggregate_clauses([], [ClauseInfo("AS-LIFE-001", "normative")])


def test_aggregation_accepts_the_kits_own_catalogue() -> None:
    catalogue = load_catalogue().clauses
    testable = next(c for c in catalogue if c.status == "testable")
    unobservable = next(c for c in catalogue if c.status in ("host-specific", "informative"))
    cases = [case("area/x", "passed", testable.id, unobservable.id)]
    results = {r.id: r for r in aggregate_clauses(cases, catalogue)}
    assert len(results) == len(catalogue)
    assert results[testable.id].status is ClauseStatus.PASSED
    assert results[unobservable.id].status is ClauseStatus.NOT_APPLICABLE
    untested = sum(r.status is ClauseStatus.UNTESTED for r in results.values())
    assert untested == sum(c.status in ("testable", "kit-defined") for c in catalogue) - 1


_STATUSES = st.sampled_from(list(CaseStatus))


@given(st.lists(_STATUSES, max_size=8))
def test_clause_fails_exactly_when_a_citing_case_fails_or_errors(statuses: list[CaseStatus]) -> None:
    cases = [case(f"area/c{i}", status.value, "AS-LIFE-001") for i, status in enumerate(statuses)]
    [result] = aggregate_clauses(cases, [TESTABLE])
    failing = {CaseStatus.FAILED, CaseStatus.ERRORED} & set(statuses)
    assert (result.status is ClauseStatus.FAILED) == bool(failing)
    assert (result.status is ClauseStatus.PASSED) == (bool(statuses) and set(statuses) == {CaseStatus.PASSED})
    assert (result.status is ClauseStatus.UNTESTED) == (not statuses)


# --- the run -------------------------------------------------------------------------------------------


def test_build_counts_cases_and_aggregates_clauses() -> None:
    run = run_of(
        case("lifecycle/a", "passed", "AS-LIFE-001"),
        case("lifecycle/b", "failed", "AS-LIFE-001"),
        case("turns/c", "errored"),
        case("turns/d", "unsupported"),
        case("turns/e", "passed"),
        catalogue=[TESTABLE, ClauseInfo("AS-TEST-001", "testable")],
    )
    assert run.summary == Summary(passed=2, failed=1, errored=1, unsupported=1, total=5, spec_failures=1)
    assert [(c.id, c.status) for c in run.clauses] == [
        ("AS-LIFE-001", ClauseStatus.FAILED),
        ("AS-TEST-001", ClauseStatus.UNTESTED),
    ]
    assert run.areas() == ["lifecycle", "turns"]
    assert [c.id for c in run.failures()] == ["lifecycle/b", "turns/c"]


def test_run_refuses_a_summary_that_does_not_count_its_cases() -> None:
    run = run_of(case("a/b"))
    data = run.model_dump()
    data["summary"]["passed"] = 2
    with pytest.raises(ValidationError, match="summary"):
        RunResult.model_validate(data)


def test_run_refuses_repeated_case_ids() -> None:
    with pytest.raises(ValidationError, match="repeated"):
        run_of(case("a/b"), case("a/b", "failed"))


def test_run_refuses_a_clause_naming_a_case_it_does_not_hold() -> None:
    data = run_of(case("a/b", "passed", "AS-LIFE-001"), catalogue=[TESTABLE]).model_dump()
    data["clauses"][0]["cases"] = ["a/missing"]
    with pytest.raises(ValidationError, match="not in the run"):
        RunResult.model_validate(data)


def test_run_round_trips_through_json() -> None:
    difference = {"path": "p", "expected": {"k": [1]}, "message": "m"}
    run = run_of(case("a/b", "failed", "AS-LIFE-001", differences=[difference]), catalogue=[TESTABLE])
    assert RunResult.model_validate_json(run.model_dump_json()) == run


def test_with_proofs_fills_proven_by_per_clause() -> None:
    catalogue = [TESTABLE, ClauseInfo("AS-TEST-001", "testable")]
    run = run_of(case("a/b", "passed", "AS-LIFE-001"), catalogue=catalogue)
    proven = run.with_proofs({"AS-LIFE-001": ["skips-abort", "double-terminal"]})
    assert [c.proven_by for c in proven.clauses] == [("double-terminal", "skips-abort"), ()]
    assert run.clauses[0].proven_by == ()  # the original is unchanged


def test_kit_info_reports_the_installed_version() -> None:
    kit = KitInfo.current()
    assert kit.name == "relavium-conformance"
    assert kit.version


# --- exit codes ----------------------------------------------------------------------------------------


def comparison(**fields: object) -> BaselineComparison:
    return BaselineComparison.model_validate({"file": "b.yaml", **fields})


def test_exit_ok_when_every_case_passes() -> None:
    assert exit_code(run_of(case("a/b"), case("a/c"))) is ExitCode.OK


def test_a_run_that_tested_nothing_never_exits_ok() -> None:
    assert exit_code(run_of(case("a/b", "unsupported"))) is ExitCode.NO_CASES
    assert exit_code(run_of(case("a/b", "unsupported")), comparison()) is ExitCode.NO_CASES
    assert exit_code(run_of(case("a/b", "unsupported"), case("a/c"))) is ExitCode.OK
    # a capability dropped below the baseline's turns failures into unsupported cases: the gate still fails
    from relavium_conformance._report.results import CapabilityGate

    gated = run_of(case("a/b", "unsupported")).with_capability_gate(
        CapabilityGate(required=("resume",), missing=("resume",), sources=("b.yaml",))
    )
    assert exit_code(gated) is ExitCode.FAILED


@pytest.mark.parametrize("status", ["failed", "errored"])
def test_exit_failed_when_a_case_fails_without_baseline(status: str) -> None:
    assert exit_code(run_of(case("a/b"), case("a/c", status))) is ExitCode.FAILED


def test_exit_no_cases_when_the_selection_is_empty() -> None:
    assert exit_code(run_of()) is ExitCode.NO_CASES
    assert exit_code(run_of(), comparison()) is ExitCode.NO_CASES


def test_exit_not_started_when_every_attempted_case_failed_its_handshake() -> None:
    run = run_of(
        case("a/b", "errored", handshake_failed=True),
        case("a/c", "errored", handshake_failed=True),
        case("a/d", "unsupported"),
    )
    assert exit_code(run) is ExitCode.NOT_STARTED
    # a baseline listing them does not hide an implementation that never started
    assert exit_code(run, comparison(known_failures=["a/b", "a/c"])) is ExitCode.NOT_STARTED


def test_exit_failed_when_only_some_cases_failed_their_handshake() -> None:
    run = run_of(case("a/b", "errored", handshake_failed=True), case("a/c"))
    assert exit_code(run) is ExitCode.FAILED


def test_exit_with_baseline_follows_new_failures_and_stale_entries() -> None:
    run = run_of(case("a/b", "failed"), case("a/c"))
    assert exit_code(run, comparison(known_failures=["a/b"])) is ExitCode.OK
    assert exit_code(run, comparison(new_failures=["a/b"])) is ExitCode.FAILED
    stale = [StaleEntry(case="a/c", why=StaleWhy.PASSES)]
    assert exit_code(run, comparison(known_failures=["a/b"], stale_entries=stale)) is ExitCode.FAILED


def test_exit_uses_the_comparison_recorded_on_the_run() -> None:
    run = run_of(case("a/b", "failed"))
    assert exit_code(run) is ExitCode.FAILED
    assert exit_code(run.with_baseline(comparison(known_failures=["a/b"]))) is ExitCode.OK


def test_every_exit_code_is_documented_with_its_number() -> None:
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| `(\d+)` \| `([A-Z_]+)` \|", text, re.M))
    assert documented == {str(int(code)): code.name for code in ExitCode}


def test_run_refuses_a_start_time_without_a_time_zone() -> None:
    with pytest.raises(ValidationError, match="timezone"):
        RunResult.build(
            implementation=IMPL,
            cases=[],
            catalogue=[],
            started_at=datetime(2026, 11, 30, 4, 0),  # naive on purpose
            duration_ms=0,
        )


# --- spec failures and kit-choice failures ---------------------------------------------------------------


def _diff(*, clauses: tuple[str, ...] = (), kit_defined: tuple[str, ...] = ()) -> dict[str, object]:
    return {"path": "x", "message": "differs", "clauses": list(clauses), "kit_defined": list(kit_defined)}


KD_CATALOGUE = [
    ClauseInfo("AS-LIFE-001", "testable"),
    ClauseInfo("AS-EVT-001", "kit-defined"),
    ClauseInfo("AS-EVT-002", "testable"),
]


def test_generic_check_books_on_its_own_clause_not_the_cases() -> None:
    run = run_of(
        case("lifecycle/a", "failed", "AS-LIFE-001", differences=[_diff(clauses=("AS-EVT-001",))]),
        catalogue=KD_CATALOGUE,
    )
    status = {c.id: c.status for c in run.clauses}
    assert status == {
        "AS-LIFE-001": ClauseStatus.PASSED,
        "AS-EVT-001": ClauseStatus.FAILED,
        "AS-EVT-002": ClauseStatus.UNTESTED,
    }
    [evt] = [c for c in run.clauses if c.id == "AS-EVT-001"]
    assert evt.failed_by == ("lifecycle/a",)
    assert evt.cases == ("lifecycle/a",)


def test_failure_kind_is_kit_choice_only_when_every_difference_rests_on_a_choice() -> None:
    choice = case("lifecycle/a", "failed", "AS-LIFE-001", differences=[_diff(kit_defined=("KD-EVT-4",))])
    mixed = case(
        "lifecycle/b",
        "failed",
        "AS-LIFE-001",
        differences=[_diff(kit_defined=("KD-EVT-4",)), _diff()],
    )
    assert choice.failure_kind is FailureKind.KIT_CHOICE
    assert mixed.failure_kind is FailureKind.SPEC
    run = run_of(choice, catalogue=KD_CATALOGUE)
    assert (run.summary.spec_failures, run.summary.kit_choice_failures) == (0, 1)
    [clause] = [c for c in run.clauses if c.id == "AS-LIFE-001"]
    assert clause.failure_kind is FailureKind.KIT_CHOICE
    both = run_of(choice, mixed, catalogue=KD_CATALOGUE)
    assert (both.summary.spec_failures, both.summary.kit_choice_failures) == (1, 1)
    assert [c.failure_kind for c in both.clauses if c.id == "AS-LIFE-001"] == [FailureKind.SPEC]


def test_a_failure_kind_contradicting_the_differences_is_refused() -> None:
    with pytest.raises(ValidationError):
        case("lifecycle/a", "failed", "AS-LIFE-001", differences=[_diff()], failure_kind="kit-choice")


def test_a_missing_required_capability_fails_the_run() -> None:
    run = run_of(case("lifecycle/a", "passed", "AS-LIFE-001"), catalogue=KD_CATALOGUE)
    assert exit_code(run) is ExitCode.OK
    gated = run.with_capability_gate(CapabilityGate(required=("resume",), missing=("resume",)))
    assert exit_code(gated) is ExitCode.FAILED
