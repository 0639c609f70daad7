"""``relavium-conformance fuzz --profile session-store``: generated store programs against one store.

The store's declaration (``hello``) decides what is generated; a failure is shrunk, written as a store
case under ``--write DIR``, and replayed at once through the store runner, so the command says whether
``run --profile session-store --cases DIR`` fails on it too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from relavium_conformance._connect import adapter_alias, replica_factory, resolve_adapter
from relavium_conformance._errors import AdapterError, KitUsageError
from relavium_conformance._report.results import ExitCode
from relavium_conformance._report.writers import write_json, write_junit, write_markdown
from relavium_conformance._store.protocol import StoreDeclaration, declaration_of
from relavium_conformance._wire.adapters import Adapter

__all__ = ["fuzz_store_command"]


async def _declaration(adapter: Adapter) -> tuple[StoreDeclaration, str]:
    async def no_callbacks(method: str, params: dict[str, Any]) -> Any:
        raise KitUsageError(f"a store makes no callback ({method})")

    try:
        hello = await adapter.open(no_callbacks)
    finally:
        await adapter.close()
    return declaration_of(tuple(hello.capabilities)), hello.implementation.name


def fuzz_store_command(args: argparse.Namespace, examples: int) -> int:
    try:
        from relavium_conformance._store.generation import AREAS, case_yaml_for, fuzz_store
    except ModuleNotFoundError as exc:  # the 'strategies' extra is not installed
        if exc.name != "hypothesis":
            raise
        raise KitUsageError(
            "fuzz needs Hypothesis, which is not installed: pip install 'relavium-conformance[strategies]'"
        ) from None
    if args.area is not None and args.area not in AREAS:
        raise KitUsageError(f"--area {args.area}: the store areas are {', '.join(AREAS)}")

    def factory() -> Adapter:
        return resolve_adapter(args.adapter, timeout=args.timeout)

    try:
        declaration, name = asyncio.run(_declaration(factory()))
    except AdapterError as exc:
        print(
            f"relavium-conformance fuzz: the implementation could not be started: {exc.reason}",
            file=sys.stderr,
        )
        return int(ExitCode.NOT_STARTED)
    if not declaration.profile:
        print(f"relavium-conformance fuzz: {name} does not declare session-store", file=sys.stderr)
        return int(ExitCode.NO_CASES)
    replicas = None
    if args.processes:
        replicas = replica_factory(args.adapter, timeout=args.timeout)
        if replicas is None or "replicas" not in declaration.faces:
            raise KitUsageError(
                "--processes needs a store that declares store:replicas and an adapter that names a way to "
                "start its processes (a stdio: adapter, or a reference adapter's -stdio twin)"
            )

    def progress(done: int, total: int, seconds: float) -> None:
        rate = done / seconds if seconds > 0 else 0.0
        print(f"fuzz: {done}/{total} examples, {seconds:.1f} s ({rate:.1f}/s)", file=sys.stderr, flush=True)

    outcome = fuzz_store(
        factory,
        declaration,
        examples=examples,
        seed=args.seed,
        area=args.area,
        replicas=replicas,
        timeout=args.timeout,
        time_budget=args.time_budget,
        on_progress=progress,
    )
    rate = outcome.examples / outcome.seconds if outcome.seconds > 0 else 0.0
    print(
        f"{outcome.examples} generated store programs played against {name} ({args.adapter}) in "
        f"{outcome.seconds:.1f} s ({rate:.1f}/s)"
        + (" (the time budget ran out)" if outcome.out_of_time else "")
    )
    if outcome.failure is None:
        print("no failure found")
        return 0
    text = case_yaml_for(outcome, declaration, args.seed, f"{name} ({adapter_alias(args.adapter)})")
    case_id = next(line for line in text.splitlines() if line.startswith("id: "))[4:].strip()
    path = args.write / f"{case_id.split('/', 1)[1]}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"FAILED {case_id}: {outcome.message}")
    for line in outcome.history[:30]:
        print(f"    {line}")
    return _replay(args, factory, replicas, path)


def _replay(args: argparse.Namespace, factory: Any, replicas: Any, path: Any) -> int:
    """Run the written case as ``run --profile session-store --cases DIR`` would, and report it."""
    from relavium_conformance._store.cases import store_cases_under
    from relavium_conformance._store.runner import run_store_cases

    [case] = [c for c in store_cases_under(path.parent) if path.stem == c.id.split("/", 1)[1]]
    run, _hello = asyncio.run(run_store_cases(factory, [case], timeout=args.timeout, replicas=replicas))
    [result] = run.cases
    print(
        f"shrunk case written to {path}; replayed: {result.status.value.upper()} "
        f"(run it: relavium-conformance run --profile session-store --adapter {args.adapter} "
        f"--cases {path.parent})"
    )
    if args.json:
        write_json(run, args.json)
    if args.junit:
        write_junit(run, args.junit)
    if args.markdown:
        write_markdown(run, args.markdown)
    return int(ExitCode.FAILED)
