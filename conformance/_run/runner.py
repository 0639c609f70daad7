"""The runner: one adapter, a selection of cases, one :class:`RunResult`.

It opens the adapter (the ``hello`` handshake), runs each case in turn with its own session handle,
routes the implementation's callbacks to that case's world, and never lets one case's failure stop
the run: a crash, hang or malformed message makes that case ``errored`` and the adapter is restarted.
A vector case (``vectors.py``) calls the pure functions directly: no session, no callback, no snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from relavium_conformance._corpus.cases import AnyCase, VectorCase
from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._errors import AdapterError, KitError
from relavium_conformance._judge.observation import Observation
from relavium_conformance._report.results import (
    CaseResult,
    CaseStatus,
    ImplementationInfo,
    KitInfo,
    RunResult,
    Summary,
    one_line,
)
from relavium_conformance._run.case_world import CaseWorld
from relavium_conformance._run.execute import execute_case
from relavium_conformance._run.vectors import execute_vector_case
from relavium_conformance._version import REFERENCE_NAME
from relavium_conformance._wire.adapters import Adapter, InProcessAdapter, StdioAdapter, WirePoint
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = [
    "RunInterrupted",
    "RunOutcome",
    "SnapshotTexts",
    "run_cases",
    "run_cases_sync",
    "run_sync",
    "sigterm_cancels",
]


class SnapshotTexts(Mapping[str, str]):
    """Case id -> the text of its observed snapshot, written only when asked for.

    Most runs never read a snapshot's text (they compare the data, or none at all), and writing it
    (sorted, indented JSON) costs about as much as a small case's judging; so the data is kept and the
    text made on first access (then kept).  Pickles as its data (``-j N`` workers send it back)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any] | None] = {}  # None: the case could not run (text "")
        self._texts: dict[str, str] = {}

    def put(self, case_id: str, snapshot: dict[str, Any] | None) -> None:
        self._data[case_id] = snapshot
        self._texts.pop(case_id, None)

    def update(self, other: SnapshotTexts) -> None:
        for case_id, snapshot in other._data.items():
            self.put(case_id, snapshot)

    def reorder(self, case_ids: Sequence[str]) -> None:
        """List the snapshots in the order of ``case_ids`` (any others after them)."""
        order = {case_id: index for index, case_id in enumerate(case_ids)}
        self._data = dict(sorted(self._data.items(), key=lambda item: order.get(item[0], len(order))))

    def __getitem__(self, case_id: str) -> str:
        text = self._texts.get(case_id)
        if text is None:
            snapshot = self._data[case_id]
            text = (
                ""
                if snapshot is None
                else json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            )
            self._texts[case_id] = text
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getstate__(self) -> dict[str, Any]:
        return {"data": self._data}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._data, self._texts = state["data"], {}


@dataclass
class RunOutcome:
    run: RunResult
    hello: HelloResult | None
    observations: dict[str, Observation] = field(default_factory=dict)
    snapshots: SnapshotTexts = field(default_factory=SnapshotTexts)
    handshake_error: str | None = None
    #: Notes on processes the implementation left behind at the end of the run (the kit ended them).
    notes: list[str] = field(default_factory=list)


class _Router:
    """Routes each callback to the world of the case that owns the session handle."""

    def __init__(self) -> None:
        self.worlds: dict[str, CaseWorld] = {}

    def register(self, handle: str, world: CaseWorld | None) -> None:
        if world is None:
            self.worlds.pop(handle, None)
        else:
            self.worlds[handle] = world

    async def __call__(self, method: str, params: dict[str, Any]) -> Any:
        world = self.worlds.get(str(params.get("handle")))
        if world is None:
            raise RpcError(-32602, f"no live case owns handle {params.get('handle')!r}")
        return await world.callback(method, params)


class RunInterrupted(KitError):
    """The run was interrupted (Ctrl-C): ``outcome`` holds the cases that finished, marked interrupted."""

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__("the run was interrupted")
        self.outcome = outcome


@dataclass
class _Previous:
    """The last case that ended with the implementation still usable, and where the wire stood then."""

    position: int
    mark: WirePoint


async def run_cases(
    adapter: Adapter,
    cases: Sequence[AnyCase],
    *,
    timeout: float = 15.0,
    on_case_start: Callable[[str], None] | None = None,
    on_case_end: Callable[[CaseResult], None] | None = None,
    snapshots: bool | None = None,
    first_handle: int = 1,
    maxfail: int | None = None,
    stop: Callable[[Sequence[CaseResult]], bool] | None = None,
    clause_table: bool = True,
    handles: Sequence[int] | None = None,
) -> RunOutcome:
    """Run ``cases``; ``snapshots`` None compares stored snapshots only for the reference engine.
    Handles are ``case-<first_handle>``, ``case-<first_handle + 1>``, ... (unique per implementation),
    or ``case-<handles[i]>`` for the i-th case when ``handles`` numbers them (a ``-j`` worker's share).
    ``maxfail`` stops after that many failed or errored cases (the rest are not run, as pytest's).
    ``stop`` is asked after each case with the results that can no longer change (in-process all of
    them; over a wire all but the newest, which the next case may still turn errored) and ends the run
    there when it answers True (the rest are not run).  ``clause_table`` False leaves the run's
    ``clauses`` empty (a selftest reads only the case results; the table costs a model per catalogue
    clause, more than a small run's cases).
    Cancelled (Ctrl-C), it stops the implementation and raises :class:`RunInterrupted` with the
    results of the cases that finished."""
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    router = _Router()
    outcome = RunOutcome(run=None, hello=None)  # type: ignore[arg-type]
    results: list[CaseResult] = []
    interrupted = False
    pace = _Pace(timeout, snapshots, on_case_start, on_case_end, maxfail, stop)
    try:
        try:
            outcome.hello = await adapter.open(router)
        except AdapterError as exc:
            outcome.handshake_error = one_line(exc.reason)
        numbers = handles if handles is not None else range(first_handle, first_handle + len(cases))
        await _play_in_order(adapter, zip(cases, numbers, strict=False), outcome, router, results, pace)
    except asyncio.CancelledError:
        interrupted = True
    finally:
        await adapter.close()
    outcome.notes = adapter.take_leftovers()
    duration_ms = (time.perf_counter() - clock) * 1000
    outcome.run = _run_result(
        adapter, outcome.hello, results, clause_table, started_at, duration_ms, interrupted
    )
    if interrupted:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # the cancellation is answered: by this exception
        raise RunInterrupted(outcome)
    return outcome


@dataclass(frozen=True)
class _Pace:
    """How :func:`run_cases` plays its cases one after another: the options that are not the cases."""

    timeout: float
    snapshots: bool | None
    on_case_start: Callable[[str], None] | None
    on_case_end: Callable[[CaseResult], None] | None
    maxfail: int | None
    stop: Callable[[Sequence[CaseResult]], bool] | None


async def _play_in_order(
    adapter: Adapter,
    numbered: Iterable[tuple[AnyCase, int]],
    outcome: RunOutcome,
    router: _Router,
    results: list[CaseResult],
    pace: _Pace,
) -> None:
    """Play each case under its handle number, appending its result to ``results`` (kept as they are
    when cancelled); a breakage that belongs to the previous case is booked on it, and this one replays."""
    previous: _Previous | None = None
    for case, number in numbered:
        if pace.on_case_start:
            pace.on_case_start(case.id)
        play = _Play(adapter, outcome, router, pace.timeout, pace.snapshots, number)
        result = await play.run(case)
        if previous is not None and _belongs_before(play.broken_at, previous.mark):
            # the implementation broke on the previous case's account (a second answer to one of
            # its requests, or an exit after its last answer): that case errors, this one runs again
            results[previous.position] = _blamed(results[previous.position], result.reason or "")
            result = await play.run(case)
        elif result.status is not CaseStatus.ERRORED and not isinstance(case, VectorCase):
            result = await _late_breakage(adapter, result)
        previous = (
            _Previous(len(results), adapter.mark()) if result.status is not CaseStatus.ERRORED else None
        )
        results.append(result)
        if pace.on_case_end:
            pace.on_case_end(result)
        bad = sum(r.status in (CaseStatus.FAILED, CaseStatus.ERRORED) for r in results)
        if pace.maxfail is not None and bad >= pace.maxfail:
            return
        if pace.stop is not None and pace.stop(
            results if isinstance(adapter, InProcessAdapter) else results[:-1]
        ):
            return


def _run_result(
    adapter: Adapter,
    hello: HelloResult | None,
    results: list[CaseResult],
    clause_table: bool,
    started_at: datetime,
    duration_ms: float,
    interrupted: bool,
) -> RunResult:
    """The run's result: the implementation as its hello named it, the cases, and (``clause_table``)
    the clause table, which costs a model per catalogue clause."""
    implementation = ImplementationInfo(
        name=hello.implementation.name if hello else "unknown",
        adapter="stdio" if isinstance(adapter, StdioAdapter) else "in-process",  # the transport
        version=hello.implementation.version if hello else None,
        language=hello.implementation.language if hello else None,
        capabilities=tuple(hello.capabilities) if hello else (),
    )
    if clause_table:
        return RunResult.build(
            implementation=implementation,
            cases=results,
            catalogue=load_catalogue().clauses,
            started_at=started_at,
            duration_ms=duration_ms,
            interrupted=interrupted,
        )
    return RunResult(
        kit=KitInfo.current(),
        implementation=implementation,
        summary=Summary.of(results),
        cases=tuple(results),
        clauses=(),
        started_at=started_at,
        duration_ms=duration_ms,
        interrupted=interrupted,
    )


class _Play:
    """Runs one case; never raises for what the implementation does (that is the case's result)."""

    def __init__(
        self,
        adapter: Adapter,
        outcome: RunOutcome,
        router: _Router,
        timeout: float,
        snapshots: bool | None,
        number: int,
    ) -> None:
        self.adapter, self.outcome, self.router = adapter, outcome, router
        self.timeout, self.snapshots, self.number = timeout, snapshots, number
        self.broken_at: WirePoint | None = None

    async def run(self, case: AnyCase) -> CaseResult:
        hello, self.broken_at = self.outcome.hello, None
        if hello is None:
            return CaseResult.of(
                case,
                CaseStatus.ERRORED,
                reason=f"the implementation could not be started: {self.outcome.handshake_error}",
                handshake_failed=True,
            )
        try:
            if isinstance(case, VectorCase):
                return await execute_vector_case(case, self.adapter, hello, timeout=self.timeout)
            compare = (
                self.snapshots if self.snapshots is not None else hello.implementation.name == REFERENCE_NAME
            )
            result, observed, snapshot = await execute_case(
                case,
                self.adapter,
                hello,
                handle=f"case-{self.number}",
                register=self.router.register,
                timeout=self.timeout,
                compare_snapshot=compare,
            )
        except Exception as exc:  # a defect of the kit met on this case: the case errors, the run goes on
            return CaseResult.of(
                case,
                CaseStatus.ERRORED,
                reason=f"the kit failed on this case ({type(exc).__name__}: {exc}); please report it",
            )
        self.broken_at = observed.broken_at
        self.outcome.observations[case.id] = observed
        self.outcome.snapshots.put(case.id, snapshot)
        return result


def _belongs_before(broken_at: WirePoint | None, mark: WirePoint) -> bool:
    """Whether a breakage tied to request ``broken_at`` belongs to the case that ended at ``mark``."""
    return broken_at is not None and broken_at[0] == mark[0] and broken_at[1] <= mark[1]


def _blamed(result: CaseResult, reason: str) -> CaseResult:
    """``result`` turned errored: the implementation broke the protocol on its account after its steps."""
    document = result.model_dump()
    document.update(
        status=CaseStatus.ERRORED,
        reason=f"the implementation broke the protocol after this case's last step: {reason}",
        differences=(),
        stderr_tail=None,
        failure_kind=None,  # a failed case's kind goes with its differences
    )
    return CaseResult.model_validate(document)


async def _late_breakage(adapter: Adapter, result: CaseResult) -> CaseResult:
    """A case that ended well, checked once more after what the implementation already sent is read:
    a second answer or an exit that arrived with its last answer is this case's, not the next one's."""
    for _ in range(_LATE_READS):
        await asyncio.sleep(0)
    breakage = adapter.breakage()
    if breakage is None:
        return result
    with contextlib.suppress(Exception):
        await adapter.recover()
    return _blamed(result, breakage.reason)


_LATE_READS = 3  # event-loop turns that let already-received lines be read before a case is closed


T = TypeVar("T")


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, with the value handed back beside the main task, not as its result.

    At its end ``asyncio.run`` asks for the name of the SIGINT handler it installed; the failed enum
    lookup formats the handler, hence the main task, hence its result.  For a run's outcome (every case
    result and observation) that text cost a tenth of the run's CPU, for nothing: here the main task
    returns ``None``."""
    kept: list[T] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(_quiet_pipe_race)
        kept.append(await work)

    asyncio.run(main())
    return kept[0]


def _quiet_pipe_race(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: everything goes to asyncio's default handler but one race of
    asyncio's own subprocess pipes (CPython 3.11), where a pipe of a program that exited at once reports
    its end after the transport was already closed and its protocol raises ``AttributeError`` on
    ``None.close`` inside ``_call_connection_lost``.  Nothing of the kit's is lost there; the user would
    only see a traceback on stderr (issue 37: no asyncio noise)."""
    error = context.get("exception")
    handle = repr(context.get("handle", ""))
    if isinstance(error, AttributeError) and "'close'" in str(error) and "_call_connection_lost" in handle:
        return
    loop.default_exception_handler(context)


async def sigterm_cancels(work: Awaitable[T], seen: list[str]) -> T:
    """``await work``, SIGTERM cancelling it as Ctrl-C does under ``asyncio.run`` (a CI runner stops a
    job by SIGTERM: the run stops its implementation and reports what finished); the signal's name is
    appended to ``seen``.  Where the loop cannot take signal handlers (Windows, a thread), ``work`` alone."""
    import signal

    loop, task = asyncio.get_running_loop(), asyncio.current_task()

    def stop() -> None:
        seen.append("SIGTERM")
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, stop)
    except (NotImplementedError, RuntimeError, ValueError):
        return await work
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def run_cases_sync(adapter: Adapter, cases: Sequence[AnyCase], **options: Any) -> RunOutcome:
    return run_sync(run_cases(adapter, cases, **options))
