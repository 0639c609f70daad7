"""``relavium-conformance regen-snapshots``: the one command that writes reference snapshots.

It runs the selected cases against the in-process reference engine and writes each case's full
normalised observation beside it (``<name>.snapshot.json``).  Nothing else writes snapshots; a changed
snapshot is reviewed like code.  A case the reference does not pass gets no snapshot (the command
says so and exits 1): a snapshot records correct behaviour, never a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import Case, snapshot_path
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases

__all__ = ["regenerate", "register"]


def regenerate(patterns: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Write snapshots for the selected cases; return (written, unchanged, refused) case ids."""
    cases = [c for c in select_cases(load_cases(), patterns) if isinstance(c, Case)]  # vectors: no snapshot
    outcome = asyncio.run(run_cases(resolve_adapter("reference"), cases, snapshots=False))
    written: list[str] = []
    unchanged: list[str] = []
    refused: list[str] = []
    by_id = {case.id: case for case in cases}
    for result in outcome.run.cases:
        if result.status is not CaseStatus.PASSED:
            refused.append(f"{result.id}: {result.status.value} ({result.reason})")
            continue
        path = snapshot_path(by_id[result.id])
        text = outcome.snapshots[result.id]
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            unchanged.append(result.id)
            continue
        path.write_text(text, encoding="utf-8")
        written.append(result.id)
    return written, unchanged, refused


def _main(args: argparse.Namespace) -> int:
    written, unchanged, refused = regenerate(args.select)
    for case_id in written:
        print(f"wrote    {case_id}")
    for line in refused:
        print(f"REFUSED  {line}", file=sys.stderr)
    print(f"{len(written)} written, {len(unchanged)} unchanged, {len(refused)} refused")
    return 1 if refused else 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "regen-snapshots",
        help="rewrite the reference snapshots of the golden transcripts",
        description=(
            "Run the selected golden transcripts against the in-process reference engine and write each "
            "passing case's normalised observation beside it (<name>.snapshot.json). The only writer of "
            "snapshots. Exit 0 when every selected case passed, 1 when some case got no snapshot."
        ),
    )
    parser.add_argument("--select", action="append", default=[], metavar="PATTERN", help="as for run")
    parser.set_defaults(handler=_main)
