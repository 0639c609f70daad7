"""The figures of the benchmark: each a measured value over its physical floor, grouped by goal.

``build_figures`` makes the empty figures a run fills (``run.py``'s rounds append one value and one floor
each); ``MEASURES`` maps a ``--only`` name to the figures it fills.  The goals are those of
``benchmarks/README.md``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ONE_CASE = "lifecycle/abort-before-provider"  # a short case: its run is the fixed costs, nearly alone

SELFTEST_PARTS = {
    "broken": "the broken implementations",
    "alternatives": "the compliant alternatives",
    "store": "the store profile's breaks",
    "misbehaviours": "the misbehaving programs (kit + servers)",
}


@dataclass
class Figure:
    """One reported ratio: a measured value over its floor, with what each side is."""

    goal: str
    name: str
    value_label: str
    floor_label: str
    unit: str
    target: str
    met: Callable[[float], bool] | None = None
    values: list[float] = field(default_factory=list)
    floors: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        value = statistics.median(self.values) if self.values else None
        floor = statistics.median(self.floors) if self.floors else None
        ratio = value / floor if value is not None and floor else None
        return {
            "goal": self.goal,
            "name": self.name,
            "value": value,
            "value_is": self.value_label,
            "floor": floor,
            "floor_is": self.floor_label,
            "unit": self.unit,
            "ratio": ratio,
            "target": self.target,
            "met": (self.met(ratio) if ratio is not None and self.met else None),
            "rounds": len(self.values),
        }


def _ratio_at_most(limit: float) -> Callable[[float], bool]:
    return lambda ratio: ratio <= limit


def _ratio_at_least(limit: float) -> Callable[[float], bool]:
    return lambda ratio: ratio >= limit


def _durable_figures() -> dict[str, Figure]:
    """Goal 1: durable turns/s against raw commits of the same rows, and their context."""
    f: dict[str, Figure] = {
        "durable": Figure(
            "1",
            "durable turns/s",
            "engine turns/s into history.db",
            "raw commits/s of the same rows",
            "turns/s",
            "ratio >= 0.5",
            _ratio_at_least(0.5),
        ),
        "durable_contract": Figure(
            "1",
            "durable turns/s, like for like",
            "engine turns/s into history.db",
            "raw commits/s of the same rows in the contract's 2 commits per turn (KD-USE-1)",
            "turns/s",
            "(context)",
        ),
        "durable_statements": Figure(
            "1",
            "durable turns/s, the store's own SQL",
            "engine turns/s into history.db",
            "the store's own write statements of the same turns, replayed bare (all its rows and indexes)",
            "turns/s",
            "(context)",
        ),
        "in_memory": Figure(
            "1",
            "turns/s without persistence",
            "engine turns/s, no persister",
            "durable engine turns/s",
            "turns/s",
            "(context)",
        ),
        "durable_ceiling": Figure(
            "1",
            "durable turns/s: engine + 2 commits alone",
            "1 / (a turn without persistence + the contract's 2 commits, one after the other), turns/s",
            "raw commits/s of the same rows",
            "turns/s",
            "(context)",
        ),
    }
    return f


def _turn_cost_figures() -> dict[str, Figure]:
    """Goal 2: the per-turn cost at turns 100 and 1000 against turn 10."""
    f: dict[str, Figure] = {}
    for turn in (100, 1000):
        f[f"turn_{turn}"] = Figure(
            "2",
            f"per-turn cost at turn {turn}",
            f"CPU ms per turn at turn {turn}",
            "CPU ms per turn at turn 10",
            "ms",
            "turn 1000 ratio <= 5" if turn == 1000 else "(context)",
            _ratio_at_most(5.0) if turn == 1000 else None,
        )
    return f


def _store_figures(quick: bool) -> dict[str, Figure]:
    """Goal 3: export, load and reconstruct against json.dumps and a bare SELECT."""
    export_sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    load_size = 10_000 if quick else 100_000
    f: dict[str, Figure] = {}
    for size in export_sizes:
        f[f"export_{size}"] = Figure(
            "3",
            f"export of {size:,} messages",
            "session_to_workflow + dump_yaml (CPU s)",
            "json.dumps of the same document (CPU s)",
            "s",
            "100k ratio <= 5" if size == 100_000 else "(context)",
            _ratio_at_most(5.0) if size == 100_000 else None,
        )
    f["load"] = Figure(
        "3",
        f"load {load_size:,} messages",
        "HistoryStore.load_full (CPU s)",
        "bare SELECT + json.loads (CPU s)",
        "s",
        "ratio <= 3",
        _ratio_at_most(3.0),
    )
    f["reconstruct"] = Figure(
        "3",
        f"reconstruct {load_size:,} messages",
        "reconstruct_session_state (CPU s)",
        "bare SELECT + json.loads (CPU s)",
        "s",
        "ratio <= 3",
        _ratio_at_most(3.0),
    )
    return f


def _startup_figures() -> dict[str, Figure]:
    """Goal 4: ``run --list`` against the bare import of both packages."""
    f: dict[str, Figure] = {}
    f["startup"] = Figure(
        "4",
        "start-up: run --list",
        "relavium-conformance run --list (s)",
        'python -c "import relavium_conformance, relavium_reference" (s)',
        "s",
        "ratio <= 1.5",
        _ratio_at_most(1.5),
    )
    f["startup_cold"] = Figure(
        "4",
        "start-up: run --list, caches empty",
        "run --list with an empty cache folder, as on a fresh checkout (s)",
        'python -c "import relavium_conformance, relavium_reference" (s)',
        "s",
        "(context)",
    )
    return f


def _stdio_figures() -> dict[str, Figure]:
    """Goal 5: the stdio transport against in-process, and what this protocol allows at least."""
    f: dict[str, Figure] = {}
    f["stdio_run"] = Figure(
        "5",
        "whole run over stdio",
        "run, reference-stdio (s)",
        "run, reference in-process (s)",
        "s",
        "ratio <= 1.3",
        _ratio_at_most(1.3),
    )
    f["stdio_case"] = Figure(
        "5",
        "per case over stdio",
        "mean case, reference-stdio (ms)",
        "mean case, in-process (ms)",
        "ms",
        "ratio <= 1.5",
        _ratio_at_most(1.5),
    )
    f["stdio_cpu"] = Figure(
        "5",
        "stdio run, CPU of both processes",
        "kit + server CPU, reference-stdio (s)",
        "CPU of the in-process run (s)",
        "s",
        "(context)",
    )
    f["stdio_trip"] = Figure(
        "5",
        "stdio cost per round trip",
        "(stdio run - in-process run) / round trips (us)",
        "bare pipe round trip between two processes, each on a core of its own (us)",
        "us",
        "(context)",
    )
    f["stdio_trip_one_core"] = Figure(
        "5",
        "bare pipe round trip, both ends on one core",
        "bare pipe round trip, both processes pinned to one core (us)",
        "the same, each on a core of its own (us)",
        "us",
        "(context)",
    )
    f["stdio_least_run"] = Figure(
        "5",
        "least stdio run this protocol allows",
        "in-process run + server start and stop + round trips x bare pipe + JSON of every message (s)",
        "run, reference in-process (s)",
        "s",
        "(context)",
    )
    f["stdio_least_case"] = Figure(
        "5",
        "least stdio case this protocol allows",
        "mean case in-process + its share of round trips x bare pipe and of the JSON (ms)",
        "mean case, in-process (ms)",
        "ms",
        "(context)",
    )
    f["stdio_start"] = Figure(
        "5",
        "stdio server start and stop",
        "spawn to hello answered, bye to exit (s)",
        "python -c pass (s)",
        "s",
        "(context)",
    )
    return f


def _jobs_figures() -> dict[str, Figure]:
    """Goal 6: ``-j 2`` against ``-j 1``, beside the fixed costs no ``-j`` can split."""
    f: dict[str, Figure] = {}
    f["jobs"] = Figure(
        "6",
        "run -j 2 over stdio (speed-up)",
        "run -j 1 over stdio (s)",
        "run -j 2 over stdio (s)",
        "x",
        "ratio >= 1.7",
        _ratio_at_least(1.7),
    )
    f["jobs_fixed"] = Figure(
        "6",
        "fixed costs of a CLI run over stdio",
        f"run of one case over stdio: kit start, server start, exit ({ONE_CASE}; s)",
        "run -j 1 over stdio (s)",
        "s",
        "(context)",
    )
    f["jobs_least"] = Figure(
        "6",
        "most -j 2 speed-up those fixed costs allow",
        "run -j 1 over stdio (s)",
        "the fixed costs + half of the rest of the -j 1 run (s)",
        "x",
        "(context)",
    )
    return f


def _selftest_figures() -> dict[str, Figure]:
    """Goal 7: run + selftest against the 20 s budget, and the selftest's parts."""
    f: dict[str, Figure] = {}
    f["selftest"] = Figure(
        "7",
        "selftest vs one run",
        "relavium-conformance selftest (s)",
        "relavium-conformance run (s)",
        "s",
        "(context)",
    )
    f["total"] = Figure(
        "7",
        "run + selftest (in-process)",
        "run + selftest (s)",
        "20 s budget",
        "s",
        "ratio <= 1",
        _ratio_at_most(1.0),
    )
    for part, label in SELFTEST_PARTS.items():
        f[f"selftest_{part}"] = Figure(
            "7",
            f"selftest part: {label}",
            f"CPU of {label}, one part at a time (s)",
            "CPU of the selftest's in-process reference run (s)",
            "s",
            "(context)",
        )
    f["selftest_least"] = Figure(
        "7",
        "least run + selftest on these cores",
        "run + the selftest parts' CPU spread perfectly over the cores (s)",
        "20 s budget",
        "s",
        "(context)",
    )
    return f


def build_figures(quick: bool, jobs: bool) -> dict[str, Figure]:
    """Every figure of a run, by goal; ``-j`` only when the CLI has it, the selftest only in a full run."""
    f = {
        **_durable_figures(),
        **_turn_cost_figures(),
        **_store_figures(quick),
        **_startup_figures(),
        **_stdio_figures(),
    }
    if jobs:
        f |= _jobs_figures()
    if not quick:
        f |= _selftest_figures()
    return f


MEASURES: dict[str, tuple[str, ...]] = {
    # --only NAME -> the figures it fills (keys of build_figures' result, or their prefix)
    "durable": ("durable", "durable_contract", "durable_statements", "in_memory", "durable_ceiling"),
    "turn-cost": ("turn_",),
    "export": ("export_",),
    "load": ("load",),
    "reconstruct": ("reconstruct",),
    "list": ("startup", "startup_cold"),
    "stdio": (
        "stdio_run",
        "stdio_case",
        "stdio_cpu",
        "stdio_trip",
        "stdio_trip_one_core",
        "stdio_start",
        "stdio_least_run",
        "stdio_least_case",
    ),
    "jobs": ("jobs", "jobs_fixed", "jobs_least"),
    "selftest": ("selftest", "total", "selftest_"),
}


def select_figures(f: dict[str, Figure], only: set[str]) -> dict[str, Figure]:
    """The figures of the chosen measures (every figure when ``only`` is empty)."""
    if not only:
        return f
    wanted = [key for name in only for key in MEASURES[name]]
    return {
        key: figure
        for key, figure in f.items()
        if any(key == w or (w.endswith("_") and key.startswith(w)) for w in wanted)
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'goal':4} {'measure':34} {'value':>10} {'floor':>10} {'ratio':>8}  {'target':16} met  floor is")
    for row in rows:
        met = {True: "yes", False: "NO", None: ""}[row["met"]]
        print(
            f"{row['goal']:4} {row['name']:34} {_fmt(row['value']):>10} {_fmt(row['floor']):>10} "
            f"{_fmt(row['ratio']):>8}  {row['target']:16} {met:4} {row['floor_is']} [{row['unit']}]"
        )
