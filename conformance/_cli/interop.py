"""``relavium-conformance interop``: one implementation writes the durable rows, the other resumes them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relavium_conformance._cli._common import (
    add_report_options,
    positive_seconds,
    run_guarded,
)
from relavium_conformance._connect import ADAPTER_NAMES_HELP, resolve_adapter
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import exit_code
from relavium_conformance._report.writers import (
    TerminalReporter,
    write_github_summary,
    write_json,
    write_junit,
    write_markdown,
)

__all__ = ["interop_command", "register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "interop",
        help="two implementations: one writes the durable rows, the other resumes, continues and exports",
        description=(
            "Implementation A plays a scripted conversation while the kit keeps its durable rows; B "
            "resumes from exactly those rows, exports, continues and exports again. The kit compares B's "
            "exports, its next provider request and its new rows with A's own, as data; then the other "
            "direction. Both must declare core, persistence, resume and export. Exit codes as run: 4 when "
            "neither direction could run (a capability is not declared)."
        ),
    )
    parser.add_argument(
        "--adapter",
        action="append",
        default=[],
        required=True,
        metavar="NAME",
        help=f"give it twice, A then B; {ADAPTER_NAMES_HELP}",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="seconds per operation, above 0 (default 15)",
    )
    add_report_options(parser)
    parser.add_argument("--github-summary", action="store_true", help="append Markdown to the job summary")
    parser.set_defaults(handler=interop_command)


def interop_command(args: argparse.Namespace) -> int:
    return run_guarded("interop", args, _interop)


def _interop(args: argparse.Namespace) -> int:
    from relavium_conformance._run.interop import interop

    if len(args.adapter) != 2:
        raise KitUsageError("interop needs exactly two --adapter options (A, then B)")
    first, second = (resolve_adapter(name, timeout=args.timeout) for name in args.adapter)
    run = interop(first, second, timeout=args.timeout)
    reporter = TerminalReporter(sys.stdout)
    for case in run.cases:
        reporter.on_case_end(case)
    if args.json:
        write_json(run, args.json)
    if args.junit:
        write_junit(run, args.junit)
    if args.markdown:
        write_markdown(run, args.markdown)
    if args.github_summary:
        write_github_summary(run)
    reporter.summary(run)
    return int(exit_code(run))
