"""A broken implementation's run stops once every clause it breaks has a proving failure: the verdicts
(``caught``, ``proven``, the citing cases) are those of running every citing case."""

from __future__ import annotations

import asyncio

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases
from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS
from relavium_conformance._selftest.proofs import _citing, check_broken
from relavium_conformance._wire.adapters import InProcessAdapter


def test_runner_stop_ends_the_run_after_the_case_it_answers_true_for() -> None:
    cases = [c for c in load_cases() if c.id.startswith("lifecycle/")][:4]
    seen: list[int] = []

    def stop(results: object) -> bool:
        seen.append(len(results))  # type: ignore[arg-type]
        return len(results) == 2  # type: ignore[arg-type]

    outcome = asyncio.run(run_cases(InProcessAdapter("reference", ReferenceImplementation), cases, stop=stop))
    assert [c.id for c in outcome.run.cases] == [c.id for c in cases[:2]]
    assert seen == [1, 2]  # in-process every result is final at once


def test_stopping_once_proven_keeps_the_verdicts_of_every_case() -> None:
    cases = load_cases()
    chosen = [b for b in BROKEN_IMPLEMENTATIONS if len(_citing(cases, b.clauses)) >= 8][:3]
    assert len(chosen) == 3
    citing = {c.id: c for b in chosen for c in _citing(cases, b.clauses)}
    reference = asyncio.run(
        run_cases(InProcessAdapter("reference", ReferenceImplementation), list(citing.values()))
    ).run
    assert all(c.status is CaseStatus.PASSED for c in reference.cases)
    stopped = 0
    for broken in chosen:
        quick = asyncio.run(check_broken(broken, cases, reference, 10.0))
        full = asyncio.run(check_broken(broken, cases, reference, 10.0, every_case=True))
        assert (quick.caught, quick.proven, quick.cases) == (full.caught, full.proven, full.cases)
        assert quick.caught
        assert not full.not_run
        assert set(quick.failed) <= set(full.failed)
        assert set(quick.not_run) <= set(quick.cases) - set(quick.failed)
        if quick.not_run:
            stopped += 1
            assert "not run" in quick.explanation
    assert stopped, "no chosen break stopped early: the test shows nothing"
