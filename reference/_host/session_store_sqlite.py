"""A durable session store in SQLite (``sessions.db`` in a directory the deployment names).

It declares ``durability: durable`` and ``placements.subagent.durability: durable``; a new instance over
the same file (another connection, another process, a restart) reaches every session.

* **Ownership** is a table whose primary key is the session id: ``register`` is an
  ``INSERT ... ON CONFLICT DO NOTHING``, so the first write wins across connections and processes by
  the database's own uniqueness, never by read-then-write.  An opening registration with an owner
  that is not text (and not ``None``) fails loudly (``invalid_owner``); any later one changes nothing.
* **Incarnation** is minted in the ``INSERT`` that creates the row and never rewritten.
* **Placements** (all six obligations): a placed row carries its tuple, written once at creation;
  ``list`` never shows it; ``release`` of a placed id deletes entries, then the row, then the ownership
  row, in one transaction; a claim-form acquire of a placed id is refused with ``placement_refused``.
* **Fork** copies the committed entries (the live session's staged turn is not in the database) and
  the ownership row by inheritance, in one transaction.
* ``release`` of an ordinary session drops only the cached view (history is retained, which the
  declaration allows), so ``forget`` and ``release`` agree for it; ``pin`` and ``unpin`` are no-ops (no
  idle sweep).

* **Appends** from several processes are serialised by the write lock, and one made from a view that
  another process has moved past (the stored history no longer ends where the view does) is refused
  with ``conflict``: the history stays one chain, never two interleaved turns.

Every writing transaction is ``BEGIN IMMEDIATE`` on a connection opened with ``isolation_level=None``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from relavium_reference._host.session_store_live import (
    INHERIT,
    AcquiredSession,
    Inherit,
    StoreSession,
    iso_of_ms,
    mint_id,
)
from relavium_reference._host.session_store_memory import system_ms
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
from relavium_reference._rules.store_text import (
    check_acquire,
    check_store_text,
    owner_problem,
    task_run_keepable,
)

__all__ = ["STORE_FILE", "SqliteSessionStore"]

STORE_FILE = "sessions.db"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS store_sessions (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        incarnation TEXT NOT NULL,
        forked_from TEXT,
        last_active_at INTEGER NOT NULL,
        last_task_id TEXT,
        last_task_run_id TEXT,
        placed INTEGER NOT NULL DEFAULT 0,
        placed_at INTEGER,
        placement_scope TEXT,
        placement_handle TEXT,
        placement_parent TEXT,
        placement_root TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS store_entries (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    "CREATE TABLE IF NOT EXISTS store_owners (session_id TEXT PRIMARY KEY, owner TEXT)",
)


class SqliteSessionStore:
    """The durable store: one SQLite file, any number of instances and processes over it.

    Every id, source id, owner and placement name it is handed must be a store text
    (``_rules/store_text.py``); any other value is refused with ``InvalidInputError``.
    """

    durability: Durability | None = "durable"
    placements: Mapping[str, Durability] | None = {"subagent": "durable"}

    def __init__(self, connection: sqlite3.Connection, clock: Callable[[], int]) -> None:
        self._conn: sqlite3.Connection | None = connection
        self._clock = clock
        self._live: dict[str, StoreSession] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def open(
        cls, folder: str | os.PathLike[str], *, clock: Callable[[], int] = system_ms
    ) -> SqliteSessionStore:
        target = Path(folder)
        target.mkdir(parents=True, exist_ok=True, mode=0o700)
        connection = sqlite3.connect(target / STORE_FILE, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA busy_timeout = 30000")
        for attempt in range(200):  # two processes opening at once may see "locked" switching to WAL
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError:
                if attempt == 199:
                    raise
                time.sleep(0.01)
        store = cls(connection, clock)
        with store._write() as db:
            for statement in _SCHEMA:
                db.execute(statement)
        return store

    # --- plumbing ----------------------------------------------------------------------------------

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionError(SessionErrorCode.NOT_FOUND, "the store is disposed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _row(self, session_id: str) -> sqlite3.Row | None:
        cursor = self._db.execute("SELECT * FROM store_sessions WHERE id = ?", (session_id,))
        cursor.row_factory = sqlite3.Row
        row: sqlite3.Row | None = cursor.fetchone()
        return row

    def _entries(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT entry FROM store_entries WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    async def _append(
        self, session_id: str, entries: list[dict[str, Any]], base: int | None = None
    ) -> None:
        with self._write() as db:  # BEGIN IMMEDIATE: one writer at a time across every process
            if db.execute("SELECT 1 FROM store_sessions WHERE id = ?", (session_id,)).fetchone() is None:
                raise SessionError(SessionErrorCode.NOT_FOUND, f"no session {session_id}")
            (top,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM store_entries WHERE session_id = ?", (session_id,)
            ).fetchone()
            if base is not None and top != base:  # another process appended since this view was read
                raise SessionError(SessionErrorCode.CONFLICT, f"{session_id} moved on since this view")
            db.executemany(
                "INSERT INTO store_entries (session_id, seq, entry) VALUES (?, ?, ?)",
                [(session_id, top + i + 1, json.dumps(e, sort_keys=True)) for i, e in enumerate(entries)],
            )

    def _session(self, row: sqlite3.Row) -> StoreSession:
        metadata = SessionMetadata(row["id"], row["created_at"], row["incarnation"], row["forked_from"])
        return StoreSession(metadata, self._entries(row["id"]), self._append)

    def _create(self, session_id: str, placement: SessionPlacement | None) -> None:
        now = self._clock()
        with self._write() as db:
            db.execute(
                "INSERT INTO store_sessions (id, created_at, incarnation, last_active_at, placed, placed_at,"
                " placement_scope, placement_handle, placement_parent, placement_root)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (
                    session_id,
                    iso_of_ms(now),
                    mint_id(),
                    now,
                    int(placement is not None),
                    now if placement is not None else None,
                    placement.scope if placement else None,
                    placement.handle if placement else None,
                    placement.parent_session_id if placement else None,
                    placement.root_session_id if placement else None,
                ),
            )

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
            row = self._row(session_id)
            if row is None:
                if require_existing:
                    raise SessionError(SessionErrorCode.NOT_FOUND, f"no session {session_id}")
                self._create(session_id, placement)
                row = self._row(session_id)
                assert row is not None
            elif row["placed"] and not require_existing and placement is None:
                raise SessionError(SessionErrorCode.PLACEMENT_REFUSED, f"{session_id} is a placed session")
            self._touch_row(session_id)
            live = self._live.get(session_id)
            if live is None or live.metadata.incarnation != row["incarnation"]:
                live = self._live[session_id] = self._session(row)
            return AcquiredSession(live, session_id)

    def _touch_row(self, session_id: str) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE store_sessions SET last_active_at = ? WHERE id = ?", (self._clock(), session_id)
            )

    async def touch(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._touch_row(session_id)

    async def release(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._live.pop(session_id, None)
        row = self._row(session_id)
        if row is None or not row["placed"]:
            return  # an ordinary session: history retained, only the live view goes
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM store_sessions WHERE id = ?", (session_id,))
            db.execute("DELETE FROM store_owners WHERE session_id = ?", (session_id,))  # after the history

    async def forget(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._live.pop(session_id, None)

    async def pin(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        return None  # no idle sweep: nothing to protect against

    async def unpin(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        return None

    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if not task_run_keepable(session_id, task_id, run_id):
            return  # best effort, never throws: a note no store could keep is dropped
        try:
            with self._write() as db:
                db.execute(
                    "UPDATE store_sessions SET last_task_id = ?, last_task_run_id = ?, last_active_at = ?"
                    " WHERE id = ?",
                    (task_id, run_id, self._clock(), session_id),
                )
        except Exception:  # best effort: never throws
            return

    async def list_sessions(self) -> list[StoreSummary]:
        rows = self._db.execute(
            "SELECT id, last_active_at, created_at, last_task_id, last_task_run_id, forked_from"
            " FROM store_sessions WHERE placed = 0 ORDER BY last_active_at DESC, id"
        ).fetchall()
        return [StoreSummary(*row) for row in rows]

    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        if kind != "subagent":
            return []
        now = self._clock()
        rows = self._db.execute(
            "SELECT id, placed_at, placement_scope, placement_handle, last_active_at FROM store_sessions"
            " WHERE placed = 1 ORDER BY placed_at, id"
        ).fetchall()
        out = []
        for session_id, placed_at, row_scope, handle, last_active in rows:
            if scope is not None and row_scope != scope:
                continue
            if older_than_ms is not None and now - (last_active or placed_at) < older_than_ms:
                continue
            out.append(PlacedRow(session_id, placed_at, row_scope, handle))
        return out

    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        check_store_text(source_id, "sourceId")
        if isinstance(owner, str):
            check_store_text(owner, "owner")
        new_id = mint_id()
        now = self._clock()
        with self._write() as db:
            if db.execute("SELECT 1 FROM store_sessions WHERE id = ?", (source_id,)).fetchone() is None:
                return None
            db.execute(
                "INSERT INTO store_sessions (id, created_at, incarnation, forked_from, last_active_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (new_id, iso_of_ms(now), mint_id(), source_id, now),
            )
            db.execute(
                "INSERT INTO store_entries (session_id, seq, entry)"
                " SELECT ?, seq, entry FROM store_entries WHERE session_id = ?",
                (new_id, source_id),
            )
            source = db.execute(
                "SELECT owner FROM store_owners WHERE session_id = ?", (source_id,)
            ).fetchone()
            if isinstance(owner, str):
                fork_owner: tuple[str | None] | None = (owner,)
            elif source is not None and source[0] is not None:
                fork_owner = (source[0],)  # never weaker than the source
            elif source is not None or owner is None:
                fork_owner = (None,)
            else:
                fork_owner = None  # a source with no row mints none
            if fork_owner is not None:
                db.execute(
                    "INSERT INTO store_owners (session_id, owner) VALUES (?, ?)", (new_id, fork_owner[0])
                )
        return new_id

    async def owner_of(self, session_id: str) -> str | Unknown | None:
        check_store_text(session_id, "sessionId")
        row = self._db.execute(
            "SELECT owner FROM store_owners WHERE session_id = ?", (session_id,)
        ).fetchone()
        return UNKNOWN if row is None else row[0]

    async def register(self, session_id: str, owner: object) -> None:
        check_store_text(session_id, "sessionId")
        with self._write() as db:
            exists = db.execute("SELECT 1 FROM store_owners WHERE session_id = ?", (session_id,)).fetchone()
            if exists is not None:
                return  # later calls: silent, whatever they carry
            if owner is not None and not isinstance(owner, str):
                raise SessionError(SessionErrorCode.INVALID_OWNER, "an owner is a string or null")
            if owner_problem(owner) is not None:
                check_store_text(owner, "owner")
            db.execute(
                "INSERT INTO store_owners (session_id, owner) VALUES (?, ?)"
                " ON CONFLICT (session_id) DO NOTHING",
                (session_id, owner),
            )

    async def incarnation_of(self, session_id: str) -> str | Unknown:
        check_store_text(session_id, "sessionId")
        row = self._db.execute(
            "SELECT incarnation FROM store_sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return UNKNOWN if row is None else str(row[0])

    async def dispose(self) -> None:
        self._live.clear()
        connection, self._conn = self._conn, None
        if connection is not None:
            try:
                connection.close()
            except Exception:
                return
