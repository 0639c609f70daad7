"""Every performance ratio of the kit and the reference engine, measured side by side in one run.

Run with ``python benchmarks/run.py [--json FILE] [--quick] [--rounds N] [--only NAME[,NAME]]
[--from-source]``
(``--only`` names measures: durable, turn-cost, export, load, reconstruct, list, stdio, jobs,
selftest).  Each figure is measured next to its physical floor on the same machine, in alternating
rounds (round 1 of every measure, then round 2 of every measure, ...); the report gives the median
of each and their ratio, because absolute times on a shared machine mean little.  The floors:

* durable turns/s: raw SQLite commits of the same rows (WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE``,
  the same schema and indexes, one transaction per turn), measured in lock-step batches with the engine;
  beside it, for context, the same rows in the two commits the durability contract asks of a text turn
  (the pending usage record before the call, then its resolution with the turn);
* per-turn engine cost (CPU time of a turn): the cost at turn 10 (100 and 1000 are reported against it);
* export: a bare ``json.dumps`` of the same export document;
* load / reconstruct: a bare ``SELECT`` of the same rows plus ``json.loads`` of their content
  (these in-process figures and their floors are CPU time, like the per-turn cost; the rest is wall time;
  the engine pauses the cyclic GC for an export and a full load, so the floors run with it paused too:
  otherwise they pay for collecting the objects the round keeps alive and the ratio flatters the engine);
* start-up (``run --list``): ``python -c "import relavium_conformance, relavium_reference"``;
* stdio transport: the same corpus in-process (whole run and mean per case); beside them, for
  context, the CPU of both processes (kit and server) against the in-process run's, the extra time per
  JSON-RPC round trip against a bare pipe round trip between two processes, and the server's start
  and stop against ``python -c pass``;
* ``-j 2``: ``-j 1`` over stdio (reported only when the CLI has ``-j``);
* selftest: one ``run``.

Every process measured gets the kit's and the engine's modules compiled once, as an installed kit has
them (``pip install`` compiles them), whatever the shell's ``PYTHONDONTWRITEBYTECODE`` says;
``--from-source`` measures processes that each compile what they import.

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
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from relavium_reference import (
    AgentSession,
    AgentSnapshot,
    HistoryStore,
    SessionContext,
    SessionDeps,
    SqlitePersister,
)
from relavium_reference._model.gc_pause import gc_paused
from relavium_reference._model.llm import LlmRequest, StopChunk, StreamChunk, TextDelta, Usage
from relavium_reference._model.messages import AgentSessionRecord, parse_session_message
from relavium_reference._model.vocabulary import StopReason
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules.export_mapping import session_to_workflow
from relavium_reference._rules.history_rows import message_row
from relavium_reference._rules.resume import (
    ResumeMessage,
    SessionResumeState,
    TurnSpan,
    reconstruct_session_state,
)
from relavium_reference._rules.workflow_yaml import dump_yaml
from transports import (  # this folder (the script's own) is first on the path
    bare_round_trip,
    captured_messages,
    corpus_run,
    json_floor,
    server_start_stop,
)

BIN = Path(sys.executable).parent
CLI = str(BIN / "relavium-conformance") if (BIN / "relavium-conformance").exists() else None


# -- the world the engine runs in ------------------------------------------------------------------


class BareProvider:
    """A provider that costs next to nothing: one text chunk and a stop per invocation, no recording."""

    def __init__(self, reply: str) -> None:
        self._chunks: tuple[StreamChunk, ...] = (
            TextDelta(text=reply),
            StopChunk(stop_reason=StopReason.STOP, usage=Usage(input_tokens=10, output_tokens=5)),
        )

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._play()

    async def _play(self) -> AsyncIterator[StreamChunk]:
        for chunk in self._chunks:
            yield chunk


async def _ignore(_event: Any) -> None:
    return None


AGENT = AgentSnapshot(id="bench-agent", model="bench-model", provider="openai", system_prompt="Be brief.")
CONTEXT = SessionContext(working_dir=".")
USER_TEXT = "Please tell me about item {i}: what it is, where it came from, and why it matters to us."
REPLY_TEXT = (
    "Item {i} is an ordinary thing with a long history; it came from somewhere far away and it matters "
    "because people rely on it every day, often without noticing that they do."
)


def _deps(persister: SqlitePersister | None = None) -> SessionDeps:
    provider = BareProvider(REPLY_TEXT.format(i=0))
    return SessionDeps(
        resolve_provider=lambda _p, _m: provider, emit=_ignore, max_turns=1_000_000, persister=persister
    )


# -- measures ----------------------------------------------------------------------------------------


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


class _RawReplay:
    """A bare connection to a fresh copy of the store's schema that commits the engine's rows again."""

    def __init__(self, path: Path, session_names: list[str], session_row: tuple[Any, ...]) -> None:
        HistoryStore.open(path).close()  # the same schema, indexes and triggers
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.execute(
            f"INSERT INTO agent_sessions ({', '.join(session_names)}) "
            f"VALUES ({', '.join('?' * len(session_names))})",
            session_row,
        )
        self.sid = session_row[0]

    def totals(self) -> None:
        self.db.execute(
            "UPDATE agent_sessions SET total_input_tokens = total_input_tokens + 1 WHERE id = ?", (self.sid,)
        )


_PENDING = (
    "INSERT INTO session_usage (id, session_id, ordinal, purpose, provider, model, state, created_at, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)"
)
_RESOLVED = (
    "UPDATE session_usage SET state = ?, input_tokens = ?, output_tokens = ?, cost_microcents = ?, "
    "priced = ?, updated_at = ? WHERE id = ?"
)


def _one_commit_per_turn(raw: _RawReplay, insert: str, rows: list[Any]) -> float:
    """The issue's floor: a turn's two message rows and a totals update in one transaction."""
    db = raw.db
    started = time.perf_counter()
    for i in range(0, len(rows), 2):
        db.execute("BEGIN IMMEDIATE")
        db.executemany(insert, rows[i : i + 2])
        raw.totals()
        db.execute("COMMIT")
    return time.perf_counter() - started


def _contract_commits(raw: _RawReplay, insert: str, rows: list[Any], usage: list[Any]) -> float:
    """The commits the durability contract asks of a text turn (KD-USE-1): the pending usage record,
    durable before the provider call, then its resolution with the turn's rows and totals."""
    db = raw.db
    started = time.perf_counter()
    for turn, record in enumerate(usage):
        db.execute("BEGIN IMMEDIATE")
        db.execute(_PENDING, (*record[:6], record[11], record[11]))
        db.execute("COMMIT")
        db.execute("BEGIN IMMEDIATE")
        db.execute(_RESOLVED, (*record[6:11], record[12], record[0]))
        db.executemany(insert, rows[2 * turn : 2 * turn + 2])
        raw.totals()
        db.execute("COMMIT")
    return time.perf_counter() - started


def _replayed(raw: _RawReplay, statements: list[str]) -> float:
    """The store's own write statements of a batch (its SQL as SQLite expanded it), executed bare."""
    db = raw.db
    started = time.perf_counter()
    for statement in statements:
        db.execute(statement)
    return time.perf_counter() - started


def _session_row(path: Path) -> tuple[tuple[Any, ...], list[str]]:
    db = sqlite3.connect(path)
    cursor = db.execute("SELECT * FROM agent_sessions")
    row, names = cursor.fetchone(), [d[0] for d in cursor.description]
    db.close()
    return row, names


async def _durable_lockstep(
    directory: Path, turns: int, batch: int = 30
) -> tuple[float, float, float, float]:
    """Durable engine turns and their three floors, in lock-step batches so they share the machine's moment.

    Each batch runs ``batch`` engine turns into ``history.db``, then commits the rows those turns wrote
    again, bare: once the issue's way (one transaction per turn) and once in the contract's commits.
    fsync speed wanders by minutes on a shared machine; a batch of each side by side sees the same one.
    A shadow session (untimed, in a store of its own) runs the same turns with SQLite's trace callback
    on, and its write statements, exactly as the store sent them, are executed again bare: the floor of
    this store's own writes (its indexes, its cost and usage rows), with no engine and no Python around
    them.  Returns turns/s of the engine, of the one-commit floor, of the contract floor and of the
    store's own statements.
    """
    store = HistoryStore.open(directory / "history.db")
    shadow_store = HistoryStore.open(directory / "shadow.db")
    elapsed = {"engine": 0.0, "one": 0.0, "contract": 0.0, "statements": 0.0}
    try:
        session = AgentSession(agent=AGENT, context=CONTEXT, deps=_deps(SqlitePersister(store)))
        await session.start()
        shadow = AgentSession(agent=AGENT, context=CONTEXT, deps=_deps(SqlitePersister(shadow_store)))
        await shadow.start()
        statements: list[str] = []
        shadow_store._db.set_trace_callback(statements.append)  # the reference store's own connection
        shadow_row, shadow_names = _session_row(directory / "shadow.db")
        bare = _RawReplay(directory / "raw3.db", shadow_names, shadow_row)
        session_row, session_names = _session_row(directory / "history.db")
        src = sqlite3.connect(directory / "history.db")
        one = _RawReplay(directory / "raw1.db", session_names, session_row)
        contract = _RawReplay(directory / "raw2.db", session_names, session_row)
        names = [d[0] for d in src.execute("SELECT * FROM session_messages LIMIT 0").description]
        insert = f"INSERT INTO session_messages ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        done = 0
        while done < turns:
            count = min(batch, turns - done)
            started = time.perf_counter()
            for i in range(done, done + count):
                await session.send_message(USER_TEXT.format(i=i))
            elapsed["engine"] += time.perf_counter() - started
            rows = src.execute(
                "SELECT * FROM session_messages WHERE sequence_number >= ? ORDER BY sequence_number",
                (2 * done,),
            ).fetchall()
            usage = src.execute(
                "SELECT id, session_id, ordinal, purpose, provider, model, state, input_tokens, "
                "output_tokens, cost_microcents, priced, created_at, updated_at FROM session_usage "
                "WHERE ordinal >= ? ORDER BY ordinal",
                (done,),
            ).fetchall()
            if len(rows) != 2 * count or len(usage) != count:  # one attempt and two rows per text turn
                raise RuntimeError(f"{count} turns wrote {len(rows)} rows and {len(usage)} attempts")
            elapsed["one"] += _one_commit_per_turn(one, insert, rows)
            elapsed["contract"] += _contract_commits(contract, insert, rows, usage)
            statements.clear()
            for i in range(done, done + count):
                await shadow.send_message(USER_TEXT.format(i=i))
            writes = [q for q in statements if not q.lstrip().upper().startswith("SELECT")]
            elapsed["statements"] += _replayed(bare, writes)
            done += count
        src.close()
        one.db.close()
        contract.db.close()
        bare.db.close()
    finally:
        store.close()
        shadow_store.close()
    return (
        turns / elapsed["engine"],
        turns / elapsed["one"],
        turns / elapsed["contract"],
        turns / elapsed["statements"],
    )


async def _turns_in_memory(turns: int) -> float:
    session = AgentSession(agent=AGENT, context=CONTEXT, deps=_deps())
    await session.start()
    started = time.perf_counter()
    for i in range(turns):
        await session.send_message(USER_TEXT.format(i=i))
    return turns / (time.perf_counter() - started)


def _resume_state(exchanges: int) -> SessionResumeState:
    messages: list[ResumeMessage] = []
    for i in range(exchanges):
        messages.append(ResumeMessage(role="user", text=USER_TEXT.format(i=i)))
        messages.append(ResumeMessage(role="assistant", text=REPLY_TEXT.format(i=i)))
    return SessionResumeState(
        messages=tuple(messages),
        completed_turn_spans=tuple(TurnSpan(start=2 * i, end=2 * i + 2) for i in range(exchanges)),
        turn_count=exchanges,
        cumulative_cost_microcents=0,
    )


async def _cost_at_turn(turn: int, samples: int = 15) -> float:
    """Median CPU seconds of one turn when ``turn - 1`` completed turns are behind it.

    CPU time of this process, not wall time: on a shared machine a longer turn is more often
    descheduled, which wall time would charge to the engine.  The first turn after the resume
    validates the resumed history once (the boundary) and is not a sample.
    """
    session = AgentSession.resume(
        agent=AGENT, context=CONTEXT, deps=_deps(), state=_resume_state(turn - 1), session_id="bench"
    )
    await session.send_message(USER_TEXT.format(i=0))
    timings = []
    for i in range(1, samples + 1):
        started = time.process_time()
        await session.send_message(USER_TEXT.format(i=i))
        timings.append(time.process_time() - started)
    return statistics.median(timings)


_COSTS = (
    "import asyncio, json, sys, run\n"
    "print(json.dumps([asyncio.run(run._cost_at_turn(int(turn))) for turn in sys.argv[1:]]))"
)


def _costs_in_own_interpreter(turns: tuple[int, ...]) -> dict[int, float]:
    """:func:`_cost_at_turn` at each of ``turns``, in a new interpreter that has done nothing else.

    Not in this process: after the other measures (a 100k-message export, corpus runs) its heap is full
    of freed blocks, the resumed history's objects land scattered among them, and every walk over them
    misses the cache.  Measured that way, a turn at turn 1000 of the engine that walked its whole history
    per turn cost 6.2 ms after the transports measure against 2.4 ms in a fresh process (objects made
    after an in-process corpus run walk 30% slower than the same objects made before it; no collection,
    no other thread); the figure depended on the order of the measures, not on the engine alone.
    """
    completed = subprocess.run(
        [sys.executable, "-c", _COSTS, *map(str, turns)],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(zip(turns, json.loads(completed.stdout.splitlines()[-1]), strict=True))


def _big_store(directory: Path, messages: int) -> tuple[HistoryStore, str]:
    """A ``history.db`` holding one session of ``messages`` rows (completed user/assistant turns)."""
    store = HistoryStore.open(directory / f"big-{messages}.db")
    sid = f"bench-{messages}"
    created = datetime(2026, 1, 1, tzinfo=UTC)
    stamp = created.isoformat().replace("+00:00", "Z")
    store.create_session(
        AgentSessionRecord.model_validate(
            {
                "id": sid,
                "agentSlug": "bench-agent",
                "agentSnapshot": AGENT.to_wire(),
                "context": CONTEXT.to_wire(),
                "status": "active",
                "title": "A long benchmark session",
                "totalInputTokens": 0,
                "totalOutputTokens": 0,
                "totalCostMicrocents": 0,
                "createdAt": stamp,
                "updatedAt": stamp,
            }
        )
    )
    rows = []
    for seq in range(messages):
        user = seq % 2 == 0
        text = (USER_TEXT if user else REPLY_TEXT).format(i=seq // 2)
        at = (created + timedelta(milliseconds=seq)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        message = parse_session_message(
            {
                "id": str(uuid.UUID(int=seq)),
                "sessionId": sid,
                "sequenceNumber": seq,
                "role": "user" if user else "assistant",
                "content": [{"type": "text", "text": text}],
                **({} if user else {"modelId": "bench-model"}),
                "timestamp": at,
            }
        )
        rows.append(message_row(message, None if user else "stop"))
    db = sqlite3.connect(directory / f"big-{messages}.db", isolation_level=None)
    names = list(rows[0])
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        f"INSERT INTO session_messages ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})",
        rows,
    )
    db.execute("COMMIT")
    db.close()
    return store, sid


@gc_paused  # as the engine's load_full is (see the module docstring)
def _bare_select(path: Path, sid: str) -> float:
    started = time.process_time()
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT content_parts FROM session_messages WHERE session_id = ? ORDER BY sequence_number", (sid,)
    ).fetchall()
    parsed = [json.loads(row[0]) for row in rows]
    db.close()
    elapsed = time.process_time() - started
    assert parsed
    return elapsed


def _timed(function: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """CPU seconds of one in-process call (this process only: no wait for a core counts)."""
    started = time.process_time()
    value = function(*args)
    return time.process_time() - started, value


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


# -- the run -----------------------------------------------------------------------------------------


def _ratio_at_most(limit: float) -> Callable[[float], bool]:
    return lambda ratio: ratio <= limit


def _ratio_at_least(limit: float) -> Callable[[float], bool]:
    return lambda ratio: ratio >= limit


def build_figures(quick: bool, jobs: bool) -> dict[str, Figure]:
    export_sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    load_size = 10_000 if quick else 100_000
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
    if jobs:
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
            f"run of one case over stdio: kit start, server start, exit ({_ONE_CASE}; s)",
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
    if not quick:
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
        for part, label in _SELFTEST_PARTS.items():
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


_MESSAGES: list[str] = []  # every message of one stdio run, both ways (see transports.captured_messages)


def one_round(f: dict[str, Figure], quick: bool, work: Path, say: Callable[[str], None]) -> None:
    turns = 60 if quick else 300
    if "durable" in f:
        with tempfile.TemporaryDirectory(dir=work) as scratch:
            directory = Path(scratch)
            say("durable turns")
            durable, one, contract, statements = asyncio.run(_durable_lockstep(directory, turns))
            f["durable"].values.append(durable)
            f["durable"].floors.append(one)
            f["durable_contract"].values.append(durable)
            f["durable_contract"].floors.append(contract)
            f["durable_statements"].values.append(durable)
            f["durable_statements"].floors.append(statements)
            in_memory = asyncio.run(_turns_in_memory(turns))
            f["in_memory"].values.append(in_memory)
            f["in_memory"].floors.append(durable)
            # the engine's own work and the contract's commits, added with nothing else: what persistence
            # code could reach if it cost nothing and overlapped nothing (a session's turns are serial,
            # and the pending usage record must be durable before the provider is called)
            f["durable_ceiling"].values.append(1 / (1 / in_memory + 1 / contract))
            f["durable_ceiling"].floors.append(one)

    if "turn_1000" in f:
        say("per-turn cost (in an interpreter of its own)")
        cost = _costs_in_own_interpreter((10, 100, 1000))
        for turn in (100, 1000):
            f[f"turn_{turn}"].values.append(cost[turn] * 1000)
            f[f"turn_{turn}"].floors.append(cost[10] * 1000)

    sizes = sorted(int(key.split("_")[1]) for key in f if key.startswith("export_"))
    load_size = 10_000 if quick else 100_000
    reading = "load" in f or "reconstruct" in f
    if sizes or reading:
        _store_round(f, sizes, load_size if reading else None, work, say)

    if "startup" in f:
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

    if "stdio_run" in f:
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

    if "jobs" in f:
        say("-j 1 / -j 2")
        one = _timed_process(_cli("run", "--adapter", "reference-stdio", "-j", "1"))
        two = _timed_process(_cli("run", "--adapter", "reference-stdio", "-j", "2"))
        fixed = _timed_process(_cli("run", "--adapter", "reference-stdio", "--select", _ONE_CASE), check=True)
        f["jobs"].values.append(one)
        f["jobs"].floors.append(two)
        # what no -j N can split: the kit's start (imports, the corpus), one server's start (N start at
        # once, on N cores), the exit; the rest of a -j 1 run is cases, which at best halve on 2 cores
        f["jobs_fixed"].values.append(fixed)
        f["jobs_fixed"].floors.append(one)
        f["jobs_least"].values.append(one)
        f["jobs_least"].floors.append(fixed + max(one - fixed, 0.0) / 2)

    if "selftest" in f:
        say("selftest")
        run_time = _timed_process(_cli("run"))
        selftest_time = _timed_process(_cli("selftest"))
        f["selftest"].values.append(selftest_time)
        f["selftest"].floors.append(run_time)
        f["total"].values.append(run_time + selftest_time)
        f["total"].floors.append(20.0)
        parts = _selftest_parts()
        cpu = parts["cpu"]
        for part in _SELFTEST_PARTS:
            f[f"selftest_{part}"].values.append(cpu[part])
            f[f"selftest_{part}"].floors.append(cpu["reference"])
        f["selftest_least"].values.append(run_time + sum(cpu.values()) / (os.cpu_count() or 1))
        f["selftest_least"].floors.append(20.0)


_ONE_CASE = "lifecycle/abort-before-provider"  # a short case: its run is the fixed costs, nearly alone

_SELFTEST_PARTS = {
    "broken": "the broken implementations",
    "alternatives": "the compliant alternatives",
    "store": "the store profile's breaks",
    "misbehaviours": "the misbehaving programs (kit + servers)",
}


def _selftest_parts() -> dict[str, Any]:
    """The CPU of each part of the selftest, from ``selftest_parts.py`` in a fresh interpreter."""
    script = Path(__file__).with_name("selftest_parts.py")
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, encoding="utf-8"
    )
    parts: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return parts


def _store_round(
    f: dict[str, Figure], sizes: list[int], load_size: int | None, work: Path, say: Callable[[str], None]
) -> None:
    """Export of each size in ``sizes`` and load/reconstruct at ``load_size``, from one store each."""
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        directory = Path(scratch)
        for size in sorted({*sizes, *([load_size] if load_size else [])}):
            say(f"store of {size:,} messages")
            store, sid = _big_store(directory, size)
            try:
                load_time, (record, messages) = _timed(store.load_full, sid)
                if size == load_size:
                    floor = _bare_select(directory / f"big-{size}.db", sid)
                    if "load" in f:
                        f["load"].values.append(load_time)
                        f["load"].floors.append(floor)
                    if "reconstruct" in f:
                        rebuild, _state = _timed(reconstruct_session_state, record, messages)
                        f["reconstruct"].values.append(rebuild)
                        f["reconstruct"].floors.append(floor)
                if size in sizes:
                    say(f"export of {size:,} messages")
                    export_time, text = _timed(_export, record, messages)
                    data = document_to_data(session_to_workflow(record, messages))
                    dumps_time, _ = _timed(gc_paused(json.dumps), data)
                    f[f"export_{size}"].values.append(export_time)
                    f[f"export_{size}"].floors.append(dumps_time)
                    say(f"  {len(text) / 1e6:.1f} MB of YAML")
            finally:
                store.close()


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


def _export(record: Any, messages: Any) -> str:
    return dump_yaml(document_to_data(session_to_workflow(record, messages)))


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
        _cli("run", "--adapter", "reference-stdio", "--select", _ONE_CASE),
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
