"""A durable session store on PostgreSQL, shared by any number of runner replicas.

Every replica opens :meth:`PostgresSessionStore.open` with the same connection string and the same
schema name; the store creates that PostgreSQL schema and its tables on first use and migrates them
(a version table, under an advisory lock, so replicas starting together migrate once).  Different schema
names in one database are different stores, which is how tests and deployments share a server.

It declares ``durability: durable`` and ``placements.subagent.durability: durable``.

* **Ownership** is a table keyed by session id: ``register`` (and :meth:`claim`, which also answers the
  winner) is ``INSERT ... ON CONFLICT DO NOTHING`` and the read-back in one transaction, so the first
  write wins across replicas by the database's uniqueness, never by read-then-write.  A first write
  whose owner is neither text nor ``None`` is refused (``invalid_owner``); later ones change nothing.
* **Incarnation** comes from a sequence of the schema, drawn by the ``INSERT`` that creates the row.
* **Appends** lock the session's row (``SELECT ... FOR UPDATE``), so appends from two replicas are
  serialised; one made from a view another replica has moved past is refused with ``conflict`` and
  writes nothing.  The history stays one chain.
* **Fork** copies the committed entries and the ownership row in one transaction, holding the source's
  row so no append lands half-way through the copy.
* **Placements**: as the SQLite store.  ``release`` of a placed id deletes its entries, its row and then
  its ownership row in one transaction (the ownership row goes only if the history delete succeeded);
  ``release`` of an ordinary session drops the cached view and keeps the history.
* ``pin`` and ``unpin`` are no-ops: this store never evicts an idle session.

Connection problems (an unset, malformed or unreachable connection string, a schema written by a newer
version of this store) are :class:`PostgresStoreError`, whose message names the connection string with
any password replaced by ``***``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from relavium_reference._host.session_store_live import (
    INHERIT,
    AcquiredSession,
    Inherit,
    StoreSession,
    iso_of_ms,
    mint_id,
)
from relavium_reference._host.session_store_memory import system_ms
from relavium_reference._model.errors import RelaviumError
from relavium_reference._model.session_store_shapes import (
    UNKNOWN,
    Durability,
    PlacedRow,
    SessionError,
    SessionErrorCode,
    SessionMetadata,
    SessionPlacement,
    StoreSummary,
    Unknown,
)
from relavium_reference._rules.pg_dsn import check_schema_name, redact_dsn
from relavium_reference._rules.store_text import (
    check_acquire,
    check_store_text,
    owner_problem,
    task_run_keepable,
)

__all__ = [
    "SCHEMA_VERSION",
    "PostgresSessionStore",
    "PostgresStoreError",
    "check_connection",
    "drop_schema",
]

SCHEMA_VERSION = 1

_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE SEQUENCE {s}.store_incarnation",
        """CREATE TABLE {s}.store_sessions (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            incarnation TEXT NOT NULL DEFAULT ('pg-' || nextval('{s}.store_incarnation')::text),
            forked_from TEXT,
            last_active_at BIGINT NOT NULL,
            last_task_id TEXT,
            last_task_run_id TEXT,
            placed BOOLEAN NOT NULL DEFAULT FALSE,
            placed_at BIGINT,
            placement_scope TEXT,
            placement_handle TEXT,
            placement_parent TEXT,
            placement_root TEXT
        )""",
        """CREATE TABLE {s}.store_entries (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            entry TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE TABLE {s}.store_owners (session_id TEXT PRIMARY KEY, owner TEXT)",
        "CREATE INDEX store_sessions_listing ON {s}.store_sessions (placed, last_active_at DESC)",
    ),
}
"""Version -> the statements that bring a schema from the version before to it (never edited once
released: a new version appends its own)."""


class PostgresStoreError(RelaviumError):
    """The store cannot reach its database or prepare its schema (the message names the connection
    string, password redacted)."""


def _parse(dsn: str) -> str:
    """The redacted string, once ``dsn`` reads as a connection string."""
    where = redact_dsn(dsn)
    if not dsn.strip():
        raise PostgresStoreError("no PostgreSQL connection string was given")
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise PostgresStoreError(f"malformed PostgreSQL connection string {where!r}: {exc}") from None
    return where


def check_connection(dsn: str, timeout: float = 10.0) -> None:
    """Connect once, blocking (a program's start-up check): :class:`PostgresStoreError` if it fails."""
    where = _parse(dsn)
    try:
        psycopg.connect(dsn, connect_timeout=max(1, int(timeout))).close()
    except (psycopg.Error, OSError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise PostgresStoreError(f"cannot connect to PostgreSQL at {where!r}: {detail}") from None


async def _connect_once(dsn: str, timeout: float) -> None:
    """Fail early and clearly: one plain connection, so the error is the server's, not the pool's."""
    where = _parse(dsn)
    try:
        async with asyncio.timeout(timeout):
            conn = await psycopg.AsyncConnection.connect(dsn, connect_timeout=max(1, int(timeout)))
    except (psycopg.Error, OSError, TimeoutError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise PostgresStoreError(f"cannot connect to PostgreSQL at {where!r}: {detail}") from None
    await conn.close()


async def _migrate(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    q = f'"{schema}"'
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"relavium-store:{schema}",))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {q}.store_version"
            " (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)"
        )
        cur = await conn.execute(f"SELECT version FROM {q}.store_version")
        row = await cur.fetchone()
        current = 0 if row is None else int(row[0])
        if current > SCHEMA_VERSION:
            raise PostgresStoreError(
                f"schema {schema!r} is at version {current}; this store knows up to {SCHEMA_VERSION}"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[version]:
                await conn.execute(statement.replace("{s}", q))
        await conn.execute(
            f"INSERT INTO {q}.store_version (one, version) VALUES (TRUE, %s)"
            " ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version",
            (SCHEMA_VERSION,),
        )


async def drop_schema(dsn: str, schema: str) -> None:
    """Drop a store's schema and everything in it (tests, and the kit's per-case stores)."""
    problem = check_schema_name(schema)
    if problem:
        raise PostgresStoreError(problem)
    await _connect_once(dsn, 10.0)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class PostgresSessionStore:
    """The durable store: one PostgreSQL schema, any number of replicas over it.

    Every id, source id, owner and placement name it is handed must be a store text
    (``_rules/store_text.py``); any other value is refused with ``InvalidInputError``.
    """

    durability: Durability | None = "durable"
    placements: Mapping[str, Durability] | None = {"subagent": "durable"}

    def __init__(self, pool: AsyncConnectionPool[Any], schema: str, clock: Callable[[], int]) -> None:
        self._pool: AsyncConnectionPool[Any] | None = pool
        self.schema = schema
        self._q = f'"{schema}"'
        self._clock = clock
        self._live: dict[str, StoreSession] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    async def open(
        cls,
        dsn: str,
        schema: str,
        *,
        clock: Callable[[], int] = system_ms,
        max_connections: int = 4,
        timeout: float = 10.0,
    ) -> PostgresSessionStore:
        """Connect, create or migrate ``schema``, and return the store (:class:`PostgresStoreError` if
        the database cannot be reached or the schema cannot be used)."""
        problem = check_schema_name(schema)
        if problem:
            raise PostgresStoreError(problem)
        await _connect_once(dsn, timeout)
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            dsn, min_size=1, max_size=max_connections, open=False, kwargs={"autocommit": True}
        )
        try:
            await pool.open(wait=True, timeout=timeout)
            async with pool.connection() as conn:
                await _migrate(conn, schema)
        except BaseException as exc:
            await pool.close()
            if isinstance(exc, psycopg.Error):
                raise PostgresStoreError(
                    f"cannot prepare schema {schema!r} at {redact_dsn(dsn)!r}: {exc}"
                ) from None
            raise
        return cls(pool, schema, clock)

    # --- plumbing ----------------------------------------------------------------------------------

    @property
    def pool(self) -> AsyncConnectionPool[Any]:
        if self._pool is None:
            raise SessionError(SessionErrorCode.NOT_FOUND, "the store is disposed")
        return self._pool

    async def _one(self, statement: str, params: tuple[Any, ...]) -> dict[str, Any] | None:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(statement.replace("{s}", self._q), params)
            row: dict[str, Any] | None = await cur.fetchone()
            return row

    async def _all(self, statement: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(statement.replace("{s}", self._q), params)
            rows: list[dict[str, Any]] = await cur.fetchall()
            return rows

    async def _exec(self, statement: str, params: tuple[Any, ...]) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(statement.replace("{s}", self._q), params)

    async def _append(self, session_id: str, entries: list[dict[str, Any]], base: int | None = None) -> None:
        q = self._q
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                f"SELECT 1 FROM {q}.store_sessions WHERE id = %s FOR UPDATE", (session_id,)
            )
            if await cur.fetchone() is None:
                raise SessionError(SessionErrorCode.NOT_FOUND, f"no session {session_id}")
            cur = await conn.execute(
                f"SELECT COALESCE(MAX(seq), 0) FROM {q}.store_entries WHERE session_id = %s", (session_id,)
            )
            found = await cur.fetchone()
            top = int(found[0]) if found else 0
            if base is not None and top != base:  # another replica appended since this view was read
                raise SessionError(SessionErrorCode.CONFLICT, f"{session_id} moved on since this view")
            async with conn.cursor() as writer:
                await writer.executemany(
                    f"INSERT INTO {q}.store_entries (session_id, seq, entry) VALUES (%s, %s, %s)",
                    [(session_id, top + i + 1, json.dumps(e, sort_keys=True)) for i, e in enumerate(entries)],
                )

    async def _entries(self, conn: psycopg.AsyncConnection[Any], session_id: str) -> list[dict[str, Any]]:
        cur = await conn.execute(
            f"SELECT entry FROM {self._q}.store_entries WHERE session_id = %s ORDER BY seq", (session_id,)
        )
        return [json.loads(r[0]) for r in await cur.fetchall()]

    # --- the face ----------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self._live)

    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        check_acquire(session_id, placement)
        if session_id is None:
            session_id = mint_id()
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            live = await self._acquire(session_id, require_existing, placement)
            return AcquiredSession(live, session_id)

    async def _acquire(
        self, session_id: str, require_existing: bool, placement: SessionPlacement | None
    ) -> StoreSession:
        q = self._q
        now = self._clock()
        async with self.pool.connection() as conn, conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(f"SELECT * FROM {q}.store_sessions WHERE id = %s", (session_id,))
            row = await cur.fetchone()
            created = False
            if row is None:
                if require_existing:
                    raise SessionError(SessionErrorCode.NOT_FOUND, f"no session {session_id}")
                await cur.execute(
                    f"INSERT INTO {q}.store_sessions (id, created_at, last_active_at, placed, placed_at,"
                    " placement_scope, placement_handle, placement_parent, placement_root)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
                    (
                        session_id,
                        iso_of_ms(now),
                        now,
                        placement is not None,
                        now if placement is not None else None,
                        placement.scope if placement else None,
                        placement.handle if placement else None,
                        placement.parent_session_id if placement else None,
                        placement.root_session_id if placement else None,
                    ),
                )
                created = await cur.fetchone() is not None
                await cur.execute(f"SELECT * FROM {q}.store_sessions WHERE id = %s", (session_id,))
                row = await cur.fetchone()
                assert row is not None  # inserted by this call or by the replica it lost to
            if row["placed"] and not created and not require_existing and placement is None:
                raise SessionError(SessionErrorCode.PLACEMENT_REFUSED, f"{session_id} is a placed session")
            await conn.execute(
                f"UPDATE {q}.store_sessions SET last_active_at = %s WHERE id = %s", (now, session_id)
            )
            live = self._live.get(session_id)
            if live is None or live.metadata.incarnation != row["incarnation"]:
                metadata = SessionMetadata(
                    session_id, row["created_at"], row["incarnation"], row["forked_from"]
                )
                live = self._live[session_id] = StoreSession(
                    metadata, await self._entries(conn, session_id), self._append
                )
            return live

    async def touch(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        await self._exec(
            "UPDATE {s}.store_sessions SET last_active_at = %s WHERE id = %s", (self._clock(), session_id)
        )

    async def release(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._live.pop(session_id, None)
        q = self._q
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                f"SELECT placed FROM {q}.store_sessions WHERE id = %s FOR UPDATE", (session_id,)
            )
            row = await cur.fetchone()
            if row is None or not row[0]:
                return  # an ordinary session: history retained, only the live view goes
            await conn.execute(f"DELETE FROM {q}.store_entries WHERE session_id = %s", (session_id,))
            await conn.execute(f"DELETE FROM {q}.store_sessions WHERE id = %s", (session_id,))
            await conn.execute(  # only once the history is gone (the statements above succeeded)
                f"DELETE FROM {q}.store_owners WHERE session_id = %s"
                f" AND NOT EXISTS (SELECT 1 FROM {q}.store_entries WHERE session_id = %s)",
                (session_id, session_id),
            )

    async def forget(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._live.pop(session_id, None)

    async def pin(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        return None  # never idle-evicts: nothing to protect against

    async def unpin(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        return None

    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if not task_run_keepable(session_id, task_id, run_id):
            return  # best effort, never throws: a note no store could keep is dropped
        try:
            await self._exec(
                "UPDATE {s}.store_sessions SET last_task_id = %s, last_task_run_id = %s, last_active_at = %s"
                " WHERE id = %s",
                (task_id, run_id, self._clock(), session_id),
            )
        except Exception:  # best effort: never throws
            return

    async def list_sessions(self) -> list[StoreSummary]:
        rows = await self._all(
            "SELECT id, last_active_at, created_at, last_task_id, last_task_run_id, forked_from"
            " FROM {s}.store_sessions WHERE NOT placed ORDER BY last_active_at DESC, id"
        )
        return [
            StoreSummary(
                r["id"],
                r["last_active_at"],
                r["created_at"],
                r["last_task_id"],
                r["last_task_run_id"],
                r["forked_from"],
            )
            for r in rows
        ]

    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        if kind != "subagent":
            return []
        now = self._clock()
        rows = await self._all(
            "SELECT id, placed_at, placement_scope, placement_handle, last_active_at FROM {s}.store_sessions"
            " WHERE placed ORDER BY placed_at, id"
        )
        out = []
        for r in rows:
            if scope is not None and r["placement_scope"] != scope:
                continue
            age = now - (r["last_active_at"] or r["placed_at"])
            if older_than_ms is not None and age < older_than_ms:
                continue
            out.append(PlacedRow(r["id"], r["placed_at"], r["placement_scope"], r["placement_handle"]))
        return out

    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        check_store_text(source_id, "sourceId")
        if isinstance(owner, str):
            check_store_text(owner, "owner")
        new_id = mint_id()
        now = self._clock()
        q = self._q
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                f"SELECT 1 FROM {q}.store_sessions WHERE id = %s FOR SHARE", (source_id,)
            )
            if await cur.fetchone() is None:
                return None
            await conn.execute(
                f"INSERT INTO {q}.store_sessions (id, created_at, forked_from, last_active_at)"
                " VALUES (%s, %s, %s, %s)",
                (new_id, iso_of_ms(now), source_id, now),
            )
            await conn.execute(
                f"INSERT INTO {q}.store_entries (session_id, seq, entry)"
                f" SELECT %s, seq, entry FROM {q}.store_entries WHERE session_id = %s",
                (new_id, source_id),
            )
            cur = await conn.execute(
                f"SELECT owner FROM {q}.store_owners WHERE session_id = %s", (source_id,)
            )
            source = await cur.fetchone()
            fork_owner = _fork_owner(owner, source)
            if fork_owner is not None:
                await conn.execute(
                    f"INSERT INTO {q}.store_owners (session_id, owner) VALUES (%s, %s)",
                    (new_id, fork_owner[0]),
                )
        return new_id

    async def owner_of(self, session_id: str) -> str | Unknown | None:
        check_store_text(session_id, "sessionId")
        row = await self._one("SELECT owner FROM {s}.store_owners WHERE session_id = %s", (session_id,))
        return UNKNOWN if row is None else row["owner"]

    async def claim(self, session_id: str, owner: object) -> str | None:
        """Register ``owner`` first-write-wins and read the winner back, in one transaction."""
        q = self._q
        async with self.pool.connection() as conn, conn.transaction():
            if (owner is not None and not isinstance(owner, str)) or owner_problem(owner) is not None:
                cur = await conn.execute(
                    f"SELECT owner FROM {q}.store_owners WHERE session_id = %s", (session_id,)
                )
                row = await cur.fetchone()
                if row is None and isinstance(owner, str):
                    check_store_text(owner, "owner")  # a first write of an owner no store can keep
                if row is None:
                    raise SessionError(SessionErrorCode.INVALID_OWNER, "an owner is a string or null")
                return None if row[0] is None else str(row[0])
            await conn.execute(
                f"INSERT INTO {q}.store_owners (session_id, owner) VALUES (%s, %s)"
                " ON CONFLICT (session_id) DO NOTHING",
                (session_id, owner),
            )
            cur = await conn.execute(
                f"SELECT owner FROM {q}.store_owners WHERE session_id = %s", (session_id,)
            )
            winner = await cur.fetchone()
            assert winner is not None  # this call's row or the one it lost to; rows are never updated
            return None if winner[0] is None else str(winner[0])

    async def register(self, session_id: str, owner: object) -> None:
        check_store_text(session_id, "sessionId")
        await self.claim(session_id, owner)

    async def incarnation_of(self, session_id: str) -> str | Unknown:
        check_store_text(session_id, "sessionId")
        row = await self._one("SELECT incarnation FROM {s}.store_sessions WHERE id = %s", (session_id,))
        return UNKNOWN if row is None else str(row["incarnation"])

    async def dispose(self) -> None:
        self._live.clear()
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await pool.close()
            except Exception:
                return


def _fork_owner(owner: str | Inherit | None, source: tuple[Any, ...] | None) -> tuple[str | None] | None:
    """The fork's ownership row (a 1-tuple) or none: never weaker than the source's."""
    if isinstance(owner, str):
        return (owner,)
    if source is not None and source[0] is not None:
        return (str(source[0]),)
    if source is not None or owner is None:
        return (None,)
    return None  # a source with no row mints none
