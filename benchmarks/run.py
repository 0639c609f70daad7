"""Every performance ratio of the kit and the reference engine, measured side by side in one run.

``python benchmarks/run.py [--json FILE] [--quick] [--rounds N] [--only NAME[,NAME]] [--from-source]``.
Each figure is measured beside its physical floor on the same machine, in alternating rounds (round 1 of
every measure, then round 2 of every measure, ...), and reported as the median of each and their ratio:
absolute times on a shared machine mean little.  ``benchmarks/README.md`` gives the method (each goal, its
floor and why); the figures are in ``figures.py``, the in-process engine measures in
``engine_measures.py``, the transport measures in ``transports.py``; this script runs the rounds.

Not a test: nothing here asserts a time.  Exit status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# benchmarks/ (the script's own folder) is first on the path: its modules import by their bare names
from engine_measures import costs_in_own_interpreter, durable_lockstep, store_round, turns_in_memory
from figures import MEASURES, ONE_CASE, SELFTEST_PARTS, Figure, build_figures, print_table, select_figures
from transports import (
    bare_round_trip,
    captured_messages,
    corpus_run,
    json_floor,
    server_start_stop,
)

BIN = Path(sys.executable).parent
CLI = str(BIN / "relavium-conformance") if (BIN / "relavium-conformance").exists() else None


def _timed_process(command: list[str], env: dict[str, str] | None = None, *, check: bool = False) -> float:
    """Wall seconds of one process; with ``check``, a failing one (a case renamed away) is an error."""
    started = time.perf_counter()
    subprocess.run(command, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def _cli(*args: str) -> list[str]:
    return [CLI, *args] if CLI else [sys.executable, "-m", "relavium_conformance", *args]


def _has_jobs_option() -> bool:
    completed = subprocess.run(_cli("run", "--help"), capture_output=True, text=True, check=False)
    return re.search(r"(^|[\s\[])-j[\s,\]]", completed.stdout) is not None


_MESSAGES: list[str] = []  # every message of one stdio run, both ways (see transports.captured_messages)


def _round_durable(f: dict[str, Figure], turns: int, work: Path, say: Callable[[str], None]) -> None:
    """Goal 1: durable turns in lock-step with their floors, then the engine without persistence."""
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        directory = Path(scratch)
        say("durable turns")
        durable, one, contract, statements = asyncio.run(durable_lockstep(directory, turns))
        f["durable"].values.append(durable)
        f["durable"].floors.append(one)
        f["durable_contract"].values.append(durable)
        f["durable_contract"].floors.append(contract)
        f["durable_statements"].values.append(durable)
        f["durable_statements"].floors.append(statements)
        in_memory = asyncio.run(turns_in_memory(turns))
        f["in_memory"].values.append(in_memory)
        f["in_memory"].floors.append(durable)
        # the engine's own work and the contract's commits, added with nothing else: what persistence
        # code could reach if it cost nothing and overlapped nothing (a session's turns are serial,
        # and the pending usage record must be durable before the provider is called)
        f["durable_ceiling"].values.append(1 / (1 / in_memory + 1 / contract))
        f["durable_ceiling"].floors.append(one)


def _round_turn_cost(f: dict[str, Figure], say: Callable[[str], None]) -> None:
    """Goal 2: the per-turn cost at turns 10, 100 and 1000, in an interpreter of its own."""
    say("per-turn cost (in an interpreter of its own)")
    cost = costs_in_own_interpreter((10, 100, 1000))
    for turn in (100, 1000):
        f[f"turn_{turn}"].values.append(cost[turn] * 1000)
        f[f"turn_{turn}"].floors.append(cost[10] * 1000)


def _round_startup(f: dict[str, Figure], work: Path, say: Callable[[str], None]) -> None:
    """Goal 4: ``run --list`` against the bare import, warm, then once with empty caches."""
    say("start-up")
    # a 50 ms process wanders by a third from one start to the next here: each round keeps the median
    # of seven starts of each, alternating
    bare = [sys.executable, "-c", "import relavium_conformance, relavium_reference"]
    lists: list[float] = []
    floors: list[float] = []
    for _ in range(7):
        lists.append(_timed_process(_cli("run", "--list")))
        floors.append(_timed_process(bare))
    f["startup"].values.append(statistics.median(lists))
    floor = statistics.median(floors)
    f["startup"].floors.append(floor)
    with tempfile.TemporaryDirectory(dir=work) as empty:  # the first run --list after a change
        empty_caches = {**os.environ, "RELAVIUM_CONFORMANCE_YAML_CACHE": empty}
        cold = _timed_process(_cli("run", "--list"), empty_caches)
    f["startup_cold"].values.append(cold)
    f["startup_cold"].floors.append(floor)


def _round_stdio(f: dict[str, Figure], say: Callable[[str], None]) -> None:
    """Goal 5: the corpus over stdio and in-process, and the least this protocol allows."""
    say("transports")
    inside = corpus_run("reference")
    over = corpus_run("reference-stdio")
    f["stdio_run"].values.append(over.wall)
    f["stdio_run"].floors.append(inside.wall)
    f["stdio_case"].values.append(over.per_case * 1000)
    f["stdio_case"].floors.append(inside.per_case * 1000)
    f["stdio_cpu"].values.append(over.cpu + over.child_cpu)
    f["stdio_cpu"].floors.append(inside.cpu)
    f["stdio_trip"].values.append((over.wall - inside.wall) / max(over.round_trips, 1) * 1e6)
    trip = bare_round_trip()
    f["stdio_trip"].floors.append(trip * 1e6)
    f["stdio_trip_one_core"].values.append(bare_round_trip(one_core=True) * 1e6)
    f["stdio_trip_one_core"].floors.append(trip * 1e6)
    start = server_start_stop()
    f["stdio_start"].values.append(start)
    f["stdio_start"].floors.append(_timed_process([sys.executable, "-c", "pass"]))
    if not _MESSAGES:  # the run's messages, captured once (an untimed run)
        _MESSAGES.extend(captured_messages())
    wire = over.round_trips * trip + json_floor(_MESSAGES)
    f["stdio_least_run"].values.append(inside.wall + start + wire)
    f["stdio_least_run"].floors.append(inside.wall)
    f["stdio_least_case"].values.append((inside.per_case + wire / max(over.cases, 1)) * 1000)
    f["stdio_least_case"].floors.append(inside.per_case * 1000)


def _round_jobs(f: dict[str, Figure], say: Callable[[str], None]) -> None:
    """Goal 6: whole CLI runs at ``-j 1`` and ``-j 2`` over stdio, and a one-case run's fixed costs."""
    say("-j 1 / -j 2")
    one = _timed_process(_cli("run", "--adapter", "reference-stdio", "-j", "1"))
    two = _timed_process(_cli("run", "--adapter", "reference-stdio", "-j", "2"))
    fixed = _timed_process(_cli("run", "--adapter", "reference-stdio", "--select", ONE_CASE), check=True)
    f["jobs"].values.append(one)
    f["jobs"].floors.append(two)
    # what no -j N can split: the kit's start (imports, the corpus), one server's start (N start at
    # once, on N cores), the exit; the rest of a -j 1 run is cases, which at best halve on 2 cores
    f["jobs_fixed"].values.append(fixed)
    f["jobs_fixed"].floors.append(one)
    f["jobs_least"].values.append(one)
    f["jobs_least"].floors.append(fixed + max(one - fixed, 0.0) / 2)


def _round_selftest(f: dict[str, Figure], say: Callable[[str], None]) -> None:
    """Goal 7: one run and one selftest, then the CPU of each part of the selftest."""
    say("selftest")
    run_time = _timed_process(_cli("run"))
    selftest_time = _timed_process(_cli("selftest"))
    f["selftest"].values.append(selftest_time)
    f["selftest"].floors.append(run_time)
    f["total"].values.append(run_time + selftest_time)
    f["total"].floors.append(20.0)
    parts = _selftest_parts()
    cpu = parts["cpu"]
    for part in SELFTEST_PARTS:
        f[f"selftest_{part}"].values.append(cpu[part])
        f[f"selftest_{part}"].floors.append(cpu["reference"])
    f["selftest_least"].values.append(run_time + sum(cpu.values()) / (os.cpu_count() or 1))
    f["selftest_least"].floors.append(20.0)


def one_round(f: dict[str, Figure], quick: bool, work: Path, say: Callable[[str], None]) -> None:
    """One more value and floor for every figure in ``f``, one measure after the other."""
    if "durable" in f:
        _round_durable(f, 60 if quick else 300, work, say)
    if "turn_1000" in f:
        _round_turn_cost(f, say)
    sizes = sorted(int(key.split("_")[1]) for key in f if key.startswith("export_"))
    reading = "load" in f or "reconstruct" in f
    if sizes or reading:
        store_round(f, sizes, (10_000 if quick else 100_000) if reading else None, work, say)
    if "startup" in f:
        _round_startup(f, work, say)
    if "stdio_run" in f:
        _round_stdio(f, say)
    if "jobs" in f:
        _round_jobs(f, say)
    if "selftest" in f:
        _round_selftest(f, say)


def _selftest_parts() -> dict[str, Any]:
    """The CPU of each part of the selftest, from ``selftest_parts.py`` in a fresh interpreter."""
    script = Path(__file__).with_name("selftest_parts.py")
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, encoding="utf-8"
    )
    parts: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return parts


_PACKAGES = [str(Path(__file__).resolve().parents[1] / name) for name in ("conformance", "reference")]


def _bytecode(work: Path, from_source: bool) -> str:
    """Set how every process measured here gets the kit's and the engine's bytecode; say which.

    By default as an installed kit has it (``pip install`` compiles every module): compiled once, here,
    into a cache of this run's own (``PYTHONPYCACHEPREFIX``), whatever the shell says.  With
    ``from_source``, every process compiles the modules it imports (``PYTHONDONTWRITEBYTECODE=1``, as a
    checkout run in a shell that sets it, this sandbox's included)."""
    if from_source:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        return "compiled from source by every process (PYTHONDONTWRITEBYTECODE=1)"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
    compile_all = [sys.executable, "-m", "compileall", "-q", *_PACKAGES]
    subprocess.run(compile_all, check=True, stdout=subprocess.DEVNULL)
    # A cache prefix holds every module's bytecode, the standard library's and the libraries' too, which
    # the first process importing each would compile: one untimed run of each kind of process measured
    # here fills it (a listing, the bare import, a stdio run with its server).
    for warm in (
        _cli("run", "--list"),
        [sys.executable, "-c", "import relavium_conformance, relavium_reference"],
        _cli("run", "--adapter", "reference-stdio", "--select", ONE_CASE),
    ):
        _timed_process(warm, check=True)
    return "compiled once, as an installed kit has it (python -m compileall, PYTHONPYCACHEPREFIX)"


def _progress(number: int) -> Callable[[str], None]:
    return lambda text: print(f"[round {number}] {text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON here")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one round, no selftest")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 3, 1 with --quick)")
    parser.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        help=f"run only these measures (of: {', '.join(MEASURES)}); selftest runs even with --quick",
    )
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="every measured process compiles the modules it imports (default: compiled once, as installed)",
    )
    args = parser.parse_args(argv)
    only = {name.strip() for name in (args.only or "").split(",") if name.strip()}
    unknown = sorted(only - set(MEASURES))
    if unknown:
        parser.error(f"unknown measure(s) {', '.join(unknown)}; choose from {', '.join(MEASURES)}")
    rounds = args.rounds or (1 if args.quick else 3)
    jobs = _has_jobs_option() if not only or "jobs" in only else False
    figures = select_figures(build_figures(args.quick and "selftest" not in only, jobs), only)
    work = Path(tempfile.mkdtemp(prefix="relavium-bench-"))
    started = time.perf_counter()
    bytecode = _bytecode(work, args.from_source)
    print(f"bytecode: {bytecode}", file=sys.stderr)
    if "stdio_run" in figures:  # the kit's caches (fixture YAML, validators) serve both transports:
        _progress(0)("warm-up run (not counted)")  # filled here, the first timed run is not penalised
        corpus_run("reference")
    try:
        for number in range(1, rounds + 1):
            one_round(figures, args.quick, work, _progress(number))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [figure.summary() for figure in figures.values()]
    if "jobs" not in figures and (not only or "jobs" in only):
        rows.append(
            {
                "goal": "6",
                "name": "run -j 2 over stdio (speed-up)",
                "value": None,
                "value_is": "not measured",
                "floor": None,
                "floor_is": "the CLI has no -j option",
                "unit": "x",
                "ratio": None,
                "target": "ratio >= 1.7",
                "met": None,
                "rounds": 0,
            }
        )
    print(f"bytecode: {bytecode}")
    print_table(rows)
    report = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "bytecode": bytecode,
        "rounds": rounds,
        "quick": args.quick,
        "only": sorted(only) or None,
        "seconds": round(time.perf_counter() - started, 1),
        "figures": rows,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
