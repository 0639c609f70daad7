"""What the selftest's time is made of (goal 7): the CPU of each of its parts, run one after another.

``benchmarks/run.py`` runs this file in a fresh interpreter once per round and reads the JSON it prints.
The parts are the selftest's own work items, run here the way ``selftest`` runs them (the same items, the
same early stop of a broken implementation's cases), but one at a time in one process, after one untimed
warm-up run, so that each part's CPU is its own:

* ``reference``: the in-process corpus run every verdict is compared with;
* ``broken``: every broken implementation on the cases citing its clauses;
* ``alternatives``: every compliant alternative on the whole corpus;
* ``store``: the session-store profile's own breaks;
* ``misbehaviours``: the misbehaving stdio programs, with the CPU of the servers they start.

CPU time, not wall time: ``selftest -j N`` spreads the same items over N processes, so its wall time can
not be less than the sum of these over the cores.  Nothing here asserts a time.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.stdio_server import MISBEHAVIOURS
from relavium_conformance._run.runner import run_sync
from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS
from relavium_conformance._selftest.compliant import COMPLIANT_ALTERNATIVES
from relavium_conformance._selftest.proofs import (
    MISBEHAVIOUR_TIMEOUT,
    SELFTEST_TIMEOUT,
    _do,
    check_misbehaviour,
    sending_cases,
)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure() -> dict[str, Any]:
    cases = load_cases()
    sending = sending_cases(cases)
    parts: dict[str, list[tuple[str, Any]]] = {
        "reference": [("reference", None)],
        "broken": [("broken", broken) for broken in BROKEN_IMPLEMENTATIONS],
        "alternatives": [("alternative", alternative) for alternative in COMPLIANT_ALTERNATIVES],
        "store": [("store", None)],
    }
    run_sync(
        _do(("reference", None), cases, SELFTEST_TIMEOUT, stdio=False, every_case=False)
    )  # warm-up, untimed:
    # the first run of a process pays its lazy imports and fills the kit's caches, as each selftest
    # worker does once; counted here, it would be charged to whichever part came first
    cpu: dict[str, float] = {}
    for name, items in parts.items():
        started = _cpu()
        for item in items:
            run_sync(_do(item, cases, SELFTEST_TIMEOUT, stdio=False, every_case=False))
        cpu[name] = _cpu() - started
    started = _cpu()
    for mode in MISBEHAVIOURS:
        run_sync(check_misbehaviour(mode, sending, MISBEHAVIOUR_TIMEOUT))
    cpu["misbehaviours"] = _cpu() - started
    return {"cpu": cpu}


if __name__ == "__main__":
    started = time.perf_counter()
    report = measure()
    report["wall"] = time.perf_counter() - started
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
