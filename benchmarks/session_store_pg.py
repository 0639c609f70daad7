"""The PostgreSQL session store's throughput beside its floor (issue 36, goal 5).

```sh
RELAVIUM_PG_DSN='host=127.0.0.1 port=5432 dbname=test user=postgres' \
    .venv/bin/python benchmarks/session_store_pg.py [--ops N] [--rounds R] [--json FILE]
```

Three operations, each counted per second of wall time:

* **acquire**: a new session, created and read back (the store's one transaction of a first acquire);
* **register**: a first-write-wins ownership row and its read-back;
* **append**: one turn committed to a session (four chained entries: a user message, an assistant
  message, a tool call and its result), from a view at the stored leaf.

Each is measured three ways: the **floor** (the very statements the store sends, in the same
transactions, sent bare with psycopg on one connection: no pool, no session objects, no JSON of the
kit), the **store** (one :class:`PostgresSessionStore`, calls one after another), and **2 and 4
replicas** (that many processes, each with its own store over one schema, started together; the figure
is every replica's operations over the wall time of the slowest).  The rounds alternate the measures
and each figure is the median of its rounds.  Nothing here is a test: no time is asserted, exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from typing import Any

import psycopg

from relavium_reference._host.session_store_live import iso_of_ms
from relavium_reference._host.session_store_postgres import PostgresSessionStore, drop_schema

OPERATIONS = ("acquire", "register", "append")


def _turn(leaf: str | None, tag: str) -> list[dict[str, Any]]:
    out = []
    for kind in ("user", "assistant", "tool_call", "tool_result"):
        ident = f"{tag}-{kind}"
        out.append({"id": ident, "parentId": leaf, "type": "message", "role": kind, "text": "x" * 200})
        leaf = ident
    return out


# --- the store ---------------------------------------------------------------------------------------


async def store_ops(dsn: str, schema: str, operation: str, count: int, tag: str) -> float:
    """Seconds for ``count`` of ``operation`` through one store (sessions prepared untimed)."""
    store = await PostgresSessionStore.open(dsn, schema, max_connections=2)
    try:
        ids = [f"{tag}-{i}" for i in range(count)]
        views: list[Any] = []
        if operation == "append":
            for sid in ids:
                views.append((await store.acquire(sid)).session)
        started = time.perf_counter()
        if operation == "acquire":
            for sid in ids:
                await store.acquire(sid)
        elif operation == "register":
            for sid in ids:
                await store.register(sid, "owner")
        else:
            for i, view in enumerate(views):
                await view.append(_turn(None, f"{tag}-t{i}"))
        return time.perf_counter() - started
    finally:
        await store.dispose()


# --- the floor: the same statements, bare ----------------------------------------------------------------


async def floor_ops(dsn: str, schema: str, operation: str, count: int, tag: str) -> float:
    q = f'"{schema}"'
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        ids = [f"{tag}-{i}" for i in range(count)]
        if operation == "append":
            for sid in ids:
                await conn.execute(
                    f"INSERT INTO {q}.store_sessions (id, created_at, last_active_at) VALUES (%s, %s, 0)",
                    (sid, iso_of_ms(0)),
                )
        started = time.perf_counter()
        for i, sid in enumerate(ids):
            async with conn.transaction():
                if operation == "acquire":
                    await (
                        await conn.execute(f"SELECT * FROM {q}.store_sessions WHERE id = %s", (sid,))
                    ).fetchone()
                    cur = await conn.execute(
                        f"INSERT INTO {q}.store_sessions (id, created_at, last_active_at) VALUES (%s, %s, %s)"
                        " ON CONFLICT (id) DO NOTHING RETURNING id",
                        (sid, iso_of_ms(i), i),
                    )
                    await cur.fetchone()
                    await (
                        await conn.execute(f"SELECT * FROM {q}.store_sessions WHERE id = %s", (sid,))
                    ).fetchone()
                    await conn.execute(
                        f"UPDATE {q}.store_sessions SET last_active_at = %s WHERE id = %s", (i, sid)
                    )
                    cur = await conn.execute(
                        f"SELECT entry FROM {q}.store_entries WHERE session_id = %s ORDER BY seq", (sid,)
                    )
                    await cur.fetchall()
                elif operation == "register":
                    await conn.execute(
                        f"INSERT INTO {q}.store_owners (session_id, owner) VALUES (%s, %s)"
                        " ON CONFLICT (session_id) DO NOTHING",
                        (sid, "owner"),
                    )
                    cur = await conn.execute(
                        f"SELECT owner FROM {q}.store_owners WHERE session_id = %s", (sid,)
                    )
                    await cur.fetchone()
                else:
                    await conn.execute(f"SELECT 1 FROM {q}.store_sessions WHERE id = %s FOR UPDATE", (sid,))
                    cur = await conn.execute(
                        f"SELECT COALESCE(MAX(seq), 0) FROM {q}.store_entries WHERE session_id = %s", (sid,)
                    )
                    await cur.fetchone()
                    async with conn.cursor() as writer:
                        await writer.executemany(
                            f"INSERT INTO {q}.store_entries (session_id, seq, entry) VALUES (%s, %s, %s)",
                            [
                                (sid, n + 1, json.dumps(e, sort_keys=True))
                                for n, e in enumerate(_turn(None, f"{tag}-t{i}"))
                            ],
                        )
        return time.perf_counter() - started


# --- replicas: processes started together --------------------------------------------------------------


def _replica(dsn: str, schema: str, operation: str, count: int, tag: str, go: Any, out: Any) -> None:
    async def main() -> tuple[float, float]:
        store = await PostgresSessionStore.open(dsn, schema, max_connections=2)
        ids = [f"{tag}-{i}" for i in range(count)]
        views = [(await store.acquire(sid)).session for sid in ids] if operation == "append" else []
        go.wait()
        started = time.perf_counter()
        for i, sid in enumerate(ids):
            if operation == "acquire":
                await store.acquire(sid)
            elif operation == "register":
                await store.register(sid, "owner")
            else:
                await views[i].append(_turn(None, f"{tag}-t{i}"))
        ended = time.perf_counter()
        await store.dispose()
        return started, ended

    out.put(asyncio.run(main()))


def replicas_ops(dsn: str, schema: str, operation: str, count: int, tag: str, replicas: int) -> float:
    """Wall seconds from the first replica's start to the last one's end (``count`` each)."""
    context = multiprocessing.get_context("spawn")
    go, out = context.Event(), context.Queue()
    workers = [
        context.Process(target=_replica, args=(dsn, schema, operation, count, f"{tag}-r{r}", go, out))
        for r in range(replicas)
    ]
    for worker in workers:
        worker.start()
    time.sleep(0.5 + 0.5 * replicas)  # every replica opened and prepared (the start is not timed)
    go.set()
    spans = [out.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join()
    # perf_counter is CLOCK_MONOTONIC on Linux: comparable across the processes of one machine
    return float(max(end for _, end in spans) - min(start for start, _ in spans))


# --- the run -----------------------------------------------------------------------------------------------


async def _prepare(dsn: str, schema: str) -> None:
    store = await PostgresSessionStore.open(dsn, schema)
    await store.dispose()


WAYS = ("floor", "store", "2 replicas", "4 replicas")


def _seconds(way: str, dsn: str, schema: str, op: str, ops: int, tag: str) -> float:
    """Wall seconds ``way`` takes for ``ops`` operations (the replicas: for ``ops`` of all of theirs)."""
    if way == "floor":
        return asyncio.run(floor_ops(dsn, schema, op, ops, f"{tag}f"))
    if way == "store":
        return asyncio.run(store_ops(dsn, schema, op, ops, f"{tag}s"))
    count = int(way.split()[0])
    return replicas_ops(dsn, schema, op, ops, f"{tag}r{count}", count) / count


def measure(dsn: str, ops: int, rounds: int) -> dict[str, Any]:
    schema = f"relavium_bench_{uuid.uuid4().hex[:12]}"
    asyncio.run(_prepare(dsn, schema))
    values: dict[str, dict[str, list[float]]] = {op: {} for op in OPERATIONS}
    try:
        for round_no in range(rounds):
            for op in OPERATIONS:
                tag = f"{op}{round_no}"
                for way in WAYS:
                    seconds = _seconds(way, dsn, schema, op, ops, tag)
                    values[op].setdefault(way, []).append(ops / seconds)
    finally:
        asyncio.run(drop_schema(dsn, schema))
    figures: dict[str, Any] = {}
    for op, ways_values in values.items():
        medians = {way: statistics.median(v) for way, v in ways_values.items()}
        figures[op] = {
            **{f"{way} per s": round(m, 1) for way, m in medians.items()},
            "store / floor": round(medians["store"] / medians["floor"], 3),
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ops", type=int, default=300, help="operations per measure (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the measures (default 3)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    dsn = os.environ.get("RELAVIUM_PG_DSN", "").strip()
    if not dsn:
        print("session_store_pg: RELAVIUM_PG_DSN is not set (a libpq connection string)", file=sys.stderr)
        return 2
    figures = measure(dsn, args.ops, args.rounds)
    result = {
        "ops": args.ops,
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "note": "replica figures are totals: all replicas' operations over their common wall time",
        "figures": figures,
    }
    print(f"{'operation':10} {'floor/s':>9} {'store/s':>9} {'ratio':>6} {'2 repl/s':>9} {'4 repl/s':>9}")
    for op, f in figures.items():
        print(
            f"{op:10} {f['floor per s']:9.1f} {f['store per s']:9.1f} {f['store / floor']:6.2f}"
            f" {f['2 replicas per s']:9.1f} {f['4 replicas per s']:9.1f}"
        )
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
