"""``-j N`` gives the results of ``-j 1``: same cases, same order, same statuses, reasons, differences and
clause verdicts; only durations and timestamps differ.  No timing is asserted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._cli import main
from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._run.parallel import dealt, map_in_processes, run_cases_parallel, shards
from relavium_conformance._run.runner import run_cases

VOLATILE = {"duration_ms", "started_at", "finished_at", "stderr_tail"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _request_id(k, _stable(v)) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _request_id(key: str, value: Any) -> Any:
    """A host record's ``requestId`` is ``<session id>/request-<n>``; an engine that numbers its sessions
    per process (a broken one of the selftest does) gives a different session part when the cases are
    dealt to other processes, and a difference quotes the raw record.  The request's own number, every
    verdict, reason and path must still agree."""
    if key == "requestId" and isinstance(value, str) and "/" in value:
        return "<session>/" + value.rsplit("/", 1)[1]
    return value


def _one_process(spec: str, cases: Any) -> dict[str, Any]:
    outcome = asyncio.run(run_cases(resolve_adapter(spec), cases))
    return {"run": _stable(outcome.run.model_dump(mode="json")), "snapshots": outcome.snapshots}


@pytest.mark.parametrize(
    ("spec", "patterns", "jobs"),
    [
        ("reference", ["lifecycle", "persistence", "vectors/*"], 3),
        ("broken:no-hard-cap", ["AS-CAP-*"], 2),  # failures, reasons and differences travel back intact
        ("reference-stdio", ["memory", "events"], 2),
    ],
)
def test_jobs_give_the_results_of_one_process(spec: str, patterns: list[str], jobs: int) -> None:
    cases = select_cases(load_cases(), patterns)
    assert len(cases) > jobs
    expected = _one_process(spec, cases)
    parallel = run_cases_parallel(lambda: resolve_adapter(spec), cases, jobs)
    assert _stable(parallel.run.model_dump(mode="json")) == expected["run"]
    assert parallel.snapshots == expected["snapshots"]
    if spec.startswith("broken:"):
        assert parallel.run.summary.failed > 0


def test_run_dash_j_reports_what_one_process_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["run", "--select", "context", "--select", "commands", "--json", str(one)]) == 0
    assert main(["run", "--select", "context", "--select", "commands", "-j", "2", "--json", str(two)]) == 0
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in (one, two)]
    assert _stable(documents[0]) == _stable(documents[1])
    capsys.readouterr()


def test_jobs_refuse_what_needs_one_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-j", "2", "--exitfirst"]) == 2
    assert "-j/--jobs above 1 cannot be combined with --exitfirst" in capsys.readouterr().err


def test_shards_cover_every_position_once_in_order() -> None:
    for count in (1, 2, 5, 188):
        for jobs in (1, 2, 3, 8, 500):
            parts = shards(count, jobs)
            assert [i for part in parts for i in part] == list(range(count))
            assert all(len(part) for part in parts)
            assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_dealt_shards_cover_every_position_once() -> None:
    for count in (1, 2, 5, 188):
        for jobs in (1, 2, 3, 8, 500):
            parts = dealt(count, jobs)
            assert sorted(i for part in parts for i in part) == list(range(count))
            assert all(len(part) for part in parts)
            assert max(map(len, parts)) - min(map(len, parts)) <= 1
            assert all(list(part) == sorted(part) for part in parts)  # each shard in case order


def _square(n: int) -> tuple[int, int]:
    import os

    return n * n, os.getpid()


def test_map_in_processes_keeps_order_and_uses_other_processes() -> None:
    import os

    answers = map_in_processes(_square, list(range(9)), 3)
    assert [value for value, _ in answers] == [n * n for n in range(9)]
    assert os.getpid() not in {pid for _, pid in answers}


def _quick_or_held(item: tuple[str, str]) -> str:
    """Item ``quick`` returns at once; item ``held`` waits, under the workers' stop handling, until a
    SIGTERM stops it (its mark file says it is waiting)."""
    from relavium_conformance._run.parallel import _stoppable
    from relavium_conformance._run.runner import run_sync

    kind, mark = item
    if kind == "quick":
        return "quick"

    async def held() -> str:
        Path(mark).write_text("waiting", encoding="utf-8")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "stopped"
        return "never"

    return run_sync(_stoppable(held()))


def test_a_stop_sent_to_every_worker_while_one_is_idle_ends_the_map_with_every_result(tmp_path: Path) -> None:
    """``run -j N`` forwards SIGTERM to every worker; one whose shard is over waits for work holding the
    pool's queue lock.  Had it died there, the worker still running would stop, come back for work and
    wait on that lock for ever, and the pool's shutdown with it (seen once in a full test run)."""
    import os
    import signal
    import threading
    import time

    mark = tmp_path / "held"
    answers: list[Any] = []
    items = [("quick", str(mark)), ("held", str(mark))]
    mapping = threading.Thread(
        target=lambda: answers.append(map_in_processes(_quick_or_held, items, 2, stoppable=True))
    )
    mapping.start()
    deadline = time.monotonic() + 60  # a bound on a broken pool, not a verdict on speed
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert mark.exists(), "the held item never started"
    time.sleep(0.3)  # the quick item's worker is back waiting for work (no verdict rests on this pause)
    import multiprocessing

    for worker in multiprocessing.active_children():
        os.kill(worker.pid or 0, signal.SIGTERM)
    mapping.join(timeout=60)
    assert not mapping.is_alive(), "the map never ended"
    assert answers == [["quick", "stopped"]]


def test_selftest_jobs_give_the_verdicts_of_one_process() -> None:
    """``selftest -j N`` judges each broken implementation in a forked process: the same verdicts."""
    from relavium_conformance._reference.impl import ReferenceImplementation
    from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS
    from relavium_conformance._selftest.proofs import check_broken
    from relavium_conformance._wire.adapters import InProcessAdapter

    cases = load_cases()
    chosen = [b for b in BROKEN_IMPLEMENTATIONS if b.clauses[0].startswith(("AS-CAP", "AS-CTX"))][:4]
    assert len(chosen) >= 2
    reference = asyncio.run(run_cases(InProcessAdapter("reference", ReferenceImplementation), cases)).run

    def judge(broken: Any) -> Any:
        return asyncio.run(check_broken(broken, cases, reference, 10.0))

    assert map_in_processes(judge, chosen, 2) == [judge(b) for b in chosen]


@pytest.mark.slow
def test_selftest_jobs_run_the_later_checks_each_in_a_process_with_the_same_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checks after the broken implementations (compliant alternatives, the store profile's
    selftest, misbehaving programs) give the same report, in the same order, with ``jobs=2``."""
    from relavium_conformance._reference import stdio_server
    from relavium_conformance._selftest import proofs
    from relavium_conformance._selftest.stores import proofs as store_proofs

    monkeypatch.setattr(proofs, "BROKEN_IMPLEMENTATIONS", ())
    # three broken stores keep the store item's order and verdicts in view; every one is judged elsewhere
    # (tests/conformance/store/test_store_profile.py), twice here would cost some 40 CPU-seconds
    few = tuple(b for b in store_proofs.BROKEN_STORES if b.kind == "sqlite")[:3]
    monkeypatch.setattr(store_proofs, "BROKEN_STORES", few)
    monkeypatch.setattr(proofs, "COMPLIANT_ALTERNATIVES", proofs.COMPLIANT_ALTERNATIVES[:1])
    monkeypatch.setattr(stdio_server, "MISBEHAVIOURS", ("crash", "stderr-noise"))
    lines: dict[int, list[str]] = {1: [], 2: []}
    reports = {
        jobs: asyncio.run(proofs.run_selftest(jobs=jobs, on_progress=lines[jobs].append)) for jobs in (1, 2)
    }
    assert reports[2] == reports[1]
    assert lines[2] == lines[1]
    assert [m.mode for m in reports[2].misbehaviours] == ["crash", "stderr-noise"]
    assert len(reports[2].alternatives) == 1
    assert [b.name for b in reports[2].broken] == [b.name for b in few]  # the store profile's broken stores
    assert reports[2].ok
