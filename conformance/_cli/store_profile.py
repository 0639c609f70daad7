"""``relavium-conformance run --profile session-store``: the store cases against one implementation.

The options of the session profile that apply here are honoured: the adapter, ``--cases DIR`` (store
cases of a port's own, or those ``fuzz --profile session-store`` wrote), ``--select`` and ``--exclude``,
the reports (``--json``, ``--junit``, ``--markdown``, ``--github-summary``), the baseline,
``--with-proofs``, ``--validate-protocol``, ``--trace``, ``-v``, ``--color``, ``-x`` and ``--maxfail``.
Those that do not apply are refused by name before anything runs (:data:`NOT_FOR_STORES`).  The adapter is
resolved once per connection, since a store case may open several (and restart them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from relavium_conformance._cli._common import error_line
from relavium_conformance._cli.run_cases import open_trace, refusing_other_implementations
from relavium_conformance._connect import replica_factory, resolve_adapter
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.baseline import Baseline, compare, write_baseline
from relavium_conformance._report.results import ExitCode, RunResult, exit_code
from relavium_conformance._report.writers import (
    TerminalReporter,
    write_github_summary,
    write_json,
    write_junit,
    write_markdown,
)
from relavium_conformance._run.runner import RunInterrupted, run_sync, sigterm_cancels
from relavium_conformance._store.cases import load_store_cases, store_cases_under
from relavium_conformance._store.runner import run_store_cases
from relavium_conformance._wire.adapters import Adapter, StdioAdapter
from relavium_conformance._wire.protocol_validation import ProtocolValidator
from relavium_conformance._wire.trace import Trace, TracingAdapter, chain_observers

__all__ = ["NOT_FOR_STORES", "run_store_profile", "store_misuses"]

NOT_FOR_STORES: dict[str, str] = {
    "jobs": "-j/--jobs (the store cases share one store: they run in one process)",
    "require_capability": "--require-capability (the catalogue's capabilities are the session profile's)",
    "require_all": "--require-all (the catalogue's capabilities are the session profile's)",
    "shard": "--shard (the store cases are few: one job runs them all)",
}
"""``run`` options the store profile refuses, by the name of their ``argparse`` destination."""


def store_misuses(args: argparse.Namespace) -> list[str]:
    """The options given that the store profile cannot honour, each named with why."""
    given = {
        "jobs": args.jobs > 1,
        "require_capability": bool(args.require_capability),
        "require_all": args.require_all,
        "shard": args.shard is not None,
    }
    return [
        f"--profile session-store does not take {NOT_FOR_STORES[name]}"
        for name, used in given.items()
        if used
    ]


def run_store_profile(args: argparse.Namespace) -> int:
    from relavium_conformance._cli.selection import select_or_refuse
    from relavium_conformance._corpus.index import exclude_cases

    problems = store_misuses(args)
    if problems:
        raise KitUsageError("; ".join(problems))
    all_cases = load_store_cases()
    for folder in args.cases:  # a port's own store cases, or the ones fuzz --profile session-store wrote
        all_cases = (*all_cases, *store_cases_under(folder))
    ids = [case.id for case in all_cases]
    if len(set(ids)) != len(ids):
        raise KitUsageError(
            "--cases: a store case id is used twice: "
            + ", ".join(sorted({i for i in ids if ids.count(i) > 1}))
        )
    cases = exclude_cases(select_or_refuse(args, all_cases), args.exclude)
    if args.list:
        for case in cases:
            print(f"{case.id}  [{', '.join(case.clauses)}]")
        return 0 if cases else int(ExitCode.NO_CASES)
    if not cases:  # (every pattern matched: --exclude took them all)
        error_line("run", "no case matches the selection")
        return int(ExitCode.NO_CASES)
    baseline = args.loaded_baseline
    validator = ProtocolValidator() if args.validate_protocol else None
    with contextlib.ExitStack() as stack:
        trace = Trace(stack.enter_context(open_trace(args.trace))) if args.trace else None
        observe = chain_observers(trace, validator)

        def factory() -> Adapter:
            adapter = resolve_adapter(args.adapter, validate=observe, timeout=args.timeout)
            if trace is not None and not isinstance(adapter, StdioAdapter):
                adapter = TracingAdapter(adapter, trace)
            return refusing_other_implementations(adapter, baseline, str(args.baseline))

        reporter = TerminalReporter(
            sys.stdout, colour=args.color, verbose=args.verbose, titles={c.id: c.title for c in cases}
        )

        def on_case_start(case_id: str) -> None:
            if trace is not None:
                trace.case = case_id
            reporter.on_case_start(case_id)

        work = run_store_cases(
            factory,
            cases,
            timeout=args.timeout,
            replicas=replica_factory(args.adapter, validate=observe, timeout=args.timeout),
            on_case_start=on_case_start,
            on_case_end=reporter.on_case_end,
            maxfail=1 if args.exitfirst else args.maxfail,
        )
        signals: list[str] = []  # the signal that stopped the run, when one did
        try:
            run, _hello = run_sync(sigterm_cancels(work, signals))
        except RunInterrupted as stop:  # the implementation is stopped; the finished cases are reported
            run = stop.outcome.run.stopped_by("SIGTERM" if "SIGTERM" in signals[:1] else "SIGINT")
    if args.with_proofs and not run.interrupted:
        from relavium_conformance._selftest.stores.proofs import run_store_selftest

        run = run.with_proofs(asyncio.run(run_store_selftest()).proofs())
    if baseline is not None and not run.interrupted:
        run = run.with_baseline(
            compare(run, baseline, file=str(args.baseline), all_case_ids=[c.id for c in all_cases])
        )
    _write_reports(args, run, baseline)
    reporter.summary(run)
    if validator is not None:
        print(f"protocol: {validator.checked} messages validated")
    if trace is not None:
        print(f"trace: {trace.count} messages written to {args.trace}")
    return int(exit_code(run))


def _write_reports(args: argparse.Namespace, run: RunResult, baseline: Baseline | None) -> None:
    """The report files the options ask for, and the baseline to write."""
    full = str(args.json) if args.json else None
    if args.json:
        write_json(run, args.json)
    if args.junit:
        write_junit(run, args.junit)
    if args.markdown:
        write_markdown(run, args.markdown, full_results=full)
    if args.github_summary:
        write_github_summary(run, full_results=full)
    if args.write_baseline and not run.interrupted:
        write_baseline(run, args.write_baseline, previous=baseline, profile=args.profile)
