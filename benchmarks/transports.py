"""The transport measures of ``benchmarks/run.py`` (goal 5): the corpus in-process and over stdio, and
the floors they are held to.

Beside the two runs this module measures what no stdio run of this protocol can avoid, so that the
ratio of a run can be read against the least ratio the protocol allows on the same machine:

* a bare pipe round trip between two processes (blocking ``os.write``/``os.read`` of one line, no
  parsing);
* the JSON of every message of a real run, both ways: each line is encoded once by its sender and
  decoded once by its reader (the messages are captured once per benchmark, from a run that is not
  timed, through the kit's message hook);
* the server's start and stop.

Every operation and callback of the protocol is a request the caller waits for, so the two processes
take turns: the least a stdio run can cost is the in-process run plus the server's start and stop,
plus, per round trip, one bare pipe round trip, plus the JSON of the run's messages.  Nothing here
asserts a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from relavium_conformance import load_cases, resolve_adapter, run_cases_sync
from relavium_conformance._connect import reference_stdio_command
from relavium_conformance._wire.adapters import StdioAdapter, kit_hello_params
from relavium_conformance._wire.process import SubprocessConnection

__all__ = [
    "CorpusRun",
    "bare_round_trip",
    "captured_messages",
    "corpus_run",
    "json_floor",
    "server_start_stop",
]


@dataclass
class CorpusRun:
    wall: float  # s
    per_case: float  # mean case duration, s
    cpu: float  # this process, s
    child_cpu: float  # the processes that ended during the run (the stdio server), s
    round_trips: int  # lines received from the implementation: answers and callbacks (0 in-process)
    cases: int


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def corpus_run(adapter_name: str) -> CorpusRun:
    cases = load_cases()
    adapter = resolve_adapter(adapter_name)
    started, cpu, child = time.perf_counter(), time.process_time(), _children_cpu()
    outcome = run_cases_sync(adapter, cases, snapshots=False)
    elapsed, cpu, child = time.perf_counter() - started, time.process_time() - cpu, _children_cpu() - child
    durations = [case.duration_ms for case in outcome.run.cases]
    trips = adapter.received_lines if isinstance(adapter, StdioAdapter) else 0
    return CorpusRun(elapsed, statistics.mean(durations) / 1000, cpu, child, trips, len(durations))


def captured_messages() -> list[str]:
    """Every message of one corpus run over stdio, both ways, as compact JSON text, in order.

    The kit's message hook sees each message once, as the dictionary its sender encoded or its reader
    decoded; it is encoded here at once, before anything could change it.  The run is not timed."""
    texts: list[str] = []

    def capture(_direction: str, message: Any, _method: str | None) -> None:
        texts.append(json.dumps(message, separators=(",", ":"), ensure_ascii=False))

    run_cases_sync(resolve_adapter("reference-stdio", validate=capture), load_cases(), snapshots=False)
    return texts


def json_floor(texts: list[str]) -> float:
    """CPU seconds of the JSON the messages need at the least: one decode and one encode each."""
    decode = json.JSONDecoder().decode  # built once, as the wire builds its own: a call of json.dumps
    encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # with options builds one
    started = time.process_time()
    for text in texts:
        encode(decode(text))
    return time.process_time() - started


_ECHO = (
    "import os\n"
    "while True:\n"
    "    data = os.read(0, 65536)\n"
    "    if not data:\n"
    "        break\n"
    "    os.write(1, data)\n"
)


def _placements() -> tuple[set[int], set[int]] | None:
    """Two CPU sets for the two ends of a round trip, each one core (``None``: affinity unknown here)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    return ({cores[0]}, {cores[1] if len(cores) > 1 else cores[0]})


def bare_round_trip(trips: int = 400, batches: int = 5, *, one_core: bool = False) -> float:
    """Seconds per round trip of one 300-byte line to a child that echoes it (blocking reads and
    writes, no parsing): what two processes pay to hand each other a message over pipes.

    The ends are pinned: each to a core of its own (the default: how the scheduler spreads a kit and
    its server over two idle cores), or both to one core (``one_core``: each write hands the core to
    the other end at once, several times quicker). Unpinned, a batch lands on either, and the best
    of them said one or the other from run to run. The best of ``batches`` batches of ``trips``: a
    floor is what the machine can do, and one batch that other work on the cores delays says nothing
    about the pipe."""
    line = b'{"jsonrpc":"2.0","id":1,"method":"host.emit","params":{"event":"' + b"x" * 240 + b'"}}\n'
    placements = _placements()
    mine = os.sched_getaffinity(0) if placements is not None else None
    child = subprocess.Popen([sys.executable, "-c", _ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    if placements is not None:
        here, there = placements
        os.sched_setaffinity(0, here)
        os.sched_setaffinity(child.pid, here if one_core else there)
    send, receive = child.stdin.fileno(), child.stdout.fileno()
    best = float("inf")
    try:
        for batch in range(batches + 1):  # the first batch warms the child up
            started = time.perf_counter()
            for _ in range(trips):
                os.write(send, line)
                got = 0
                while got < len(line):
                    got += len(os.read(receive, 65536))
            if batch:
                best = min(best, (time.perf_counter() - started) / trips)
        return best
    finally:
        if mine is not None:
            os.sched_setaffinity(0, mine)
        child.stdin.close()
        child.wait()


async def _server_start_stop() -> float:
    connection = SubprocessConnection(reference_stdio_command())
    started = time.perf_counter()
    await connection.start(kit_hello_params())
    begun = time.perf_counter() - started
    stopping = time.perf_counter()
    await connection.close()
    return begun + (time.perf_counter() - stopping)


def server_start_stop() -> float:
    """Seconds from spawning the reference stdio server to its hello answer, plus from bye to its exit."""
    return asyncio.run(_server_start_stop())
