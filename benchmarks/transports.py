"""Benchmark: the whole corpus in-process versus over stdio, measured side by side in one run.

Run with ``python benchmarks/transports.py [ROUNDS]``. The two transports alternate round by round on
the same machine and the report is the ratio of their medians (absolute times on a shared machine
mean little; the ratio says what the JSON-RPC transport costs). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import statistics
import sys
import time

from relavium_conformance import load_cases, resolve_adapter, run_cases_sync


def measure(adapter_name: str) -> tuple[float, int]:
    cases = load_cases()
    started = time.perf_counter()
    outcome = run_cases_sync(resolve_adapter(adapter_name), cases, snapshots=False)
    elapsed = time.perf_counter() - started
    passed = sum(1 for case in outcome.run.cases if case.status.value == "passed")
    return elapsed, passed


def main(rounds: int) -> int:
    timings: dict[str, list[float]] = {"reference": [], "reference-stdio": []}
    for _ in range(rounds):
        for name in timings:  # alternate, so both see the same machine load
            elapsed, _passed = measure(name)
            timings[name].append(elapsed)
    cases = len(load_cases())
    in_process = statistics.median(timings["reference"])
    over_stdio = statistics.median(timings["reference-stdio"])
    print(f"{cases} cases, {rounds} rounds each, alternating")
    for name, values in timings.items():
        per_case = statistics.median(values) / cases * 1000
        print(f"  {name:16} median {statistics.median(values):7.3f} s  ({per_case:6.2f} ms per case)")
    print(f"  stdio / in-process ratio: {over_stdio / in_process:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
