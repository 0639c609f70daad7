"""A late duplicate answer in the store profile is booked on the case whose request it answers.

The first connection is kept from case to case: a second answer to the last request of one case that
arrives while the next case starts must error the earlier case, and the next case runs again (on a
fresh implementation) and is judged on its own."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._report.results import CaseStatus, RunResult
from relavium_conformance._store.cases import load_store_cases
from relavium_conformance._store.runner import run_store_cases
from relavium_conformance._wire.adapters import Adapter

PROGRAM = Path(__file__).resolve().parents[2] / "programs" / "misbehaving_store.py"
VECTORS = [case for case in load_store_cases() if case.id.startswith("store-vectors/")]


def _run(*arguments: str) -> RunResult:
    def factory() -> Adapter:
        return resolve_adapter(f"stdio:{sys.executable} {PROGRAM} {' '.join(arguments)}", timeout=60.0)

    run, _hello = asyncio.run(run_store_cases(factory, VECTORS, timeout=60.0))
    return run


def test_a_late_duplicate_errors_the_case_that_caused_it_and_the_next_one_runs_again() -> None:
    assert len(VECTORS) == 3
    run = _run("late", "3")  # the third case's store.open meets the second case's duplicate answer
    statuses = [case.status for case in run.cases]
    assert statuses == [CaseStatus.PASSED, CaseStatus.ERRORED, CaseStatus.PASSED]
    blamed = run.cases[1]
    assert blamed.id == VECTORS[1].id
    assert blamed.reason is not None
    assert "after this case's last step" in blamed.reason
    assert "answer to no pending request" in blamed.reason


def test_without_misbehaviour_the_wrapped_store_passes_them_all() -> None:
    run = _run("late", "0")  # (no case is the 0th: a proof the wrapper itself answers soundly)
    assert [case.status for case in run.cases] == [CaseStatus.PASSED] * 3
