"""``relavium-conformance run --profile session-store``: the store cases against one implementation.

The same options as the session profile (adapter, selection, reports, baseline, ``--with-proofs``);
the adapter is resolved once per connection, since a store case may open several (and restart them).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from relavium_conformance._cli.run_cases import refusing_other_implementations
from relavium_conformance._connect import replica_factory, resolve_adapter
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._report.baseline import compare, write_baseline
from relavium_conformance._report.results import ExitCode, exit_code
from relavium_conformance._report.writers import TerminalReporter, write_json, write_junit, write_markdown
from relavium_conformance._store.cases import load_store_cases
from relavium_conformance._store.runner import run_store_cases
from relavium_conformance._wire.adapters import Adapter
from relavium_conformance._wire.validation import ProtocolValidator

__all__ = ["run_store_profile"]


def run_store_profile(args: argparse.Namespace) -> int:
    all_cases = load_store_cases()
    cases = select_cases(all_cases, args.select)
    if args.list:
        for case in cases:
            print(f"{case.id}  [{', '.join(case.clauses)}]")
        return 0
    if not cases:
        print("relavium-conformance: no case matches the selection", file=sys.stderr)
        return int(ExitCode.NO_CASES)
    baseline = args.loaded_baseline
    validator = ProtocolValidator() if args.validate_protocol else None

    def factory() -> Adapter:
        adapter = resolve_adapter(args.adapter, validate=validator, timeout=args.timeout)
        return refusing_other_implementations(adapter, baseline, str(args.baseline))

    reporter = TerminalReporter(sys.stdout)
    run, _hello = asyncio.run(
        run_store_cases(
            factory,
            cases,
            timeout=args.timeout,
            replicas=replica_factory(args.adapter, validate=validator, timeout=args.timeout),
            on_case_start=reporter.on_case_start,
            on_case_end=reporter.on_case_end,
        )
    )
    if args.with_proofs:
        from relavium_conformance._selftest.stores.proofs import run_store_selftest

        run = run.with_proofs(asyncio.run(run_store_selftest()).proofs())
    if baseline is not None:
        run = run.with_baseline(
            compare(run, baseline, file=str(args.baseline), all_case_ids=[c.id for c in all_cases])
        )
    if args.json:
        write_json(run, args.json)
    if args.junit:
        write_junit(run, args.junit)
    if args.markdown:
        write_markdown(run, args.markdown)
    if args.write_baseline:
        write_baseline(run, args.write_baseline, previous=baseline, profile=args.profile)
    reporter.summary(run)
    if validator is not None:
        print(f"protocol: {validator.checked} messages validated")
    return int(exit_code(run))
