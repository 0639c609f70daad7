"""selftest: every broken implementation is caught; the runner survives every misbehaving program."""

from __future__ import annotations

import asyncio

import pytest

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.stdio_server import MISBEHAVIOURS
from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS
from relavium_conformance._selftest.compliant import COMPLIANT_ALTERNATIVES
from relavium_conformance._selftest.proofs import run_selftest

pytestmark = pytest.mark.xdist_group("whole-selftest")


@pytest.fixture
def report(whole_selftest):  # type: ignore[no-untyped-def]
    return whole_selftest


@pytest.mark.parametrize("name", [b.name for b in BROKEN_IMPLEMENTATIONS])
def test_broken_implementation_is_caught(report, name: str) -> None:  # type: ignore[no-untyped-def]
    [verdict] = [v for v in report.broken if v.name == name]
    assert verdict.caught, verdict.explanation


@pytest.mark.parametrize("mode", MISBEHAVIOURS)
def test_runner_survives_misbehaving_program(report, mode: str) -> None:  # type: ignore[no-untyped-def]
    [verdict] = [m for m in report.misbehaviours if m.mode == mode]
    assert verdict.ok, verdict.detail


def test_every_broken_rule_names_clauses_the_corpus_cites() -> None:
    cited = {clause for case in load_cases() for clause in case.clauses}
    for broken in BROKEN_IMPLEMENTATIONS:
        assert set(broken.clauses) & cited, broken.name


def test_selftest_command_exits_zero_and_reports_each_verdict(report) -> None:  # type: ignore[no-untyped-def]
    assert report.ok
    proofs = report.proofs()
    assert proofs, "no clause is proven by any broken implementation"


@pytest.mark.parametrize("name", [a.name for a in COMPLIANT_ALTERNATIVES])
def test_compliant_alternative_passes_every_case(report, name: str) -> None:  # type: ignore[no-untyped-def]
    [verdict] = [a for a in report.alternatives if a.name == name]
    assert verdict.accepted, verdict.explanation


def test_proofs_count_only_clauses_whose_own_cases_failed(report) -> None:  # type: ignore[no-untyped-def]
    for verdict in report.broken:
        assert set(verdict.proven) <= set(verdict.clauses), verdict.name


def test_a_selftest_narrowed_to_clauses_proves_them_as_the_whole_one_does(report) -> None:  # type: ignore[no-untyped-def]
    """``run --select ... --with-proofs`` judges only the breaks citing the run's clauses: same proofs."""
    wanted = {"AS-MSG-021", "AS-MSG-015", "AS-CAP-001"}
    narrowed = asyncio.run(
        run_selftest(include_misbehaviours=False, include_alternatives=False, clauses=wanted)
    )
    assert {b.name for b in narrowed.broken} == {
        b.name for b in BROKEN_IMPLEMENTATIONS if wanted & set(b.clauses)
    }
    whole = {clause: sorted(names) for clause, names in report.proofs().items() if clause in wanted}
    assert {clause: sorted(names) for clause, names in narrowed.proofs().items() if clause in wanted} == whole
    assert whole.keys() == wanted  # each of the three is proven at all, so the comparison has teeth
