"""``relavium-conformance report``: a compliance page and badges from the JSON results of several runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from relavium_conformance._report.html import write_badges, write_compliance_page
from relavium_conformance._report.markdown import write_markdown
from relavium_conformance._report.results import ExitCode, RunResult
from relavium_conformance._report.writers import read_json

__all__ = ["register", "report_command"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="render a compliance page across implementations from JSON results",
        description=(
            "Read the JSON results of one or more runs (relavium-conformance run --json) and write one "
            "self-contained HTML page: per implementation its summary and badge, per clause a matrix "
            "across the implementations, each failure with its differences."
        ),
    )
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json", help="JSON results files")
    parser.add_argument("--html", type=Path, metavar="OUT.html", help="write the compliance page here")
    parser.add_argument("--badges", type=Path, metavar="DIR", help="write one SVG badge per run into DIR")
    parser.add_argument(
        "--markdown", type=Path, metavar="OUT.md", help="write the Markdown summary of the (single) run here"
    )
    parser.set_defaults(handler=report_command)


def _load(path: Path) -> RunResult:
    try:
        return read_json(path)
    except OSError as exc:
        raise SystemExit(f"relavium-conformance: {path}: cannot read ({exc.strerror})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise SystemExit(
            f"relavium-conformance: {path}: not a results document ({where}: {first['msg']})"
        ) from None


def report_command(args: argparse.Namespace) -> int:
    if not (args.html or args.badges or args.markdown):
        print("relavium-conformance: report needs --html, --badges or --markdown", file=sys.stderr)
        return int(ExitCode.USAGE)
    try:
        runs = [_load(path) for path in args.results]
    except SystemExit as exc:
        print(exc.code, file=sys.stderr)
        return int(ExitCode.USAGE)
    if args.markdown and len(runs) != 1:
        print("relavium-conformance: --markdown summarises one run: give one results file", file=sys.stderr)
        return int(ExitCode.USAGE)
    if args.html:
        write_compliance_page(runs, args.html)
        print(f"report: {len(runs)} run(s) -> {args.html}")
    if args.badges:
        for path in write_badges(runs, args.badges):
            print(f"badge: {path}")
    if args.markdown:
        write_markdown(runs[0], args.markdown, full_results=str(args.results[0]))
        print(f"markdown: {args.markdown}")
    return 0
