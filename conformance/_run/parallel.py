"""``-j N``: the same work on N implementation instances, each driven by its own kit process.

A run's cases are dealt into N shards like cards (case i to shard i mod N: the corpus keeps costly cases
together, the export vectors or the turn caps, and contiguous shards left one worker with most of them);
each shard runs in a worker process forked from this one
(so it starts with the kit already imported and the cases already loaded) against its own instance of
the implementation (its own subprocess over stdio, its own in-process engine), with the handles the
one-process run would have given (``case-<position>``), and sends its case results back as JSON. The
results are put back in case order: the same :class:`RunResult` as ``-j 1`` but for durations and
timestamps (``tests/conformance/run/test_parallel_run.py`` proves it). Both sides of the work (the kit's
judging and the implementation's answering) run in parallel, so N cores are used whatever the
transport.

Workers are forked: where ``fork`` is not available (Windows, macOS defaults aside), ``jobs`` falls back
to one process. The parent forks before it runs an event loop of its own work; each child clears the
running-loop mark it may have inherited before it starts its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from relavium_conformance._corpus.cases import AnyCase
from relavium_conformance._report.results import CaseResult
from relavium_conformance._wire.adapters import Adapter, parse_hello

__all__ = [
    "dealt",
    "fork_available",
    "map_in_processes",
    "map_in_processes_meanwhile",
    "run_cases_parallel",
    "shards",
]

T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M")

_FORKED: dict[str, Any] = {}  # what the parent hands its forked workers (read only in the child)


def fork_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def shards(count: int, jobs: int) -> list[range]:
    """``count`` positions in at most ``jobs`` contiguous, near-equal runs (none empty)."""
    jobs = max(1, min(jobs, count))
    size, extra = divmod(count, jobs)
    out, start = [], 0
    for index in range(jobs):
        end = start + size + (1 if index < extra else 0)
        out.append(range(start, end))
        start = end
    return out


def _child_start() -> None:
    asyncio.events._set_running_loop(None)  # a fork taken inside a running loop must not look inside one
    if _FORKED.get("stoppable"):
        signal.signal(signal.SIGTERM, _on_stop)


class _Stop:
    """A ``-j`` worker's stop request: the running shard's loop and task, and whether SIGTERM came."""

    requested = False
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None


def _on_stop(_signum: int, _frame: object) -> None:
    """A ``-j`` worker's SIGTERM, for its whole life: it stops the shard running (whose finished cases go
    back) or, between shards, the next one before it starts.  It never ends the process: a worker waiting
    for work holds the pool's queue lock, and one that died there would leave the others waiting on that
    lock for ever (the run then hung on its own shutdown)."""
    _Stop.requested = True
    loop, task = _Stop.loop, _Stop.task
    if loop is not None and task is not None:
        with contextlib.suppress(RuntimeError):  # (a loop that has just closed)
            loop.call_soon_threadsafe(task.cancel)


async def _stoppable(work: Awaitable[T]) -> T:
    """``await work`` in a ``-j`` worker, cancelled by :func:`_on_stop` (at once if a stop came first)."""
    _Stop.loop, _Stop.task = asyncio.get_running_loop(), asyncio.current_task()
    try:
        if _Stop.requested and _Stop.task is not None:
            _Stop.task.cancel()
        return await work
    finally:
        _Stop.loop = _Stop.task = None


def _call(index: int) -> Any:
    function: Callable[[Any], Any] = _FORKED["function"]
    return function(_FORKED["items"][index])


def map_in_processes(
    function: Callable[[T], R], items: Sequence[T], jobs: int, *, stoppable: bool = False
) -> list[R]:
    """``[function(item) for item in items]`` on up to ``jobs`` forked processes, in order.

    ``function`` and ``items`` reach the workers by the fork itself (no pickling); only the results
    travel back, so they must pickle. One job, one item or no fork: run here, in order.  ``stoppable``:
    each worker takes SIGTERM as a stop request for the work it runs under :func:`_stoppable`."""
    if jobs <= 1 or len(items) <= 1 or not fork_available():
        return [function(item) for item in items]
    _FORKED.update(function=function, items=items, stoppable=stoppable)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(jobs, len(items)), mp_context=context, initializer=_child_start) as pool:
            return list(pool.map(_call, range(len(items))))
    finally:
        _FORKED.clear()


async def map_in_processes_meanwhile(
    function: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    meanwhile: Callable[[], Awaitable[M]],
    *,
    order: Sequence[int] | None = None,
) -> tuple[list[R], M]:
    """:func:`map_in_processes`, while ``meanwhile()`` runs in this process's event loop (work that
    mostly waits, such as talking to subprocesses); the items are handed out in ``order`` (indexes;
    default item order), the results come back in item order.

    The workers are all forked before ``meanwhile`` starts (a fork while its threads or children are
    running would copy them half-way).  One job, one item or no fork: the items run here, in order,
    then ``meanwhile``."""
    if jobs <= 1 or len(items) <= 1 or not fork_available():
        return [function(item) for item in items], await meanwhile()
    indexes = list(order) if order is not None else list(range(len(items)))
    if sorted(indexes) != list(range(len(items))):
        raise ValueError("order must name every item once")
    _FORKED.update(function=function, items=items)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(jobs, len(items)), mp_context=context, initializer=_child_start) as pool:
            futures = {index: pool.submit(_call, index) for index in indexes}  # the first forks them all
            extra = await meanwhile()
            results = [await asyncio.wrap_future(futures[index]) for index in range(len(items))]
    finally:
        _FORKED.clear()
    return results, extra


def dealt(count: int, jobs: int) -> list[range]:
    """``count`` positions dealt to at most ``jobs`` shards: shard k holds k, k + jobs, ... (none empty)."""
    jobs = max(1, min(jobs, count))
    return [range(index, count, jobs) for index in range(jobs)]


def _run_shard(
    job: tuple[Callable[[], Adapter], Sequence[AnyCase], range, float, bool | None],
) -> dict[str, Any]:
    from relavium_conformance._run.runner import RunInterrupted, run_cases, run_sync, sigterm_cancels

    make_adapter, cases, positions, timeout, snapshots = job
    if multiprocessing.parent_process() is not None:  # a worker: its parent decides when to stop it
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a terminal's Ctrl-C reaches the whole group)
    adapter = make_adapter()
    handles = [position + 1 for position in positions]
    work = run_cases(adapter, cases, timeout=timeout, snapshots=snapshots, handles=handles)
    worker = bool(_FORKED.get("stoppable")) and multiprocessing.parent_process() is not None  # (a pool's)
    try:
        outcome = run_sync(_stoppable(work) if worker else sigterm_cancels(work, []))
    except RunInterrupted as stop:  # the parent's SIGTERM: the cases that finished go back
        outcome = stop.outcome
    return {
        "interrupted": outcome.run.interrupted,
        "cases": [result.model_dump(mode="json") for result in outcome.run.cases],
        "implementation": outcome.run.implementation.model_dump(mode="json"),
        "hello": outcome.hello.to_wire() if outcome.hello is not None else None,
        "handshake_error": outcome.handshake_error,
        "notes": outcome.notes,
        "snapshots": outcome.snapshots,
    }


def run_cases_parallel(
    make_adapter: Callable[[], Adapter],
    cases: Sequence[AnyCase],
    jobs: int,
    *,
    timeout: float = 15.0,
    snapshots: bool | None = None,
    on_case_end: Callable[[CaseResult], None] | None = None,
) -> Any:
    """Run ``cases`` on ``jobs`` instances of the implementation, each from its own call of
    ``make_adapter`` in its worker; returns the :class:`~relavium_conformance._run.runner.RunOutcome`
    a one-process run would (observations aside: they stay in the workers).

    A worker ignores SIGINT and stops its shard on SIGTERM (stopping its implementation, keeping the
    cases that finished): the caller's signal handlers send it SIGTERM when the run is to stop; the
    run is then built from every finished case and raised as
    :class:`~relavium_conformance._run.runner.RunInterrupted`."""
    from relavium_conformance._corpus.catalogue import load_catalogue
    from relavium_conformance._report.results import ImplementationInfo, RunResult
    from relavium_conformance._run.runner import RunInterrupted, RunOutcome

    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    parts = dealt(len(cases), jobs)
    work = [(make_adapter, tuple(cases[i] for i in part), part, timeout, snapshots) for part in parts]
    answers = map_in_processes(_run_shard, work, jobs, stoppable=True)
    placed: dict[int, CaseResult] = {}
    outcome = RunOutcome(run=None, hello=None)  # type: ignore[arg-type]
    for part, answer in zip(parts, answers, strict=True):
        for position, document in zip(part, answer["cases"], strict=not answer["interrupted"]):
            placed[position] = CaseResult.model_validate(document)
    results = [placed[position] for position in sorted(placed)]
    if on_case_end is not None:
        for result in results:
            on_case_end(result)
    for answer in answers:
        if outcome.hello is None and answer["hello"] is not None:
            outcome.hello = parse_hello(answer["hello"])
        outcome.handshake_error = outcome.handshake_error or answer["handshake_error"]
        outcome.notes.extend(answer["notes"])
        outcome.snapshots.update(answer["snapshots"])
    outcome.snapshots.reorder([result.id for result in results])  # as one process would list them
    outcome.run = RunResult.build(
        implementation=ImplementationInfo.model_validate(answers[0]["implementation"]),
        cases=results,
        catalogue=load_catalogue().clauses,
        started_at=started_at,
        duration_ms=(time.perf_counter() - clock) * 1000,
        interrupted=any(answer["interrupted"] for answer in answers),
    )
    if outcome.run.interrupted:
        raise RunInterrupted(outcome)
    return outcome
