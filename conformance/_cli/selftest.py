"""``relavium-conformance selftest``: are the broken implementations caught, does the runner survive?"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from relavium_conformance._cli._common import (
    EXIT_USAGE,
    check_output_path,
    error_line,
    positive_count,
    suggest,
)
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
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="also run every broken implementation as a subprocess over stdio (it must be caught on both)",
    )
    parser.add_argument(
        "--every-case",
        action="store_true",
        help="run every case citing a broken implementation's clauses (full 'failed' lists); by default "
        "its run stops once each clause it breaks has a proving failure (the same caught/proven verdicts)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=positive_count,
        default=os.cpu_count() or 1,
        metavar="N",
        help="judge the reference, the broken implementations and the alternatives on N kit processes at "
        "once, longest first (default: the CPU count); the verdicts are those of -j 1",
    )
    parser.add_argument(
        "--serve",
        metavar="NAME",
        help="serve one broken implementation or compliant alternative over stdio (as stdio-server does), "
        "so a run can check it through the stdio transport: --adapter 'stdio:relavium-conformance "
        "selftest --serve NAME'",
    )
    parser.set_defaults(handler=_main)


def serve_variant(name: str) -> int:
    """Serve the broken implementation or compliant alternative ``name`` over stdio until ``bye``."""
    from relavium_conformance._reference.stdio_server import serve_stdio
    from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS
    from relavium_conformance._selftest.compliant import COMPLIANT_ALTERNATIVES

    factories = {b.name: b.factory() for b in BROKEN_IMPLEMENTATIONS}
    factories.update({a.name: a.factory() for a in COMPLIANT_ALTERNATIVES})
    if name not in factories:
        known = sorted(factories)
        error_line(
            "selftest", f"no broken implementation or alternative named {name!r}{suggest(name, known)}"
        )
        return EXIT_USAGE
    return asyncio.run(serve_stdio(factories[name]))


def _main(args: argparse.Namespace) -> int:
    if args.serve:
        return serve_variant(args.serve)
    if args.json is not None and (problem := check_output_path(args.json, "--json")):
        error_line("selftest", problem)
        return EXIT_USAGE
    report = asyncio.run(
        run_selftest(
            on_progress=lambda line: print(line, flush=True),
            include_misbehaviours=not args.no_misbehaviours,
            stdio=args.stdio,
            jobs=args.jobs,
            every_case=args.every_case,
        )
    )
    caught = sum(v.caught for v in report.broken)
    survived = sum(m.ok for m in report.misbehaviours)
    accepted = sum(a.accepted for a in report.alternatives)
    print(
        f"\n{caught}/{len(report.broken)} broken implementations caught; "
        f"{accepted}/{len(report.alternatives)} compliant alternatives accepted; "
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
                    "not_run": list(v.not_run),
                    "caught": v.caught,
                    "proven": list(v.proven),
                    "transports": list(v.transports),
                    "explanation": v.explanation,
                }
                for v in report.broken
            ],
            "misbehaviours": [{"mode": m.mode, "ok": m.ok, "detail": m.detail} for m in report.misbehaviours],
            "alternatives": [
                {"name": a.name, "behaviour": a.behaviour, "accepted": a.accepted, "failed": list(a.failed)}
                for a in report.alternatives
            ],
        }
        write_text_atomically(args.json, json.dumps(document, indent=2) + "\n")
    return 0 if report.ok else 1
