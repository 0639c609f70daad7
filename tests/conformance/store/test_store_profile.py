"""The session-store profile: cases cite the catalogue, the reference stores pass, every break is caught."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import pytest

from relavium_conformance._connect import replica_factory, resolve_adapter
from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._report.results import CaseStatus, RunResult
from relavium_conformance._selftest.stores import BROKEN_STORES
from relavium_conformance._store.cases import StoreCase, load_store_cases
from relavium_conformance._store.protocol import declaration_of
from relavium_conformance._store.runner import run_store_cases
from relavium_conformance._wire.adapters import Adapter

ONLY_WITHOUT_PLACEMENTS = {"store/placement-ignored-without-declaration"}


def _run(adapter: str, cases: tuple[object, ...] | None = None) -> RunResult:
    def factory() -> Adapter:
        return resolve_adapter(adapter, timeout=60.0)

    replicas = replica_factory(adapter, timeout=60.0)  # the replica cases' processes
    run, _hello = asyncio.run(
        run_store_cases(factory, cases or load_store_cases(), timeout=60.0, replicas=replicas)  # type: ignore[arg-type]
    )
    return run


def _statuses(run: RunResult) -> dict[str, CaseStatus]:
    return {case.id: case.status for case in run.cases}


def test_every_testable_and_kit_defined_store_clause_has_a_case() -> None:
    catalogue = {c.id: c for c in load_catalogue().clauses}
    cited = {clause for case in load_store_cases() for clause in case.clauses}
    assert cited <= set(catalogue)
    wanted = {
        i for i, c in catalogue.items() if i.startswith("SS-") and c.status in ("testable", "kit-defined")
    }
    assert wanted <= cited
    assert all(catalogue[i].status in ("testable", "kit-defined") for i in cited)


def test_declaration_reads_absent_durability_as_process_local() -> None:
    assert declaration_of(("session-store",)).durability == "process-local"
    assert declaration_of(("session-store", "store:durable")).durability == "durable"
    assert declaration_of(("session-store", "store:durable", "store:process-local")).problems()
    assert declaration_of(("session-store",)).placements is None


@pytest.mark.xdist_group("sqlite-store-run")
def test_the_sqlite_store_passes_every_case(sqlite_store_run: RunResult) -> None:
    _passes_every_case(sqlite_store_run)


@pytest.mark.slow
def test_the_sqlite_store_passes_every_case_over_stdio() -> None:
    _passes_every_case(_run("reference-stdio"))


def _passes_every_case(run: RunResult) -> None:
    statuses = _statuses(run)
    assert {i for i, s in statuses.items() if s is not CaseStatus.PASSED} == ONLY_WITHOUT_PLACEMENTS
    assert statuses.keys() - ONLY_WITHOUT_PLACEMENTS
    judged = {c.id for c in load_catalogue().clauses if c.status in ("testable", "kit-defined")}
    clauses = {c.id: c.status for c in run.clauses if c.id in judged}
    assert len(clauses) == 79
    not_passed = {i: s for i, s in clauses.items() if s != "passed"}
    assert not_passed == {"SS-PLACE-009": "unsupported"}, not_passed


def test_the_ttl_store_passes_everything_it_declares() -> None:
    statuses = _statuses(_run("reference-ttl"))
    assert not [i for i, s in statuses.items() if s in (CaseStatus.FAILED, CaseStatus.ERRORED)]
    assert statuses["store/placement-ignored-without-declaration"] is CaseStatus.PASSED
    assert statuses["store/pin-survives-idle"] is CaseStatus.PASSED
    assert statuses["store/durable-restart"] is CaseStatus.UNSUPPORTED


@pytest.mark.xdist_group("whole-selftest")
def test_every_broken_store_is_caught_and_every_store_clause_is_proven(whole_selftest: Any) -> None:
    """Read from the whole selftest's report (its store item is ``run_store_selftest()``)."""
    names = {b.name for b in BROKEN_STORES}
    broken = [v for v in whole_selftest.broken if v.name in names]
    missed = [v.name for v in broken if not v.caught]
    assert not missed
    runnable = [b for b in BROKEN_STORES if b.kind != "pg" or os.environ.get("RELAVIUM_PG_DSN", "").strip()]
    assert sorted(v.name for v in broken) == sorted(b.name for b in runnable)  # PostgreSQL's need a server
    proven = {clause for v in broken if v.caught for clause in v.clauses}  # as StoreSelftestReport.proofs
    wanted = {
        c.id
        for c in load_catalogue().clauses
        if c.id.startswith("SS-") and c.status in ("testable", "kit-defined")
    }
    assert wanted <= proven, sorted(wanted - proven)


def _race(rounds: int, connections: int) -> Callable[[], StoreCase]:
    def make() -> StoreCase:
        return StoreCase(
            id="store/register-race-processes",
            title="register raced from two processes",
            clauses=("SS-REG-003", "SS-REG-004"),
            needs=("ownership", "durable"),
            scenario={"kind": "register-race", "connections": connections, "racers": 2, "rounds": rounds},
        )

    return make


@pytest.mark.slow
def test_register_raced_from_two_processes_200_times_has_one_winner_read_back_by_the_loser() -> None:
    """Two processes of the reference stdio server over one SQLite file; 200 fresh ids, each registered
    by both at once (the kit sends both requests together); each caller reads the owner back."""
    case = _race(200, 2)()
    run = _run("reference-stdio", (case,))
    [result] = run.cases
    assert result.status is CaseStatus.PASSED, result.reason


def test_the_race_scenario_catches_a_read_then_write_register() -> None:
    [broken] = [b for b in BROKEN_STORES if b.name == "register-read-then-write"]
    cases = [c for c in load_store_cases() if c.id == "store/register-two-instances"]
    from relavium_conformance._wire.adapters import InProcessAdapter

    def factory() -> Adapter:
        return InProcessAdapter("broken", lambda _cb: broken.implementation())

    run, _hello = asyncio.run(run_store_cases(factory, cases))
    assert run.cases[0].status is CaseStatus.FAILED


def test_the_worked_minimal_store_adapter_passes_what_it_declares() -> None:
    import sys
    from pathlib import Path

    program = Path(__file__).resolve().parents[3] / "docs" / "examples" / "minimal-store-adapter.py"
    statuses = _statuses(_run(f"stdio:{sys.executable} {program}"))
    assert not [i for i, s in statuses.items() if s in (CaseStatus.FAILED, CaseStatus.ERRORED)]
    assert sum(s is CaseStatus.PASSED for s in statuses.values()) == 22
