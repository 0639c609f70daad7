"""The session-store profile's runner: one implementation, the store cases, one :class:`RunResult`.

A probe connection answers ``hello`` (the store's declaration); every case then runs on connections
of its own (``_store/execute.py``), so one case's storage, clock and failures never reach the next.
Clauses are aggregated over the ``SS-`` catalogue only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._errors import AdapterError
from relavium_conformance._report.results import (
    CaseResult,
    CaseStatus,
    ImplementationInfo,
    RunResult,
    one_line,
)
from relavium_conformance._store.cases import AnyStoreCase
from relavium_conformance._store.execute import AdapterFactory, ConnectionPool, execute_store_case
from relavium_conformance._store.history_run import HISTORY_SCENARIOS
from relavium_conformance._store.replicas import REPLICA_SCENARIOS
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = ["run_store_cases"]

_SCENARIOS = {**REPLICA_SCENARIOS, **HISTORY_SCENARIOS}
"""The scenarios beyond the kit's own: the replica cases' and the generated programs'."""


async def run_store_cases(
    factory: AdapterFactory,
    cases: Sequence[AnyStoreCase],
    *,
    timeout: float = 15.0,
    replicas: AdapterFactory | None = None,
    on_case_start: Callable[[str], None] | None = None,
    on_case_end: Callable[[CaseResult], None] | None = None,
    maxfail: int | None = None,
) -> tuple[RunResult, HelloResult | None]:
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    pool = ConnectionPool(factory, replicas)
    hello: HelloResult | None = None
    failure = ""
    adapter_name = "unknown"
    try:
        probe, _fresh = await pool.take()
        adapter_name, hello = probe.name, pool.hello
    except AdapterError as exc:
        failure = one_line(exc.reason)
    results: list[CaseResult] = []
    for case in cases:
        if on_case_start:
            on_case_start(case.id)
        if hello is None:
            result = CaseResult(
                id=case.id,
                title=case.title,
                area=case.area,
                status=CaseStatus.ERRORED,
                clauses=case.clauses,
                reason=f"the implementation could not be started: {failure}",
                handshake_failed=True,
            )
        else:
            result = await execute_store_case(case, pool, hello, timeout=timeout, scenarios=_SCENARIOS)
        results.append(result)
        if on_case_end:
            on_case_end(result)
        if maxfail is not None and sum(r.is_failure for r in results) >= maxfail:
            break  # (run -x, --maxfail N: the rest are not run)
    await pool.drop()
    implementation = ImplementationInfo(
        name=hello.implementation.name if hello else "unknown",
        adapter=adapter_name,
        version=hello.implementation.version if hello else None,
        language=hello.implementation.language if hello else None,
        capabilities=tuple(hello.capabilities) if hello else (),
    )
    run = RunResult.build(
        implementation=implementation,
        cases=results,
        catalogue=[c for c in load_catalogue().clauses if c.id.startswith("SS-")],
        started_at=started_at,
        duration_ms=(time.perf_counter() - clock) * 1000,
    )
    return run, hello
