"""``relavium-conformance selftest``: are the broken implementations caught, does the runner survive?"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from relavium_conformance._cli._common import EXIT_USAGE, check_output_path, error_line
from relavium_conformance._report.atomic import write_text_atomically
from relavium_conformance._selftest.proofs import run_selftest

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "selftest",
        help="prove the cases bite (broken implementations) and the runner survives misbehaving programs",
        description="Exit 0 when every broken implementation is caught and the runner survived every "
        "misbehaving program; 1 otherwise.",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the verdicts as JSON")
    parser.add_argument("--no-misbehaviours", action="store_true", help="skip the misbehaving stdio programs")
    parser.set_defaults(handler=_main)


def _main(args: argparse.Namespace) -> int:
    if args.json is not None and (problem := check_output_path(args.json, "--json")):
        error_line("selftest", problem)
        return EXIT_USAGE
    report = asyncio.run(
        run_selftest(
            on_progress=lambda line: print(line, flush=True), include_misbehaviours=not args.no_misbehaviours
        )
    )
    caught = sum(v.caught for v in report.broken)
    survived = sum(m.ok for m in report.misbehaviours)
    print(
        f"\n{caught}/{len(report.broken)} broken implementations caught; "
        f"{survived}/{len(report.misbehaviours)} misbehaving programs survived"
    )
    if args.json:
        document = {
            "ok": report.ok,
            "broken": [
                {
                    "name": v.name,
                    "rule": v.rule,
                    "clauses": list(v.clauses),
                    "cases": list(v.cases),
                    "failed": list(v.failed),
                    "caught": v.caught,
                    "explanation": v.explanation,
                }
                for v in report.broken
            ],
            "misbehaviours": [{"mode": m.mode, "ok": m.ok, "detail": m.detail} for m in report.misbehaviours],
        }
        write_text_atomically(args.json, json.dumps(document, indent=2) + "\n")
    return 0 if report.ok else 1
