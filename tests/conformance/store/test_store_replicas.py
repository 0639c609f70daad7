"""The store profile's replica cases, the PostgreSQL adapters, and what a store without replicas reads.

The PostgreSQL runs need a server (``RELAVIUM_PG_DSN``; skipped without one, naming it).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relavium_conformance._connect import replica_factory, resolve_adapter
from relavium_conformance._report.results import CaseStatus, RunResult
from relavium_conformance._store.cases import StoreCase, load_store_cases
from relavium_conformance._store.replicas import chain_problems
from relavium_conformance._store.runner import run_store_cases

DSN = os.environ.get("RELAVIUM_PG_DSN", "").strip()
needs_server = pytest.mark.skipif(
    not DSN, reason="RELAVIUM_PG_DSN is not set: no PostgreSQL server to test on"
)
REPLICA_CASES = [c for c in load_store_cases() if c.id.startswith("store/replica")]


def _run(
    adapter: str, cases: list[StoreCase] | None = None, *, replicas: bool = True
) -> dict[str, CaseStatus]:
    chosen = cases if cases is not None else REPLICA_CASES
    run, _hello = asyncio.run(
        run_store_cases(
            lambda: resolve_adapter(adapter),
            chosen,
            timeout=60,
            replicas=replica_factory(adapter) if replicas else None,
        )
    )
    return {c.id: c.status for c in run.cases}


def test_there_are_at_least_six_replica_cases_each_citing_clauses() -> None:
    assert len(REPLICA_CASES) >= 6
    for case in REPLICA_CASES:
        assert "replicas" in case.needs
        assert case.clauses
        assert all(c.startswith("SS-") for c in case.clauses)


def test_chain_problems_names_a_broken_parent_and_a_repeated_id() -> None:
    good = [{"id": "a", "parentId": None}, {"id": "b", "parentId": "a"}]
    assert chain_problems(good) == []
    assert chain_problems([*good, {"id": "c", "parentId": "a"}])
    assert chain_problems([*good, {"id": "a", "parentId": "b"}])
    assert chain_problems([{"id": "a", "parentId": "x"}])


@pytest.mark.slow
@pytest.mark.xdist_group("sqlite-store-run")
def test_the_sqlite_store_passes_the_replica_cases(sqlite_store_run: RunResult) -> None:
    """Read from the SQLite reference's run of every store case (replica cases by processes)."""
    replicas = {case.id for case in REPLICA_CASES}
    statuses = {c.id: c.status for c in sqlite_store_run.cases if c.id in replicas}
    assert statuses.keys() == replicas
    assert statuses == dict.fromkeys(statuses, CaseStatus.PASSED)


def test_the_ttl_store_reads_every_replica_case_unsupported() -> None:
    statuses = _run("reference-ttl")
    assert set(statuses.values()) == {CaseStatus.UNSUPPORTED}


def test_an_in_process_adapter_without_a_process_twin_reads_them_unsupported_saying_why() -> None:
    run, _hello = asyncio.run(
        run_store_cases(lambda: resolve_adapter("reference"), REPLICA_CASES[:1], timeout=30, replicas=None)
    )
    [result] = run.cases
    assert result.status is CaseStatus.UNSUPPORTED
    assert "process" in (result.reason or "")


@pytest.mark.slow
@needs_server
def test_the_postgres_store_passes_every_store_case_replicas_included() -> None:
    statuses = _run("reference-pg", list(load_store_cases()))  # type: ignore[arg-type]
    failing = {k: v for k, v in statuses.items() if v not in (CaseStatus.PASSED, CaseStatus.UNSUPPORTED)}
    assert not failing
    assert (
        sum(1 for k, v in statuses.items() if k.startswith("store/replica") and v is CaseStatus.PASSED) >= 6
    )


def _cli(adapter: str, dsn: str | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RELAVIUM_PG_DSN"}
    if dsn is not None:
        env["RELAVIUM_PG_DSN"] = dsn
    command = [
        sys.executable,
        "-m",
        "relavium_conformance",
        "run",
        "--profile",
        "session-store",
        "--adapter",
        adapter,
        "--select",
        "store/durable-restart",
    ]
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("adapter", ["reference-pg", "reference-pg-stdio"])
@pytest.mark.parametrize(
    "dsn",
    [
        None,
        "host=127.0.0.1 port=1 user=u password=hunter2 connect_timeout=2",
        "postgresql://u:hunter2@127.0.0.1:1/x",
    ],
    ids=["unset", "unreachable", "unreachable-uri"],
)
def test_a_missing_or_unreachable_dsn_exits_3_naming_it_with_the_password_redacted(
    adapter: str, dsn: str | None, tmp_path: Path
) -> None:
    done = _cli(adapter, dsn, tmp_path)
    text = done.stdout + done.stderr
    assert done.returncode == 3, text
    assert "RELAVIUM_PG_DSN" in text
    assert "hunter2" not in text
    assert "Traceback" not in text
