"""``relavium-conformance fuzz``: generated cases against any adapter; a failure comes back shrunk, as a
golden transcript a port can add to its own corpus (``run --cases DIR``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from relavium_conformance._cli._common import (
    add_report_options,
    positive_seconds,
    run_guarded,
)
from relavium_conformance._connect import ADAPTER_NAMES_HELP, adapter_alias, resolve_adapter
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import ExitCode, exit_code
from relavium_conformance._report.writers import write_json, write_junit, write_markdown

__all__ = ["DEPTHS", "fuzz_command", "register"]

DEPTHS = {"quick": 25, "default": 100, "thorough": 500}
"""``--depth``: examples per preset (the agent-session fuzzer's own ``PROFILES`` agree)."""
STORE_AREAS = ("lifecycle", "ownership", "forks", "placement", "runs", "incarnation")
"""``--area`` for the session-store profile (``_store/generation.py``'s ``AREAS``)."""
AGENT_SESSION_AREAS = (
    "lifecycle",
    "history",
    "chain",
    "presend",
    "overflow",
    "dialects",
    "usage",
    "compaction",
)
"""``--area`` for the agent-session profile (``_corpus/generated``'s ``AREAS``, held equal by a test)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fuzz",
        help="run generated cases against an implementation and shrink a failure into a golden transcript",
        description=(
            "Generate random sequences of operations from the kit's model of the rules (agent-session: "
            "lifecycle, turn cap, abort and cancel, tool rounds, resume, user commands; session-store: "
            "concurrent store operations over several connections with restarts and crashes, judged as a "
            "history), run them against an implementation, and shrink the first failure to a small case "
            "written under --write DIR (a golden transcript, or a store case; replay it with run --cases "
            "DIR, adding --profile session-store for a store case). Needs the 'strategies' extra. "
            "Exit codes as run: 0 no failure found, 1 a failure, 2 usage error, 3 the implementation "
            "could not be started, 4 no generated case could run (a capability is not declared)."
        ),
    )
    parser.add_argument("--adapter", default="reference", help=f"default reference; {ADAPTER_NAMES_HELP}")
    parser.add_argument(
        "--profile",
        default="agent-session",
        metavar="PROFILE",
        help="which contract to generate cases for, as in run: agent-session (default) or session-store",
    )
    parser.add_argument(
        "--depth",
        choices=tuple(DEPTHS),
        default="default",
        help="how many examples: "
        + ", ".join(f"{k} {v}" for k, v in DEPTHS.items())
        + " (--examples overrides)",
    )
    parser.add_argument("--examples", type=int, metavar="N", help="examples to try (overrides --depth)")
    parser.add_argument("--seed", type=int, metavar="S", help="a fixed seed: the same examples every time")
    parser.add_argument(
        "--area",
        metavar="AREA",
        help="generate one area's cases: agent-session ("
        + ", ".join(AGENT_SESSION_AREAS)
        + "), session-store ("
        + ", ".join(STORE_AREAS)
        + ")",
    )
    parser.add_argument(
        "--time-budget",
        type=positive_seconds,
        metavar="SECONDS",
        help="session-store only: stop generating after about SECONDS (checked between batches of 25)",
    )
    parser.add_argument(
        "--processes",
        action="store_true",
        help="session-store only: every connection a process of its own (the adapter's replicas), so that "
        "a crash is a SIGKILL, also while a round of operations is in flight",
    )
    parser.add_argument(
        "--write",
        type=Path,
        default=Path("fuzz-cases"),
        metavar="DIR",
        help="where the shrunk failing case is written, as DIR/generated/<name>.yaml (default fuzz-cases)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="seconds per operation, above 0 (default 15)",
    )
    add_report_options(parser)
    parser.set_defaults(handler=fuzz_command)


def fuzz_command(args: argparse.Namespace) -> int:
    return run_guarded("fuzz", args, _fuzz)


def _fuzz(args: argparse.Namespace) -> int:
    if args.profile in DEPTHS:
        raise KitUsageError(
            f"--profile now names the contract, as in run (agent-session or session-store); the example "
            f"presets moved to --depth: use --depth {args.profile}"
        )
    if args.profile not in ("agent-session", "session-store"):
        raise KitUsageError(f"--profile {args.profile}: choose agent-session or session-store")
    if args.examples is not None and args.examples < 1:
        raise KitUsageError("--examples must be at least 1")
    if args.profile == "session-store":
        from relavium_conformance._cli.fuzz_store import fuzz_store_command

        return fuzz_store_command(args, args.examples if args.examples is not None else DEPTHS[args.depth])
    for given, option in (
        (args.time_budget, "--time-budget"),
        (args.processes, "--processes"),
    ):
        if given:
            raise KitUsageError(
                f"{option} applies to --profile session-store (the agent-session model has none yet)"
            )
    try:
        from relavium_conformance._corpus.generated import case_to_yaml
        from relavium_conformance._run.fuzz import PROFILES, fuzz
    except ModuleNotFoundError as exc:  # the 'strategies' extra is not installed
        if exc.name != "hypothesis":
            raise
        raise KitUsageError(
            "fuzz needs Hypothesis, which is not installed: pip install 'relavium-conformance[strategies]'"
        ) from None

    examples = args.examples if args.examples is not None else PROFILES[args.depth]
    adapter = resolve_adapter(args.adapter, timeout=args.timeout)
    prefix = adapter_alias(args.adapter).replace(":", "-").lower()
    prefix = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in prefix).strip("-") or "fuzz"
    outcome = fuzz(
        adapter, examples=examples, seed=args.seed, timeout=args.timeout, name_prefix=prefix, area=args.area
    )
    run = outcome.run
    for note in outcome.notes:
        print(f"relavium-conformance fuzz: warning: {note}", file=sys.stderr)
    print(f"{outcome.examples} generated cases executed against {run.implementation.name} ({adapter.name})")
    if outcome.failure is not None:
        [result] = [case for case in run.cases if case.id == outcome.failure.id]
        path = args.write / f"{outcome.failure.id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        header = (
            f"# found by relavium-conformance fuzz against {run.implementation.name}"
            f"{f' (seed {args.seed})' if args.seed is not None else ''}: {result.reason}\n"
        )
        path.write_text(header + case_to_yaml(outcome.failure), encoding="utf-8")
        print(f"{result.status.value.upper()} {outcome.failure.id}: {result.reason}")
        for difference in result.differences[:10]:
            print(f"    at {difference.path}: {difference.message}")
        print(f"shrunk case written to {path} (run it: relavium-conformance run --cases {args.write})")
    elif run.cases:
        print("no failure found")
    if args.json:
        write_json(run, args.json)
    if args.junit:
        write_junit(run, args.junit)
    if args.markdown:
        write_markdown(run, args.markdown)
    if outcome.notes and not run.cases:
        return int(ExitCode.NO_CASES)
    return int(exit_code(run))
