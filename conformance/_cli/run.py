"""``relavium-conformance run``: the kit against one implementation, with reports and baseline gating."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from relavium_conformance._cli._common import (
    check_readable_file,
    error_line,
    output_problems,
    positive_count,
    positive_seconds,
)
from relavium_conformance._cli.selection import select_or_refuse
from relavium_conformance._connect import ADAPTER_NAMES_HELP
from relavium_conformance._corpus.index import (
    CaseEntry,
    Selectable,
    corpus_index,
    entry_of,
    exclude_cases,
)
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.exit_status import ExitCode

if TYPE_CHECKING:
    from relavium_conformance._corpus.cases import AnyCase

__all__ = ["register", "run_command"]

S = TypeVar("S", bound=Selectable)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the conformance cases against an implementation",
        description=(
            "Run the golden transcripts against an implementation and report per case and per clause. "
            "Exit codes: 0 passed (or only known failures), 1 new failure or stale baseline entry, "
            "2 usage error (found before the first case), 3 the implementation could not be started, "
            "4 nothing tested (no case selected, or every selected case unsupported), "
            "130 interrupted by Ctrl-C, 143 by SIGTERM (either way the finished cases are reported)."
        ),
    )
    parser.add_argument("--adapter", default="reference", help=f"default reference; {ADAPTER_NAMES_HELP}")
    parser.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="PATTERN",
        help="keep cases by id, area, clause id or clause area (globs allowed); repeatable",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="drop matching cases (as --select); repeatable",
    )
    parser.add_argument(
        "--cases",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also run the golden transcripts under DIR (a port's own cases, validated as the kit's)",
    )
    parser.add_argument(
        "--maxfail", type=positive_count, metavar="N", help="stop after N failed or errored cases (N above 0)"
    )
    parser.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure")
    parser.add_argument(
        "-j",
        "--jobs",
        type=positive_count,
        default=1,
        metavar="N",
        help="run the cases on N instances of the implementation at once (N kit processes, each with its "
        "own subprocess or in-process engine); the results are those of -j 1 (default 1). Where fork is "
        "missing (Windows) the cases run one after another, with a warning",
    )
    parser.add_argument(
        "--shard",
        metavar="INDEX/COUNT",
        help="run only shard INDEX of COUNT (as 2/4): the selected cases, sorted by id, dealt round-robin, "
        "so COUNT CI jobs split one selection; report merges their JSON results into one",
    )
    parser.add_argument(
        "--github-summary",
        action="store_true",
        help="append the Markdown summary to $GITHUB_STEP_SUMMARY (GitHub Actions' job summary)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON results here")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary here")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="known failures (YAML or JSON)")
    parser.add_argument("--write-baseline", type=Path, metavar="FILE", help="write the current failures here")
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="seconds per operation, above 0 (default 15)",
    )
    parser.add_argument(
        "--validate-protocol", action="store_true", help="check every stdio message against schemas/protocol"
    )
    parser.add_argument(
        "--with-proofs",
        action="store_true",
        help="also run the kit's deliberately broken implementations and record, per clause, which ones "
        "its cases caught (proven_by in the JSON results)",
    )
    parser.add_argument(
        "--profile",
        choices=("agent-session", "session-store"),
        default="agent-session",
        help="which contract to judge: the agent session spec (default) or the session-store contract "
        "(whose --cases DIR holds store cases, and which refuses -j, --require-capability and "
        "--require-all)",
    )
    parser.add_argument(
        "--require-capability",
        action="append",
        default=[],
        metavar="NAME",
        help="fail the run (exit 1) unless the implementation declares NAME; repeatable",
    )
    parser.add_argument(
        "--require-all",
        action="store_true",
        help="fail the run unless the implementation declares every capability of the catalogue",
    )
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print each case as it starts and as it ends"
    )
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="write every protocol message of the run to FILE, one JSON object per line, with timestamps",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the terminal output: auto (default: a terminal, unless NO_COLOR is set, FORCE_COLOR "
        "forces it, TERM=dumb refuses it), always or never",
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KitUsageError as exc:
        error_line("run", str(exc))
        return int(ExitCode.USAGE)


def _usage_problems(args: argparse.Namespace) -> list[str]:
    """Every misuse that can be found before the run starts (so none is found after it)."""
    problems = output_problems(
        (
            (args.json, "--json"),
            (args.junit, "--junit"),
            (args.markdown, "--markdown"),
            (args.write_baseline, "--write-baseline"),
            (args.trace, "--trace"),
        )
    )
    if args.baseline is not None and (problem := check_readable_file(args.baseline, "--baseline")):
        problems.append(problem)
    if args.jobs > 1:
        alone = [
            option
            for option, used in (
                ("--trace", args.trace),
                ("--validate-protocol", args.validate_protocol),
                ("--maxfail", args.maxfail),
                ("--exitfirst", args.exitfirst),
            )
            if used
        ]
        if alone:
            problems.append(f"-j/--jobs above 1 cannot be combined with {', '.join(alone)}")
    if args.github_summary and not os.environ.get("GITHUB_STEP_SUMMARY"):
        problems.append("--github-summary: GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it)")
    return problems


def _run(args: argparse.Namespace) -> int:
    problems = _usage_problems(args)
    if args.shard is not None:
        from relavium_conformance._report.shards import parse_shard

        args.shard = parse_shard(args.shard)
    if problems:
        error_line("run", "; ".join(problems))
        return int(ExitCode.USAGE)
    args.loaded_baseline = None
    if args.baseline is not None and not args.list:  # read and fitted now, not after the whole run
        from relavium_conformance._report.baseline import check_baseline_fits, load_baseline

        args.loaded_baseline = load_baseline(args.baseline)
        check_baseline_fits(args.loaded_baseline, profile=args.profile, source=str(args.baseline))
    if args.profile == "session-store":
        from relavium_conformance._cli.store_profile import run_store_profile

        return run_store_profile(args)
    if args.list:
        return _list(args)
    from relavium_conformance._corpus.selection import gather_cases

    all_cases: tuple[AnyCase, ...] = gather_cases(args.cases)
    cases = exclude_cases(select_or_refuse(args, all_cases), args.exclude)
    cases, args.shard_info = _shard(args, cases)
    if not cases:
        error_line("run", _nothing_selected(args))
        return int(ExitCode.NO_CASES)
    from relavium_conformance._cli.run_cases import execute  # what running needs, not --list

    return execute(args, all_cases, cases)


def _shard(args: argparse.Namespace, cases: tuple[S, ...]) -> tuple[tuple[S, ...], Any]:
    """``--shard``: this job's part of the selection, and what the results record of it."""
    if args.shard is None:
        return cases, None
    from relavium_conformance._report.shards import take_shard

    return take_shard(cases, *args.shard)


def _nothing_selected(args: argparse.Namespace) -> str:
    if args.shard is not None and args.shard_info is not None and args.shard_info.selected:
        index, count = args.shard
        return f"shard {index}/{count} holds no case of the {args.shard_info.selected} selected"
    return "no case matches the selection"


def _list(args: argparse.Namespace) -> int:
    """``--list``: the kit's corpus from its index (no case models built while nothing changed); a port's
    own cases (``--cases``) from the full load."""
    if args.cases:
        from relavium_conformance._corpus.selection import gather_cases

        everything = tuple(entry_of(case) for case in gather_cases(args.cases))
    else:
        everything = corpus_index()
    entries: tuple[CaseEntry, ...] = exclude_cases(select_or_refuse(args, everything), args.exclude)
    entries, args.shard_info = _shard(args, entries)
    for entry in entries:
        print(f"{entry.id}  [{', '.join(entry.clauses)}]")
    if not entries:
        error_line("run", _nothing_selected(args))
        return int(ExitCode.NO_CASES)
    return 0
