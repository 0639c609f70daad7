"""The session-store profile's selftest: every broken store is caught by the cases citing its rule.

A broken store is **caught** when at least one store case citing one of its clauses fails or errors
against it, while the reference store of the same kind passes every one of those cases.  A break no
hand-written case catches gets a second judge: the generated programs (``_store/generation.py``) at the
selftest's fixed seed, whose shrunk failure is replayed as a store case against the break and the
reference alike (where Hypothesis, the 'strategies' extra, is installed).  The verdicts
share ``BrokenVerdict`` with the session profile, so ``proofs()`` feeds ``proven_by`` the same way.

The PostgreSQL breaks run (in-process, their replicas as processes of ``stores/serve.py``) only where
``RELAVIUM_PG_DSN`` names a server; elsewhere they are left out and the progress says so.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from relavium_conformance._reference.session_store_impl import ReferenceStoreImplementation, StoreKind
from relavium_conformance._reference.session_store_pg import DSN_VARIABLE
from relavium_conformance._report.results import CaseStatus, RunResult
from relavium_conformance._selftest.stores import BROKEN_STORES, BrokenStore
from relavium_conformance._selftest.stores.serve import serve_command
from relavium_conformance._selftest.verdicts import BrokenVerdict
from relavium_conformance._store.cases import AnyStoreCase, load_store_cases
from relavium_conformance._store.protocol import declaration_of
from relavium_conformance._store.runner import run_store_cases
from relavium_conformance._wire.adapters import Adapter, InProcessAdapter, StdioAdapter

__all__ = ["StoreSelftestReport", "check_broken_store", "run_store_selftest"]

PG_STDIO_SERVER = (sys.executable, "-m", "relavium_conformance", "stdio-server", "--store", "pg")
"""The PostgreSQL reference's replicas (what ``reference-pg-stdio`` runs)."""


@dataclass
class StoreSelftestReport:
    broken: list[BrokenVerdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(v.caught for v in self.broken)

    def proofs(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for verdict in self.broken:
            if verdict.caught:
                for clause in verdict.clauses:
                    out.setdefault(clause, []).append(verdict.name)
        return out


def _factory(name: str, make: Callable[[], ReferenceStoreImplementation]) -> Callable[[], Adapter]:
    def factory() -> Adapter:
        return InProcessAdapter(name, lambda _callback: make())

    return factory


def _replicas(name: str, command: list[str]) -> Callable[[], Adapter]:
    """Processes of one store for the replica cases (the PostgreSQL kind: reference and broken)."""

    def factory() -> Adapter:
        return StdioAdapter(name, command)

    return factory


def _pg_ready() -> bool:
    """The PostgreSQL breaks need a server: without ``RELAVIUM_PG_DSN`` they are left out, saying so."""
    return bool(os.environ.get(DSN_VARIABLE, "").strip())


def _citing(cases: Sequence[AnyStoreCase], clauses: Sequence[str]) -> tuple[AnyStoreCase, ...]:
    wanted = set(clauses)
    return tuple(c for c in cases if wanted & set(c.clauses))


async def check_broken_store(
    broken: BrokenStore, cases: Sequence[AnyStoreCase], references: dict[StoreKind, RunResult], timeout: float
) -> BrokenVerdict:
    citing = _citing(cases, broken.clauses)
    failed: tuple[str, ...] = ()
    proven: set[str] = set()
    if citing:
        replicas = (
            _replicas(f"broken:{broken.name}", serve_command(broken.name))
            if broken.kind == "pg" or broken.extra.get("processes")
            else None
        )
        run, _hello = await run_store_cases(
            _factory(f"broken:{broken.name}", broken.implementation),
            citing,
            timeout=timeout,
            replicas=replicas,
        )
        failures = [c for c in run.cases if c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)]
        failed = tuple(c.id for c in failures)
        proven = set(broken.clauses) & {clause for c in failures for clause in c.booked_clauses()}
    ids = {c.id for c in citing}
    reference_failed = tuple(
        c.id
        for c in references[broken.kind].cases
        if c.id in ids and c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)
    )
    verdict = BrokenVerdict(
        name=broken.name,
        rule=broken.rule,
        clauses=broken.clauses,
        cases=tuple(sorted(ids)),
        failed=failed,
        reference_failed=reference_failed,
        proven=tuple(sorted(proven)),
    )
    if verdict.caught or broken.kind == "pg":
        return verdict
    return await _by_generation(broken, verdict, timeout)


async def _by_generation(broken: BrokenStore, verdict: BrokenVerdict, timeout: float) -> BrokenVerdict:
    """A break no hand-written case catches: generated programs at the selftest's fixed seed, the
    shrunk failure replayed as a store case against the break and against the reference of its kind."""
    try:
        from relavium_conformance._store.generation import catch_by_generation
    except ModuleNotFoundError as exc:  # no Hypothesis (the 'strategies' extra): the corpus alone judges
        if exc.name != "hypothesis":
            raise
        return verdict
    factory = _factory(f"broken:{broken.name}", broken.implementation)
    declaration = declaration_of(tuple(broken.implementation().capabilities))
    found = await asyncio.to_thread(catch_by_generation, factory, declaration, clause=broken.clauses[0])
    if found is None:
        return verdict
    run, _hello = await run_store_cases(factory, [found.case], timeout=timeout)
    make = functools.partial(ReferenceStoreImplementation, broken.kind)
    reference, _hello = await run_store_cases(_factory(f"reference-{broken.kind}", make), [found.case])
    failures = [c for c in run.cases if c.is_failure]
    return replace(
        verdict,
        cases=(*verdict.cases, found.case.id),
        failed=(*verdict.failed, *(c.id for c in failures)),
        reference_failed=(*verdict.reference_failed, *(c.id for c in reference.cases if c.is_failure)),
        proven=tuple(
            sorted(
                set(verdict.proven)
                | (set(broken.clauses) & {k for c in failures for k in c.booked_clauses()})
            )
        ),
    )


async def run_store_selftest(
    *, timeout: float = 10.0, on_progress: Callable[[str], None] | None = None
) -> StoreSelftestReport:
    cases = load_store_cases()
    references: dict[StoreKind, RunResult] = {}
    kinds: tuple[StoreKind, ...] = ("sqlite", "ttl")
    for kind in kinds:
        make = functools.partial(ReferenceStoreImplementation, kind)
        run, _hello = await run_store_cases(_factory(f"reference-{kind}", make), cases, timeout=timeout)
        references[kind] = run
    breaks = [b for b in BROKEN_STORES if b.kind != "pg" or _pg_ready()]
    pg_clauses = {clause for b in breaks if b.kind == "pg" for clause in b.clauses}
    if pg_clauses:  # the PostgreSQL reference, on the cases its breaks are judged by
        make = functools.partial(ReferenceStoreImplementation, "pg")
        run, _hello = await run_store_cases(
            _factory("reference-pg", make),
            _citing(cases, sorted(pg_clauses)),
            timeout=timeout,
            replicas=_replicas("reference-pg", [*PG_STDIO_SERVER]),
        )
        references["pg"] = run
    report = StoreSelftestReport()
    if on_progress and len(breaks) < len(BROKEN_STORES):
        on_progress(f"skipped  the PostgreSQL store breaks: {DSN_VARIABLE} is not set")
    for broken in breaks:
        verdict = await check_broken_store(broken, cases, references, timeout)
        report.broken.append(verdict)
        if on_progress:
            word = "caught" if verdict.caught else "MISSED"
            on_progress(f"{word}  store {broken.name}: {verdict.explanation}")
    return report
