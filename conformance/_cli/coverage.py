"""``relavium-conformance spec-coverage SPEC [--json] [--strict]``: traceability for spec authors.

Parses the specification (Markdown, or the store contract's ``.d.ts``), matches its sentences to the clause
catalogue and reports clauses with and without cases, clauses whose sentence changed, sentences no clause
covers yet (untriaged) and clauses whose sentence is gone (removed).

Exit codes: 0 report written (and, with ``--strict``, nothing changed, untriaged or removed); 1 ``--strict``
and something is changed, untriaged or removed; 2 the spec or the catalogue could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any, TextIO

from relavium_conformance._cli._common import error_line
from relavium_conformance._corpus.coverage import CoverageReport, report_for_spec
from relavium_conformance._errors import KitUsageError

__all__ = ["EXIT_DRIFT", "EXIT_OK", "EXIT_UNREADABLE", "handle", "register", "render_table"]

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_UNREADABLE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "spec-coverage",
        help="match a specification's sentences to the clause catalogue (for spec authors)",
        description=(
            "Split SPEC into sentences, fingerprint them and match them to the clause catalogue. "
            "Reports untested clauses, changed sentences, untriaged sentences and removed clauses."
        ),
    )
    parser.add_argument("spec", type=Path, metavar="SPEC", help="agent-session-spec.md or session-store.d.ts")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any clause changed or was removed, or any sentence is untriaged",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return run(args.spec, as_json=args.json, strict=args.strict, out=sys.stdout, err=sys.stderr)


def run(spec: Path, *, as_json: bool, strict: bool, out: TextIO, err: TextIO) -> int:
    try:
        report = report_for_spec(spec)
    except OSError as exc:
        error_line("spec-coverage", f"cannot read {spec}: {exc.strerror or 'unreadable'}", err)
        return EXIT_UNREADABLE
    except UnicodeDecodeError:
        error_line("spec-coverage", f"cannot read {spec}: it is not UTF-8 text", err)
        return EXIT_UNREADABLE
    except KitUsageError as exc:
        error_line("spec-coverage", str(exc), err)
        return EXIT_UNREADABLE
    if as_json:
        json.dump(report.to_json(), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(render_table(report))
    if strict and not report.clean:
        return EXIT_DRIFT
    return EXIT_OK


def _wrapped(ids: list[str]) -> list[str]:
    return textwrap.wrap(
        ", ".join(ids), width=100, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
    )


def render_table(report: CoverageReport) -> str:
    """The terminal form of a report: counts first, then every item that needs a spec author's attention."""
    lines = [
        f"spec-coverage: {report.spec}  ({report.sentences} sentences, {report.clause_count} clauses)",
        "",
    ]
    rows = [(status, str(count)) for status, count in sorted(report.by_status.items())]
    rows += [
        ("testable with cases", str(len(report.tested))),
        ("testable without cases", str(len(report.untested))),
        ("changed", str(len(report.changed))),
        ("untriaged sentences", str(len(report.untriaged))),
        ("removed", str(len(report.removed))),
    ]
    width = max(len(name) for name, _ in rows)
    lines += [f"  {name.ljust(width)}  {count.rjust(5)}" for name, count in rows]
    if report.changed:
        lines += ["", "Changed (the prose was edited: re-review the clause and its cases):"]
        for clause_id in report.changed:
            for where in report.changed_detail[clause_id]:
                lines.append(f"  {clause_id}  {where}")
    if report.untriaged:
        lines += ["", "Untriaged (no clause covers these sentences yet):"]
        lines += [f"  {item}" for item in report.untriaged]
    if report.removed:
        lines += ["", "Removed (the clause's sentence is gone: retire or re-anchor the clause):"]
        lines += _wrapped(report.removed)
    if report.untested:
        lines += ["", "Testable clauses without cases:"]
        lines += _wrapped(report.untested)
    if report.clean:
        lines += ["", "Every sentence is triaged and every clause's sentence is unchanged."]
    return "\n".join(lines) + "\n"
