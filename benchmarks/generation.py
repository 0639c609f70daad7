"""Throughput of generated cases (issue 34, point 5): cases per second against the reference, in-process
and over stdio, beside the hand-written corpus's cases per second on the same transport.

Three figures per transport:

* ``corpus``: every hand-written case in one run (``run_cases_sync``, one adapter open);
* ``generated``: the same number of generated cases (all areas, or ``--area``), drawn first at a fixed seed
  (their drawing timed apart: ``draw``), then run in one run as the corpus is;
* ``fuzz``: the ``fuzz`` command's own loop (Hypothesis drawing each case, one kept-open session, the
  verdict per case), which is what ``relavium-conformance fuzz`` costs per example.

The goal is ``generated`` (and ``fuzz``) at least half the corpus's cases per second.  Wall time; nothing
is asserted; the exit status is 0 whatever the figures::

    .venv/bin/python benchmarks/generation.py [--examples N] [--area AREA] [--no-stdio] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as fixed_seed

from relavium_conformance import load_cases, resolve_adapter, run_cases_sync
from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.generated import generated_cases
from relavium_conformance._run.fuzz import fuzz

SEED = 34


def draw(count: int, area: str | None) -> tuple[list[Case], float]:
    """``count`` generated cases at the fixed seed, and the seconds their drawing took."""
    drawn: list[Case] = []

    @fixed_seed(SEED)
    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=generated_cases(area))
    def collect(case: Case) -> None:
        drawn.append(case.model_copy(update={"id": f"generated/bench-{len(drawn) + 1}"}))

    clock = time.perf_counter()
    collect()
    return drawn, time.perf_counter() - clock


def rate(adapter_name: str, cases: list[Any]) -> dict[str, Any]:
    """Cases per second of one run of ``cases`` (and how many did not pass: the rate of a run that
    fails is no rate of conformance)."""
    clock = time.perf_counter()
    run = run_cases_sync(resolve_adapter(adapter_name), cases, snapshots=False).run
    wall = time.perf_counter() - clock
    bad = sum(1 for c in run.cases if c.status.value not in ("passed", "unsupported"))
    return {
        "cases": len(run.cases),
        "seconds": round(wall, 3),
        "per_second": round(len(cases) / wall, 1),
        "not_passed": bad,
    }


def fuzz_rate(adapter_name: str, examples: int, area: str | None) -> dict[str, Any]:
    clock = time.perf_counter()
    outcome = fuzz(resolve_adapter(adapter_name), examples=examples, seed=SEED, area=area)
    wall = time.perf_counter() - clock
    return {
        "cases": outcome.examples,
        "seconds": round(wall, 3),
        "per_second": round(outcome.examples / wall, 1),
        "not_passed": int(outcome.failure is not None),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=0, help="generated cases (default: the corpus size)")
    parser.add_argument("--area", help="one generated area (default: every area)")
    parser.add_argument("--no-stdio", action="store_true", help="in-process only")
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    corpus = list(load_cases())
    count = args.examples or len(corpus)
    cases, drawing = draw(count, args.area)
    figures: dict[str, Any] = {
        "area": args.area or "all",
        "draw": {"cases": count, "seconds": round(drawing, 3)},
    }
    transports = ["reference"] + ([] if args.no_stdio else ["reference-stdio"])
    for name in transports:
        row = {
            "corpus": rate(name, corpus),
            "generated": rate(name, cases),
            "fuzz": fuzz_rate(name, count, args.area),
        }
        hand = row["corpus"]["per_second"]
        row["ratio_generated"] = round(row["generated"]["per_second"] / hand, 2)
        row["ratio_fuzz"] = round(row["fuzz"]["per_second"] / hand, 2)
        figures[name] = row
        generated, fuzzed = row["generated"]["per_second"], row["fuzz"]["per_second"]
        print(
            f"{name:16} corpus {hand:7.1f} cases/s   generated {generated:7.1f} "
            f"({row['ratio_generated']:.2f}x)   fuzz {fuzzed:7.1f} ({row['ratio_fuzz']:.2f}x)"
        )
    print(f"drawing {count} generated cases took {drawing:.2f} s")
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
