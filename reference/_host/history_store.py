"""The reference host's durable history: a SQLite ``history.db``.

Tables follow the companion database contract (``agent_sessions``, ``session_messages``,
``session_costs``), in WAL mode with foreign keys on.  The file is created ``0600`` inside a
directory created ``0700``, before SQLite touches it, whatever the process umask.

Rules the store keeps:

* **Append-only, gap-free.**  Messages are never updated or deleted (triggers refuse it); the store
  assigns each new row ``max + 1`` inside the writing transaction.
* **All or nothing.**  :meth:`HistoryStore.commit_turn` writes a whole completed exchange, its cost
  rows and the session totals in one ``BEGIN IMMEDIATE`` transaction; on failure it rolls back and
  raises :class:`~relavium_reference.PersistError`, leaving the database as it was.
* **One cost writer.**  ``SUM(session_costs.cost_microcents)`` always equals the session's
  ``total_cost_microcents`` (and the same for tokens): both sides move in the same transaction.
* **Usage coverage is durable** (schema 2): ``session_usage`` holds one row per invocation the usage
  writer saw (pending, resolved or unknown, with its money); :mod:`relavium_reference._host.history_usage`
  owns it.  A turn's money and missing-price count move into ``session_costs`` with the turn's commit.
* **Denormalised columns are checked.**  ``content``, ``tool_calls``, ``tool_call_id``, ``name`` and
  ``finish_reason`` are derived from the canonical body (``content_parts``) on write and compared
  with it again on read; a disagreement or malformed JSON raises :class:`StoreError` with a fixed
  message.  So is a session row whose denormalised context columns disagree with ``context_json``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from relavium_reference._host.history_files import WriterLeases, prepare_file
from relavium_reference._host.history_usage import USAGE_SCHEMA
from relavium_reference._host.history_writes import (
    add_cost,
    check_live,
    insert_message,
    next_sequence,
    write_turn,
)
from relavium_reference._model.errors import InvalidInputError, PersistError
from relavium_reference._model.gc_pause import gc_paused
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    SessionStatus,
    TextPart,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._model.records import CompletedTurn, CostEntry, SessionCostRow
from relavium_reference._rules.history_fast import FAST_ROW_COLUMNS, MESSAGE_COLUMNS, fast_message
from relavium_reference._rules.history_rows import (
    STORE_ERRORS,
    MessageColumns,
    StoreError,
    derive_columns,
    epoch_ms,
    iso_from_ms,
    message_from_row,
    session_from_row,
    session_row,
    strict_json,
)

__all__ = [
    "SCHEMA_VERSION",
    "STORE_ERRORS",
    "HistoryStore",
    "MessageColumns",
    "StoreError",
    "derive_columns",
    "epoch_ms",
    "iso_from_ms",
    "message_from_row",
    "session_from_row",
    "strict_json",
]

SCHEMA_VERSION = 2
"""1: sessions, messages, costs; 2 adds the usage writer's ``session_usage`` ledger (migrated in place)."""
T = TypeVar("T")
#: What a commit maps to PersistError: SQLite's and the store's refusals, an invalid draft, and the
#: values SQLite cannot bind at all in a turn built without validation (``OverflowError``: a figure past
#: its 64-bit INTEGER; ``UnicodeEncodeError``, a ``ValueError``: text with a lone surrogate).
_COMMIT_FAILURES = (sqlite3.Error, StoreError, ValidationError, InvalidInputError, ValueError, OverflowError)


def _check_text(value: object, location: str) -> None:
    """``InvalidInputError`` unless ``value`` is a string UTF-8 can encode (what a TEXT column keeps)."""
    if not isinstance(value, str):
        raise InvalidInputError("must be a string", location=location)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("must not hold a lone surrogate", location=location) from None


_SCHEMA = """
CREATE TABLE agent_sessions (
  id TEXT PRIMARY KEY,
  agent_id TEXT NULL,
  agent_slug TEXT NOT NULL,
  agent_snapshot TEXT NULL,
  title TEXT NULL,
  model_id TEXT NULL,
  working_dir TEXT NULL,
  git_ref TEXT NULL,
  fs_scope_tier TEXT NOT NULL DEFAULT 'sandboxed'
    CHECK (fs_scope_tier IN ('sandboxed', 'project', 'full')),
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'idle', 'exported', 'ended')),
  context_json TEXT NOT NULL DEFAULT '{}',
  total_input_tokens INTEGER NOT NULL DEFAULT 0 CHECK (total_input_tokens >= 0),
  total_output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (total_output_tokens >= 0),
  total_cost_microcents INTEGER NOT NULL DEFAULT 0 CHECK (total_cost_microcents >= 0),
  exported_workflow_path TEXT NULL,
  deleted_at INTEGER NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX idx_agent_sessions_status ON agent_sessions (status, updated_at DESC)
  WHERE deleted_at IS NULL;
CREATE INDEX idx_agent_sessions_agent ON agent_sessions (agent_id, created_at DESC)
  WHERE agent_id IS NOT NULL;
CREATE INDEX idx_agent_sessions_updated ON agent_sessions (updated_at DESC, id DESC)
  WHERE deleted_at IS NULL;

CREATE TABLE session_messages (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
  sequence_number INTEGER NOT NULL CHECK (sequence_number >= 0),
  role TEXT NOT NULL,
  content TEXT NULL,
  content_parts TEXT NULL,
  tool_calls TEXT NULL,
  tool_call_id TEXT NULL,
  name TEXT NULL,
  finish_reason TEXT NULL,
  model_id TEXT NULL,
  compaction_dropped_through_sequence INTEGER NULL,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX idx_session_messages_seq ON session_messages (session_id, sequence_number);
CREATE INDEX idx_session_messages_session ON session_messages (session_id, created_at ASC);
CREATE TRIGGER session_messages_no_update BEFORE UPDATE ON session_messages
BEGIN
  SELECT RAISE(ABORT, 'session messages are append-only');
END;
CREATE TRIGGER session_messages_no_delete BEFORE DELETE ON session_messages
  WHEN EXISTS (SELECT 1 FROM agent_sessions WHERE id = OLD.session_id)
BEGIN
  SELECT RAISE(ABORT, 'session messages are append-only');
END;

CREATE TABLE session_costs (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
  model TEXT NOT NULL CHECK (model <> ''),
  model_catalog_id TEXT NULL,
  input_tokens INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  cost_microcents INTEGER NOT NULL DEFAULT 0 CHECK (cost_microcents >= 0),
  call_count INTEGER NOT NULL DEFAULT 0 CHECK (call_count >= 0),
  unpriced_calls INTEGER NOT NULL DEFAULT 0 CHECK (unpriced_calls >= 0),
  is_legacy INTEGER NOT NULL DEFAULT 0 CHECK (is_legacy IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK (unpriced_calls <= call_count)
);
CREATE UNIQUE INDEX idx_session_costs_session_model ON session_costs (session_id, model, is_legacy);
CREATE INDEX idx_session_costs_session ON session_costs (session_id, cost_microcents);
"""

_FAST_COLUMNS = ", ".join(FAST_ROW_COLUMNS)
_SESSION_COLUMNS = (
    "id, agent_id, agent_slug, agent_snapshot, title, model_id, working_dir, git_ref, fs_scope_tier, "
    "status, context_json, total_input_tokens, total_output_tokens, total_cost_microcents, "
    "exported_workflow_path, deleted_at, created_at, updated_at"
)


def _default_clock() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------


class HistoryStore:
    """Durable sessions, transcripts and costs in one SQLite file.

    Build it with :meth:`open`.  Methods are synchronous and serialised by a lock, so an asyncio
    host may call them from a worker thread.  Errors: :class:`InvalidInputError` for malformed
    arguments (nothing is written), :class:`StoreError` for a missing session, a refused write or a
    defective stored row, :class:`~relavium_reference.PersistError` for a turn commit that failed.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        clock: Callable[[], datetime],
        leases: WriterLeases | None = None,
    ) -> None:
        self._conn: sqlite3.Connection | None = connection
        self._clock = clock
        self._lock = threading.RLock()
        self._leases = leases

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, clock: Callable[[], datetime] | None = None
    ) -> HistoryStore:
        """Open (creating if needed) ``history.db`` at ``path``: WAL, foreign keys on, schema ready."""
        target = Path(path)
        prepare_file(target)
        try:
            connection = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            raise StoreError("unavailable") from None
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA busy_timeout = 5000")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version in (0, 1):
                connection.execute("BEGIN IMMEDIATE")
                version = connection.execute("PRAGMA user_version").fetchone()[0]
                if version in (0, 1):
                    script = (_SCHEMA if version == 0 else "") + USAGE_SCHEMA
                    for statement in _split_script(script):
                        connection.execute(statement)
                    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                connection.execute("COMMIT")
            elif version != SCHEMA_VERSION:
                raise StoreError("schema_version")
        except BaseException as exc:
            with suppress(sqlite3.Error):
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
            connection.close()
            if isinstance(exc, sqlite3.Error):  # a full disk, a foreign or corrupt file, a lock
                raise StoreError("unavailable") from None
            raise
        return cls(connection, clock or _default_clock, WriterLeases(target))

    @classmethod
    def open_readonly(
        cls, path: str | os.PathLike[str], *, clock: Callable[[], datetime] | None = None
    ) -> HistoryStore:
        """Open an existing ``history.db`` for reading only: nothing is created, tightened or written.

        SQLite opens the file read-only (``mode=ro``) and the connection is ``query_only``.  A file
        that is not a ``history.db`` (another program's database) is refused with
        ``StoreError("not_history")`` before anything else is read; one of another schema version with
        ``StoreError("schema_version")``; a missing, corrupt or unreadable file with
        ``StoreError("unavailable")``.  Every write through the returned store is refused.
        """
        target = Path(path)
        if not target.is_file():
            raise StoreError("unavailable")
        try:
            connection = sqlite3.connect(
                f"{target.resolve().as_uri()}?mode=ro",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error:
            raise StoreError("unavailable") from None
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA query_only = ON")
            connection.execute("PRAGMA busy_timeout = 5000")
            _check_history_schema(connection)
        except BaseException as exc:
            connection.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError("unavailable") from None
            raise
        return cls(connection, clock or _default_clock)

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("closed")
        return self._conn

    def close(self) -> None:
        """Close the connection and release every writer lease (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._leases is not None:
                self._leases.release_all()

    def _lease(self, session_id: str) -> None:
        """Hold the writer lease of ``session_id`` before writing its transcript or money (KD-DB-9)."""
        self._db  # noqa: B018 - a closed store refuses before any lease is taken
        if self._leases is not None:
            self._leases.ensure(session_id)

    def release_writer(self, session_id: str) -> None:
        """Give up the writer lease of ``session_id`` (a cancelled session); another writer may take it.

        Waits for a write in progress on this store, so no lease is dropped in the middle of a commit.
        """
        with self._lock:
            if self._leases is not None:
                self._leases.release(session_id)

    def usage_write(self, session_id: str, action: Callable[[sqlite3.Connection, int], T]) -> T:
        """Run ``action(db, now_ms)`` in one writing transaction on a live session (under its lease)."""
        self._lease(session_id)
        with self._transaction() as db:
            check_live(db, session_id)
            return action(db, self._now_ms())

    def usage_read(self, session_id: str, action: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``action(db)`` in one reading transaction on a live session."""
        with self._transaction("DEFERRED") as db:
            check_live(db, session_id)
            return action(db)

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _now_ms(self) -> int:
        return epoch_ms(self._clock().isoformat())

    @contextmanager
    def _transaction(
        self, mode: Literal["IMMEDIATE", "DEFERRED"] = "IMMEDIATE"
    ) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            try:
                db.execute(f"BEGIN {mode}")
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    with suppress(sqlite3.Error):
                        if db.in_transaction:
                            db.execute("ROLLBACK")
                    raise
            except sqlite3.IntegrityError:
                raise StoreError("constraint") from None
            except sqlite3.Error:
                raise StoreError("unavailable") from None

    @staticmethod
    def _live_session(db: sqlite3.Connection, session_id: str) -> sqlite3.Row:
        _check_text(session_id, "sessionId")  # an id no row can hold: InvalidInputError, not a codec error
        row = db.execute(
            f"SELECT rowid AS row_ref, {_SESSION_COLUMNS} FROM agent_sessions "
            "WHERE id = ? AND deleted_at IS NULL",
            (session_id,),
        ).fetchone()
        if row is None:
            raise StoreError("session_not_found")
        return row  # type: ignore[no-any-return]

    # -- sessions ------------------------------------------------------------------------------

    def create_session(self, record: AgentSessionRecord) -> AgentSessionRecord:
        """Insert a fresh session row with a complete-zero basis (zero totals, no cost rows)."""
        if record.total_input_tokens or record.total_output_tokens or record.total_cost_microcents:
            raise InvalidInputError("a new session starts with zero totals", location="totals")
        if record.deleted_at is not None:
            raise InvalidInputError("a new session cannot be deleted", location="deletedAt")
        row = session_row(record)
        self._lease(record.id)
        names = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        try:
            with self._transaction() as db:
                db.execute(f"INSERT INTO agent_sessions ({names}) VALUES ({marks})", row)
        except StoreError as exc:
            if exc.code != "constraint":
                raise
            raise StoreError("session_exists") from None
        return self.load_session(record.id)

    def load_session(self, session_id: str) -> AgentSessionRecord:
        """The live (not soft-deleted) session row, checked against its cost rows."""
        with self._transaction("DEFERRED") as db:
            return self._read_session(db, session_id)

    def _read_session(self, db: sqlite3.Connection, session_id: str) -> AgentSessionRecord:
        row = self._live_session(db, session_id)
        sums = db.execute(
            "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
            "COALESCE(SUM(cost_microcents), 0) FROM session_costs WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if tuple(sums) != (
            row["total_input_tokens"],
            row["total_output_tokens"],
            row["total_cost_microcents"],
        ):
            raise StoreError("totals_mismatch")
        return _checked(session_from_row, row, "agent_sessions")

    def update_session(
        self,
        session_id: str,
        *,
        status: SessionStatus | None = None,
        title: str | None = None,
        exported_workflow_path: str | None = None,
    ) -> AgentSessionRecord:
        """Change the row's status, title or export path (only the fields given).

        A value that is not a string, or a string ``history.db`` cannot keep (a lone surrogate), is
        refused with ``InvalidInputError`` naming the field before anything is read or written."""
        for location, value in (
            ("status", status),
            ("title", title),
            ("exportedWorkflowPath", exported_workflow_path),
        ):
            if value is not None:
                _check_text(value, location)
        current = self.load_session(session_id)
        changed = current.model_copy(
            update={
                key: value
                for key, value in (
                    ("status", status),
                    ("title", title),
                    ("exported_workflow_path", exported_workflow_path),
                )
                if value is not None
            }
        )
        checked = parse_agent_session_record(changed.to_wire())
        with self._transaction() as db:
            self._live_session(db, session_id)
            db.execute(
                "UPDATE agent_sessions SET status = ?, title = ?, exported_workflow_path = ?, "
                "updated_at = ? WHERE id = ?",
                (checked.status, checked.title, checked.exported_workflow_path, self._now_ms(), session_id),
            )
        return self.load_session(session_id)

    def delete_session(self, session_id: str) -> None:
        """Soft-delete: the row and its transcript stay, but the session is no longer found."""
        with self._transaction() as db:
            self._live_session(db, session_id)
            now = self._now_ms()
            db.execute(
                "UPDATE agent_sessions SET deleted_at = ?, updated_at = ? WHERE id = ?",
                (now, now, session_id),
            )

    # -- transcript ----------------------------------------------------------------------------

    def commit_turn(
        self, session_id: str, turn: CompletedTurn, *, title: str | None = None
    ) -> tuple[SessionMessage, ...]:
        """Write one completed exchange, its cost and the session totals, all or nothing.

        Rows get the next gap-free sequence numbers in order: user, structural rows, terminal.  The
        session title is set from ``title`` (or, if not given, from the user text) only while the
        row has none.  On any failure the transaction rolls back and :class:`PersistError` is
        raised (its ``__cause__`` is the underlying error); the database is unchanged.
        """
        return self._commit_turn_with(session_id, turn, _nothing, title=title)[0]

    def _commit_turn_with(
        self,
        session_id: str,
        turn: CompletedTurn,
        action: Callable[[sqlite3.Connection, int], T],
        *,
        title: str | None = None,
    ) -> tuple[tuple[SessionMessage, ...], T]:
        """:meth:`commit_turn` with ``action(db, now_ms)`` run first in the same transaction.

        The usage writer's resolution of the turn's last attempt rides here (KD-USE-1): the ledger row,
        the turn's rows, its cost and the totals commit together or not at all.  Any failure, the
        action's included, rolls everything back and raises :class:`PersistError`.
        """
        if not isinstance(turn, CompletedTurn):
            raise InvalidInputError("commit_turn needs a CompletedTurn", location="turn")
        try:
            now = self._now_ms()
            self._lease(session_id)
            with self._transaction() as db:
                done = action(db, now)
                committed = write_turn(db, session_id, turn, title, now)
        except _COMMIT_FAILURES as exc:
            raise PersistError("the completed turn could not be committed") from exc
        return committed, done

    def append_marker(
        self,
        session_id: str,
        *,
        dropped_through_sequence: int,
        text: str,
        message_id: str | None = None,
    ) -> SessionMessage:
        """Append a compaction (non-empty ``text``) or trim (empty ``text``) boundary marker.

        The marker is a ``system`` row; a trim marker has no content parts.  The boundary must name
        an existing earlier row of the session.
        """
        if isinstance(dropped_through_sequence, bool) or not isinstance(dropped_through_sequence, int):
            raise InvalidInputError("a boundary must be a sequence number", location="droppedThroughSequence")
        stamp = iso_from_ms(self._now_ms())
        self._lease(session_id)
        with self._transaction() as db:
            self._live_session(db, session_id)
            next_seq = next_sequence(db, session_id)
            if not 0 <= dropped_through_sequence < next_seq:
                raise InvalidInputError(
                    "a boundary must name an existing earlier message", location="droppedThroughSequence"
                )
            marker = parse_session_message(
                {
                    "id": message_id or str(uuid.uuid4()),
                    "sessionId": session_id,
                    "sequenceNumber": next_seq,
                    "role": "system",
                    "content": [TextPart(text=text).to_wire()] if text else [],
                    "compaction": {"droppedThroughSequence": dropped_through_sequence},
                    "timestamp": stamp,
                }
            )
            insert_message(db, marker, None)
            db.execute("UPDATE agent_sessions SET updated_at = ? WHERE id = ?", (self._now_ms(), session_id))
        return marker

    def load_messages(self, session_id: str) -> tuple[SessionMessage, ...]:
        """The session's transcript in sequence order, every row checked."""
        with self._transaction("DEFERRED") as db:
            self._live_session(db, session_id)
            return self._read_messages(db, session_id)

    @staticmethod
    def _read_messages(db: sqlite3.Connection, session_id: str) -> tuple[SessionMessage, ...]:
        # Plain tuples (no sqlite3.Row): a row in the store's canonical form is decided by
        # fast_message in one pass; any other row goes through the full path, which names its defect.
        cursor = db.cursor()
        cursor.row_factory = None
        rows = cursor.execute(
            f"SELECT {_FAST_COLUMNS} FROM session_messages WHERE session_id = ? ORDER BY sequence_number",
            (session_id,),
        ).fetchall()
        messages = tuple(fast_message(row) or _checked_tuple(row) for row in rows)
        if [m.sequence_number for m in messages] != list(range(len(messages))):
            raise StoreError("sequence_gap")
        return messages

    @gc_paused  # a long transcript is many acyclic models (see gc_pause)
    def load_full(self, session_id: str) -> tuple[AgentSessionRecord, tuple[SessionMessage, ...]]:
        """The session row and its transcript, read in one transaction (a consistent pair)."""
        with self._transaction("DEFERRED") as db:
            record = self._read_session(db, session_id)
            return record, self._read_messages(db, session_id)

    # -- money ---------------------------------------------------------------------------------

    def record_cost(self, session_id: str, entry: CostEntry) -> AgentSessionRecord:
        """Add one cost entry (for instance a failed or aborted turn's spend) and the totals, atomically."""
        if not isinstance(entry, CostEntry):
            raise InvalidInputError("record_cost needs a CostEntry", location="entry")
        self._lease(session_id)
        with self._transaction() as db:
            self._live_session(db, session_id)
            add_cost(db, session_id, entry, self._now_ms())
            db.execute("UPDATE agent_sessions SET updated_at = ? WHERE id = ?", (self._now_ms(), session_id))
        return self.load_session(session_id)

    def load_costs(self, session_id: str) -> tuple[SessionCostRow, ...]:
        """The session's per-model cost rows, ordered by model then legacy flag."""
        with self._transaction("DEFERRED") as db:
            self._live_session(db, session_id)
            rows = db.execute(
                "SELECT model, model_catalog_id, input_tokens, output_tokens, cost_microcents, call_count, "
                "unpriced_calls, is_legacy FROM session_costs WHERE session_id = ? ORDER BY model, is_legacy",
                (session_id,),
            ).fetchall()
        return tuple(
            SessionCostRow(
                model=row["model"],
                model_catalog_id=row["model_catalog_id"],
                input_tokens=row["input_tokens"],
                output_tokens=row["output_tokens"],
                cost_microcents=row["cost_microcents"],
                call_count=row["call_count"],
                unpriced_calls=row["unpriced_calls"],
                is_legacy=bool(row["is_legacy"]),
            )
            for row in rows
        )


_TABLE_COLUMNS = {
    "agent_sessions": frozenset(_SESSION_COLUMNS.split(", ")),
    "session_messages": frozenset(MESSAGE_COLUMNS),
    "session_costs": frozenset(
        [
            *("id", "session_id", "model", "model_catalog_id", "input_tokens", "output_tokens"),
            *("cost_microcents", "call_count", "unpriced_calls", "is_legacy", "created_at", "updated_at"),
        ]
    ),
}


def _nothing(_db: sqlite3.Connection, _now: int) -> None:
    return None


def _check_history_schema(connection: sqlite3.Connection) -> None:
    """Refuse a database without the session tables, or of another schema version (reads only)."""
    for table, wanted in _TABLE_COLUMNS.items():
        columns = {row[1] for row in connection.execute(f"PRAGMA table_info({table})").fetchall()}
        if not wanted <= columns:
            raise StoreError("not_history")
    if connection.execute("PRAGMA user_version").fetchone()[0] not in (1, SCHEMA_VERSION):
        raise StoreError("schema_version")  # a read-only open never migrates: schema 1 stays readable


def _checked(read: Callable[[dict[str, Any]], T], row: sqlite3.Row, table: str) -> T:
    """Read one stored row; a refusal names the row by table and ``rowid`` (KD-DB-7)."""
    data = dict(row)
    ref = data.pop("row_ref")
    try:
        return read(data)
    except StoreError as exc:
        raise StoreError(exc.code, row=f"{table} rowid {ref}") from exc.__cause__


def _checked_tuple(row: tuple[Any, ...]) -> SessionMessage:
    """The full read of a tuple row of :data:`FAST_ROW_COLUMNS` (see :func:`_checked`)."""
    data = dict(zip(FAST_ROW_COLUMNS[:-1], row, strict=False))
    try:
        return message_from_row(data)
    except StoreError as exc:
        raise StoreError(exc.code, row=f"session_messages rowid {row[-1]}") from exc.__cause__


def _split_script(script: str) -> list[str]:
    """Split the schema into statements (triggers hold ``;`` inside ``BEGIN ... END``)."""
    statements: list[str] = []
    buffer = ""
    for line in script.strip().splitlines():
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return statements
