"""``relavium-conformance report``: a compliance page and badges from the JSON results of several runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from relavium_conformance._cli._common import check_readable_file, error_line, output_problems
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.html import write_badges, write_compliance_page
from relavium_conformance._report.markdown import write_markdown
from relavium_conformance._report.results import ExitCode, RunResult
from relavium_conformance._report.shards import group_shards
from relavium_conformance._report.writers import read_json, write_json, write_junit

__all__ = ["register", "report_command"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="render a compliance page across implementations from JSON results",
        description=(
            "Read the JSON results of one or more runs (relavium-conformance run --json) and write one "
            "self-contained HTML page: per implementation its summary and badge, per clause a matrix "
            "across the implementations, each failure with its differences. The results of the shards of "
            "one selection (run --shard K/N) are merged into one run first, after checking that they cover "
            "the selection exactly once; --json, --junit and --markdown write that one run."
        ),
    )
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json", help="JSON results files")
    parser.add_argument("--html", type=Path, metavar="OUT.html", help="write the compliance page here")
    parser.add_argument("--badges", type=Path, metavar="DIR", help="write one SVG badge per run into DIR")
    parser.add_argument(
        "--markdown", type=Path, metavar="OUT.md", help="write the Markdown summary of the (single) run here"
    )
    parser.add_argument(
        "--json", type=Path, metavar="OUT.json", help="write the JSON results of the (single) run"
    )
    parser.add_argument(
        "--junit", type=Path, metavar="OUT.xml", help="write the JUnit XML of the (single) run"
    )
    parser.set_defaults(handler=report_command)


def _load(path: Path) -> RunResult:
    problem = check_readable_file(path, "results")
    if problem:
        raise KitUsageError(problem)
    try:
        return read_json(path)
    except OSError as exc:
        raise KitUsageError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise KitUsageError(f"{path}: not a results document (not UTF-8 at byte {exc.start})") from None
    except ValidationError as exc:  # (JSON that does not parse, too)
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise KitUsageError(f"{path}: not a results document ({where}: {first['msg']})") from None


def report_command(args: argparse.Namespace) -> int:
    try:
        return _report(args)
    except KitUsageError as exc:
        error_line("report", str(exc))
        return int(ExitCode.USAGE)


def _report(args: argparse.Namespace) -> int:
    if not (args.html or args.badges or args.markdown or args.json or args.junit):
        raise KitUsageError("report needs --html, --badges, --markdown, --json or --junit")
    problems = output_problems(
        ((args.html, "--html"), (args.markdown, "--markdown"), (args.json, "--json"), (args.junit, "--junit"))
    )
    if args.badges is not None and args.badges.exists() and not args.badges.is_dir():
        problems.append(f"--badges {args.badges}: is a file, not a folder")
    if problems:
        raise KitUsageError("; ".join(problems))
    runs = group_shards([_load(path) for path in args.results], [str(path) for path in args.results])
    single = [
        option
        for option, given in (("--markdown", args.markdown), ("--json", args.json), ("--junit", args.junit))
        if given
    ]
    if single and len(runs) != 1:
        raise KitUsageError(
            f"{', '.join(single)} write one run: give one results file, or the shards of one selection "
            f"({len(runs)} runs given)"
        )
    if args.json:
        write_json(runs[0], args.json)
        print(f"json: {args.json}")
    if args.junit:
        write_junit(runs[0], args.junit)
        print(f"junit: {args.junit}")
    if args.html:
        write_compliance_page(runs, args.html)
        print(f"report: {len(runs)} run(s) -> {args.html}")
    if args.badges:
        for path in write_badges(runs, args.badges):
            print(f"badge: {path}")
    if args.markdown:
        full = str(args.json) if args.json else str(args.results[0]) if len(args.results) == 1 else None
        write_markdown(runs[0], args.markdown, full_results=full)
        print(f"markdown: {args.markdown}")
    return 0
