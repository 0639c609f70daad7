"""The session-store profile's runner: one implementation, the store cases, one :class:`RunResult`.

A probe connection answers ``hello`` (the store's declaration); every case then runs on connections
of its own (``_store/execute.py``), so one case's storage, clock and failures never reach the next.
Clauses are aggregated over the ``SS-`` catalogue only.

The first connection is kept from case to case, so what the implementation sends late on it (a second
answer to a request of one case) is booked on the case whose request it answers, not on the case that
meets it: that case errors, and the one that met it runs again.  Cancelled (Ctrl-C, or SIGTERM through
``sigterm_cancels``), the run stops the implementation and raises :class:`RunInterrupted` with the
cases that finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from relavium_conformance._run.runner import RunInterrupted, RunOutcome
from relavium_conformance._store.cases import AnyStoreCase
from relavium_conformance._store.execute import AdapterFactory, ConnectionPool, execute_store_case
from relavium_conformance._store.history_run import HISTORY_SCENARIOS
from relavium_conformance._store.replicas import REPLICA_SCENARIOS
from relavium_conformance._wire.adapters import Adapter, WirePoint
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = ["run_store_cases"]

_SCENARIOS = {**REPLICA_SCENARIOS, **HISTORY_SCENARIOS}
"""The scenarios beyond the kit's own: the replica cases' and the generated programs'."""

_LATE_READS = 3  # event-loop turns that let already-received lines be read before a case is closed


@dataclass(frozen=True)
class _Previous:
    """The last case that ended with the first connection usable: its place, that connection, and
    where the wire stood on it then."""

    position: int
    primary: Adapter
    mark: WirePoint


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
    """Run ``cases``; cancelled, stop the implementation and raise :class:`RunInterrupted` whose
    outcome holds the run of the cases that finished, marked interrupted."""
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    pool = ConnectionPool(factory, replicas)
    hello: HelloResult | None = None
    adapter_name = "unknown"
    results: list[CaseResult] = []
    interrupted = False
    try:
        failure = ""
        try:
            probe, _fresh = await pool.take()
            adapter_name, hello = probe.name, pool.hello
        except AdapterError as exc:
            failure = one_line(exc.reason)
        play = _Play(pool, hello, failure, timeout)
        for case in cases:
            if on_case_start:
                on_case_start(case.id)
            result = await play.next(case, results)
            results.append(result)
            if on_case_end:
                on_case_end(result)
            if maxfail is not None and sum(r.is_failure for r in results) >= maxfail:
                break  # (run -x, --maxfail N: the rest are not run)
    except asyncio.CancelledError:
        interrupted = True
    finally:
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
        interrupted=interrupted,
    )
    if interrupted:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # the cancellation is answered: by this exception
        raise RunInterrupted(RunOutcome(run=run, hello=hello))
    return run, hello


class _Play:
    """Plays the cases one after another, booking a late breakage of the first connection on the case
    it belongs to."""

    def __init__(self, pool: ConnectionPool, hello: HelloResult | None, failure: str, timeout: float) -> None:
        self.pool, self.hello, self.failure, self.timeout = pool, hello, failure, timeout
        self.previous: _Previous | None = None

    async def next(self, case: AnyStoreCase, results: list[CaseResult]) -> CaseResult:
        """The result of ``case``; ``results`` (those before it) may have their last usable case turned
        errored, when the implementation broke on that case's account."""
        if self.hello is None:
            return CaseResult(
                id=case.id,
                title=case.title,
                area=case.area,
                status=CaseStatus.ERRORED,
                clauses=case.clauses,
                reason=f"the implementation could not be started: {self.failure}",
                handshake_failed=True,
            )
        self.pool.dropped = None
        result = await execute_store_case(
            case, self.pool, self.hello, timeout=self.timeout, scenarios=_SCENARIOS
        )
        previous = self.previous
        if (
            previous is not None
            and result.status is CaseStatus.ERRORED
            and _belongs_before(self.pool, previous)
        ):
            # a second answer to one of the previous case's requests: that case errors, this one runs again
            results[previous.position] = _blamed(results[previous.position], result.reason or "")
            self.previous = None
            self.pool.dropped = None
            result = await execute_store_case(
                case, self.pool, self.hello, timeout=self.timeout, scenarios=_SCENARIOS
            )
        elif result.status is not CaseStatus.ERRORED:
            result = await _late_breakage(self.pool, result)
        primary = self.pool.primary
        if result.status is CaseStatus.ERRORED or primary is None:
            self.previous = None
        elif previous is None or (previous.primary, previous.mark) != (primary, primary.mark()):
            self.previous = _Previous(len(results), primary, primary.mark())
        # (a case that sent nothing on the first connection, a replica case, leaves the blame where it was)
        return result


def _belongs_before(pool: ConnectionPool, previous: _Previous) -> bool:
    """Whether the first connection, dropped broken by the case just run, broke on a request of the
    case that ended at ``previous``: the same connection, and a request sent no later than its end."""
    if pool.dropped is None:
        return False
    adapter, breakage = pool.dropped
    at = breakage.at
    return (
        adapter is previous.primary
        and at is not None
        and at[0] == previous.mark[0]
        and at[1] <= previous.mark[1]
    )


async def _late_breakage(pool: ConnectionPool, result: CaseResult) -> CaseResult:
    """A case that ended well, checked once more after what the implementation already sent on the first
    connection is read: a second answer that arrived with its last answers is this case's."""
    primary = pool.primary
    if primary is None:
        return result
    for _ in range(_LATE_READS):
        await asyncio.sleep(0)
    breakage = primary.breakage()
    if breakage is None:
        return result
    await pool.drop()  # (the next case starts the implementation anew)
    return _blamed(result, breakage.reason)


def _blamed(result: CaseResult, reason: str) -> CaseResult:
    """``result`` turned errored: the implementation broke the protocol on its account after its steps."""
    document = result.model_dump()
    document.update(
        status=CaseStatus.ERRORED,
        reason=one_line(f"the implementation broke the protocol after this case's last step: {reason}"),
        differences=(),
        failure_kind=None,  # a failed case's kind goes with its differences
    )
    return CaseResult.model_validate(document)
