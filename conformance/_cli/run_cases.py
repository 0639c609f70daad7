"""``relavium-conformance run`` once the cases are chosen: run them, gate, report.

Split from :mod:`relavium_conformance._cli.run` so that ``run --list`` (and the parser) does not import
the runner, the transports' tracing and validation, the baseline and the report writers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from relavium_conformance._cli._common import PROG
from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import AnyCase
from relavium_conformance._corpus.catalogue import CAPABILITIES
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.baseline import (
    Baseline,
    capability_gate,
    check_baseline_implementation,
    compare,
    write_baseline,
)
from relavium_conformance._report.provenance import run_context
from relavium_conformance._report.results import CapabilityGate, CaseResult, RunResult, exit_code
from relavium_conformance._report.writers import (
    TerminalReporter,
    write_github_summary,
    write_json,
    write_junit,
    write_markdown,
)
from relavium_conformance._run import parallel
from relavium_conformance._run.parallel import run_cases_parallel
from relavium_conformance._run.runner import RunInterrupted, RunOutcome, run_cases, run_sync, sigterm_cancels
from relavium_conformance._wire.adapters import Adapter, StdioAdapter
from relavium_conformance._wire.trace import Trace, TracingAdapter, chain_observers

__all__ = ["execute", "open_trace", "refusing_other_implementations"]

A = TypeVar("A", bound=Adapter)


def refusing_other_implementations(adapter: A, baseline: Baseline | None, source: str) -> A:
    """``adapter``, whose handshake refuses (:class:`KitUsageError`, before any case) an implementation
    other than the one ``baseline`` was written for: the name is known only once it has answered."""
    if baseline is None or baseline.implementation is None:
        return adapter
    opened = adapter.open

    async def open_checked(callback: Any) -> Any:
        hello = await opened(callback)
        check_baseline_implementation(baseline, hello.implementation.name, source=source)
        return hello

    adapter.open = open_checked  # type: ignore[method-assign]  # (the instance's: its class is kept)
    return adapter


def execute(args: argparse.Namespace, all_cases: tuple[AnyCase, ...], cases: tuple[AnyCase, ...]) -> int:
    """Run the chosen ``cases`` (of ``all_cases``) as the options say; the exit status."""
    _refuse_unknown_capabilities(args.require_capability)
    baseline = args.loaded_baseline
    validator = None
    if args.validate_protocol:  # (the protocol's schemas: only this option needs them)
        from relavium_conformance._wire.protocol_validation import ProtocolValidator

        validator = ProtocolValidator()
    with contextlib.ExitStack() as stack:
        trace = Trace(stack.enter_context(open_trace(args.trace))) if args.trace else None
        # the tracer sees each stdio message first; the validator (which may refuse it) after it
        adapter = refusing_other_implementations(
            resolve_adapter(args.adapter, validate=chain_observers(trace, validator), timeout=args.timeout),
            baseline,
            str(args.baseline),
        )
        if trace is not None and not isinstance(adapter, StdioAdapter):
            adapter = TracingAdapter(adapter, trace)
        reporter = TerminalReporter(
            sys.stdout, colour=args.color, verbose=args.verbose, titles={c.id: c.title for c in cases}
        )

        def on_case_start(case_id: str) -> None:
            if trace is not None:
                trace.case = case_id
            reporter.on_case_start(case_id)

        signals: list[str] = []  # the signal that stopped the run, when one did
        try:
            if args.jobs > 1:
                with _forwarding_signals(signals):
                    outcome = _parallel(args, cases, on_case_start, reporter.on_case_end)
            else:
                work = run_cases(
                    adapter,
                    cases,
                    timeout=args.timeout,
                    on_case_start=on_case_start,
                    on_case_end=reporter.on_case_end,
                    maxfail=1 if args.exitfirst else args.maxfail,
                )
                outcome = run_sync(sigterm_cancels(work, signals))
        except RunInterrupted as stop:
            outcome = stop.outcome
            outcome.run = outcome.run.stopped_by("SIGTERM" if "SIGTERM" in signals[:1] else "SIGINT")
    run, gate = _judged(args, outcome, all_cases, baseline)
    _write_reports(args, run, baseline)
    reporter.summary(run)
    if gate is not None and gate.missing:
        print(
            f"capabilities: {', '.join(gate.missing)} required ({', '.join(gate.sources)}) "
            "but not declared by the implementation",
            file=sys.stderr,
        )
    if validator is not None:
        print(f"protocol: {validator.checked} messages validated")
    if trace is not None:
        print(f"trace: {trace.count} messages written to {args.trace}")
    return int(exit_code(run))


def _refuse_unknown_capabilities(required: list[str]) -> None:
    """``--require-capability`` names only capabilities of the catalogue's vocabulary."""
    unknown = sorted(set(required) - set(CAPABILITIES))
    if unknown:
        raise KitUsageError(
            f"--require-capability: unknown capabilit{'ies' if len(unknown) > 1 else 'y'} "
            f"{', '.join(unknown)} (known: {', '.join(CAPABILITIES)})"
        )


def _judged(
    args: argparse.Namespace, outcome: RunOutcome, all_cases: tuple[AnyCase, ...], baseline: Baseline | None
) -> tuple[RunResult, CapabilityGate | None]:
    """The run's result with what the options add to it: its context, the proofs, the baseline's
    comparison and the capability gate (the last three never on an interrupted run's partial result)."""
    for note in outcome.notes:
        print(f"{PROG} run: warning: {note}", file=sys.stderr)
    run = outcome.run.with_context(run_context(args.adapter, args.select, shard=args.shard_info))
    if args.with_proofs and not run.interrupted:
        from relavium_conformance._selftest.proofs import run_selftest  # only --with-proofs needs it

        judged = {clause.id for clause in run.clauses if clause.cases}  # the clauses this run's cases judge
        selftest = run_selftest(include_misbehaviours=False, include_alternatives=False, clauses=judged)
        proofs = asyncio.run(selftest).proofs()
        run = run.with_proofs({clause: names for clause, names in proofs.items() if clause in judged})
    if baseline is not None and not run.interrupted:
        run = run.with_baseline(
            compare(run, baseline, file=str(args.baseline), all_case_ids=[c.id for c in all_cases])
        )
    gate = capability_gate(
        run,
        baseline=baseline,
        baseline_file=str(args.baseline),
        required=args.require_capability,
        require_all=CAPABILITIES if args.require_all else None,
    )
    if gate is not None:
        run = run.with_capability_gate(gate)
    return run, gate


def _write_reports(args: argparse.Namespace, run: RunResult, baseline: Baseline | None) -> None:
    """Every report file the options ask for (a new baseline only from a run that finished)."""
    if args.json:
        write_json(run, args.json)
    if args.junit:
        write_junit(run, args.junit)
    if args.markdown:
        write_markdown(run, args.markdown, full_results=str(args.json) if args.json else None)
    if args.github_summary:
        write_github_summary(run, full_results=str(args.json) if args.json else None)
    if args.write_baseline and not run.interrupted:
        write_baseline(run, args.write_baseline, previous=baseline, profile=args.profile)


@contextlib.contextmanager
def open_trace(path: Path) -> Iterator[TextIO]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stream = path.open("w", encoding="utf-8")
    except OSError as exc:
        raise KitUsageError(f"{path}: cannot write the trace file ({exc.strerror})") from None
    with stream:
        yield stream


@contextlib.contextmanager
def _forwarding_signals(seen: list[str]) -> Iterator[None]:
    """While ``-j N`` workers run: the first SIGINT or SIGTERM is noted in ``seen`` and sent on to every
    worker as SIGTERM (each stops its implementation and hands back the cases it finished); a second
    one stops at once (KeyboardInterrupt).  The workers ignore the terminal's own Ctrl-C."""
    import multiprocessing
    import signal

    def stop(signum: int, _frame: object) -> None:
        if seen:
            raise KeyboardInterrupt
        seen.append(signal.Signals(signum).name)
        for worker in multiprocessing.active_children():
            if worker.pid is not None:
                with contextlib.suppress(OSError):  # (one that has just ended)
                    os.kill(worker.pid, signal.SIGTERM)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _parallel(
    args: argparse.Namespace,
    cases: tuple[AnyCase, ...],
    on_case_start: Callable[[str], None],
    on_case_end: Callable[[CaseResult], None],
) -> RunOutcome:
    if not parallel.fork_available():  # (Windows): said, not done quietly
        print(
            f"{PROG} run: warning: -j {args.jobs}: this platform cannot fork worker processes; "
            "the cases run one after another in this process",
            file=sys.stderr,
        )

    def ended(result: CaseResult) -> None:
        on_case_start(result.id)
        on_case_end(result)

    outcome: RunOutcome = run_cases_parallel(
        lambda: refusing_other_implementations(
            resolve_adapter(args.adapter, timeout=args.timeout), args.loaded_baseline, str(args.baseline)
        ),
        cases,
        args.jobs,
        timeout=args.timeout,
        on_case_end=ended,
    )
    return outcome
