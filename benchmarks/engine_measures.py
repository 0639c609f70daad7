"""The benchmark's in-process measures of the reference engine, each beside its floor.

Durable turns against raw SQLite commits of the same rows (in lock-step batches), the per-turn cost
deep into a session (in an interpreter of its own), and the export, load and reconstruction of a long
session against ``json.dumps`` and a bare ``SELECT``.  These figures are CPU time of this process,
except the durable ones (wall time: a commit waits for the disk).  The engine pauses the cyclic GC
for an export, a full load and a reconstruction, so their floors run with it paused too: otherwise they
pay for collecting the objects the round keeps alive, and the ratio flatters the engine.
``benchmarks/README.md`` says why each floor is the one it is.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from figures import Figure
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


async def durable_lockstep(directory: Path, turns: int, batch: int = 30) -> tuple[float, float, float, float]:
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


async def turns_in_memory(turns: int) -> float:
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


async def cost_at_turn(turn: int, samples: int = 15) -> float:
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
    "import asyncio, json, sys, engine_measures\n"
    "print(json.dumps([asyncio.run(engine_measures.cost_at_turn(int(turn))) for turn in sys.argv[1:]]))"
)


def costs_in_own_interpreter(turns: tuple[int, ...]) -> dict[int, float]:
    """:func:`cost_at_turn` at each of ``turns``, in a new interpreter that has done nothing else.

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


@gc_paused  # as the engine's load_full is (see the module's docstring)
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


def _export(record: Any, messages: Any) -> str:
    return dump_yaml(document_to_data(session_to_workflow(record, messages)))


def store_round(
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
