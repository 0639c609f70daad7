"""history.db under faults: a full disk, tampered rows, unreadable values, loose permissions.

* A full disk (``RLIMIT_FSIZE`` in a child process) fails ``open`` and ``commit_turn`` with the store's
  documented errors, and leaves every committed turn whole.
* Nothing the store accepts can poison it (KD-DB-7): a value it cannot read back is refused on write.
* A tampered row, whatever a column holds, is a ``StoreError`` naming the row, never another exception.
* An existing database and its side files are tightened to 0600 on open (KD-DB-8).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference.fuzzkit import SQLITE_VALUES, quick_record, quick_timestamps

from relavium_reference._host.history_store import HistoryStore, StoreError
from relavium_reference._model.errors import InvalidInputError, PersistError, RelaviumError
from relavium_reference._model.messages import parse_agent_session_record
from relavium_reference._model.records import parse_completed_turn
from relavium_reference._rules.export_mapping import session_to_workflow
from relavium_reference.export import serialize_workflow

CHILD = Path(__file__).resolve().parents[2] / "programs" / "full_disk.py"
_POSIX = sys.platform != "win32"


def _record(session_id: str = "s-1", **extra: Any) -> Any:
    return parse_agent_session_record(
        {
            "id": session_id,
            "agentSlug": "coder",
            "context": {"workingDir": "/w"},
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
            **extra,
        }
    )


def _turn(text: str = "q", **terminal: Any) -> Any:
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": text}]},
            "structural": [
                {"role": "assistant", "content": [{"type": "tool_call", "id": "c1", "name": "read"}]},
                {
                    "role": "tool",
                    "content": [
                        {"type": "tool_result", "toolCallId": "c1", "name": "read", "isError": False}
                    ],
                },
            ],
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": "a"}], **terminal},
            "costs": [{"model": "m", "inputTokens": 3, "costMicrocents": 5}],
        }
    )


def _child(db: Path, limit: int, mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(CHILD), str(db), str(limit), mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# -- a full disk -----------------------------------------------------------------------------------


@pytest.mark.skipif(not _POSIX, reason="RLIMIT_FSIZE is POSIX-only")
def test_opening_a_store_on_a_full_disk_is_a_store_error(tmp_path: Path) -> None:
    result = _child(tmp_path / "state" / "history.db", 0, "open")
    assert result["errors"] == [
        {"type": "StoreError", "documented": True, "code": "unavailable", "cause": None, "causeCode": None}
    ]


@pytest.mark.skipif(not _POSIX, reason="RLIMIT_FSIZE is POSIX-only")
def test_a_full_disk_fails_the_commit_cleanly_and_keeps_every_committed_turn(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    with HistoryStore.open(db) as store:
        store.create_session(_record("full-disk"))
    limit = db.stat().st_size + 96 * 1024
    result = _child(db, limit, "commit")
    assert result["errors"] == [
        {
            "type": "PersistError",
            "documented": True,
            "code": None,
            "cause": "StoreError",
            "causeCode": "unavailable",
        }
    ]
    assert result["committed"] >= 1  # the limit leaves room for some turns, not for all
    with HistoryStore.open(db) as store:
        record, messages = store.load_full("full-disk")
        costs = store.load_costs("full-disk")
        store.commit_turn("full-disk", _turn("after"))  # the store is usable once there is room
    assert len(messages) == 2 * result["committed"]  # user + terminal per committed turn, none torn
    assert record.total_cost_microcents == result["committed"] == costs[0].call_count
    check = sqlite3.connect(db)
    try:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        check.close()


# -- nothing accepted can poison the store ---------------------------------------------------------


def test_the_reported_unreadable_created_at_is_refused_on_write(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "history.db") as store:
        with pytest.raises(InvalidInputError) as caught:
            store.create_session(_record(createdAt="0001-01-01T00:00:00+23:59"))
        assert caught.value.location == "createdAt"
        with pytest.raises(StoreError) as missing:
            store.load_session("s-1")
        assert missing.value.code == "session_not_found"


def test_an_unreadable_draft_timestamp_fails_the_commit_and_writes_nothing(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "history.db") as store:
        store.create_session(_record())
        with pytest.raises(PersistError) as caught:
            store.commit_turn("s-1", _turn(timestamp="9999-12-31T23:59:59-23:59"))
        assert isinstance(caught.value.__cause__, InvalidInputError)
        assert store.load_messages("s-1") == ()
        assert store.load_session("s-1").total_cost_microcents == 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quick_record(), quick_timestamps)
def test_whatever_the_store_accepts_it_loads_and_exports_again(record: dict[str, Any], stamp: str) -> None:
    try:
        parsed = parse_agent_session_record({**record, "totalCostMicrocents": 0})
    except InvalidInputError:
        return
    with tempfile.TemporaryDirectory() as folder, HistoryStore.open(Path(folder) / "history.db") as store:
        try:
            store.create_session(parsed)
        except InvalidInputError:
            return  # refused on write: nothing was stored
        with contextlib.suppress(InvalidInputError, PersistError):
            store.commit_turn(parsed.id, _turn(timestamp=stamp))
        loaded, messages = store.load_full(parsed.id)  # no exception of any kind
        serialize_workflow(session_to_workflow(loaded, messages))


# -- tampered rows ---------------------------------------------------------------------------------

_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "sequence_number",
    "role",
    "content",
    "content_parts",
    "tool_calls",
    "tool_call_id",
    "name",
    "finish_reason",
    "model_id",
    "compaction_dropped_through_sequence",
    "created_at",
)
_SESSION_COLUMNS = (
    "agent_id",
    "agent_slug",
    "agent_snapshot",
    "title",
    "model_id",
    "working_dir",
    "git_ref",
    "context_json",
    "exported_workflow_path",
    "created_at",
    "updated_at",
)
_ODD_VALUES = st.sampled_from(
    ["", "1", "[1]", '[{"type":[]}]', "[" * 3000, "{}", '{"workingDir": 1}', -(10**14), 10**15, 2**63 - 1]
)


def _raw_update(db: Path, sql: str, value: Any) -> None:
    connection = sqlite3.connect(db)
    try:
        connection.execute("DROP TRIGGER IF EXISTS session_messages_no_update")
        connection.execute(sql, (value,))
        connection.commit()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a database holding one session and one turn (each example starts from a copy)."""
    db = tmp_path_factory.mktemp("seed") / "history.db"
    with HistoryStore.open(db) as store:
        store.create_session(_record())
        store.commit_turn("s-1", _turn())
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return db.read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table=st.sampled_from(["session_messages", "agent_sessions"]),
    column_index=st.integers(min_value=0, max_value=20),
    sequence=st.integers(min_value=0, max_value=3),
    value=SQLITE_VALUES | _ODD_VALUES,
)
def test_a_tampered_row_is_a_store_error_naming_the_row(
    seeded: bytes, table: str, column_index: int, sequence: int, value: Any
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        db = Path(directory) / "history.db"
        db.write_bytes(seeded)
        if table == "session_messages":
            column = _MESSAGE_COLUMNS[column_index % len(_MESSAGE_COLUMNS)]
            where = f"WHERE sequence_number = {sequence}"
        else:
            column = _SESSION_COLUMNS[column_index % len(_SESSION_COLUMNS)]
            where = ""
        try:
            _raw_update(db, f"UPDATE {table} SET {column} = ? {where}", value)
        except sqlite3.IntegrityError:
            return  # a NOT NULL or CHECK column SQLite itself protects
        refusal: StoreError | None = None
        with HistoryStore.open(db) as store:
            try:
                store.load_full("s-1")
            except StoreError as exc:
                refusal = exc
        if refusal is not None and refusal.code not in (
            "session_not_found",
            "sequence_gap",
            "totals_mismatch",
        ):
            assert refusal.row is not None
            assert refusal.row.startswith(f"{table} rowid ")
            assert refusal.row in str(refusal)


def test_a_stored_created_at_out_of_range_names_its_row(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    with HistoryStore.open(db) as store:
        store.create_session(_record())
        store.commit_turn("s-1", _turn())
    _raw_update(db, "UPDATE session_messages SET created_at = ? WHERE sequence_number = 2", -(10**14))
    with HistoryStore.open(db) as store, pytest.raises(StoreError) as caught:
        store.load_full("s-1")
    assert caught.value.code == "invalid_message"
    assert caught.value.row == "session_messages rowid 3"
    assert isinstance(caught.value, RelaviumError)


# -- permissions -----------------------------------------------------------------------------------


@pytest.mark.skipif(not _POSIX, reason="POSIX file modes")
def test_an_existing_loose_database_and_its_side_files_are_tightened_on_open(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    with HistoryStore.open(db) as store:
        store.create_session(_record())
    side = [db.with_name("history.db-wal"), db.with_name("history.db-shm")]
    for path in side:
        path.write_bytes(b"")
    for path in (db, *side):
        os.chmod(path, 0o644)
    with HistoryStore.open(db) as store:
        store.commit_turn("s-1", _turn())
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir() if p.is_file()}
    assert modes == {"history.db": 0o600, "history.db-wal": 0o600, "history.db-shm": 0o600}


@pytest.mark.skipif(not _POSIX, reason="POSIX file modes")
def test_side_files_of_a_loose_database_are_created_private(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    connection = sqlite3.connect(db)  # another tool made the file, world-readable, no side files
    connection.close()
    os.chmod(db, 0o644)
    with HistoryStore.open(db) as store:
        store.create_session(_record())
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir() if p.is_file()}
    assert set(modes) >= {"history.db", "history.db-wal", "history.db-shm"}
    assert set(modes.values()) == {0o600}


@pytest.mark.skipif(not _POSIX, reason="POSIX file modes")
def test_a_database_that_cannot_be_tightened_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "history.db"
    db.write_bytes(b"")
    os.chmod(db, 0o644)

    def not_owner(*_args: Any, **_kwargs: Any) -> None:
        raise PermissionError("not the owner")

    monkeypatch.setattr(os, "chmod", not_owner)
    with pytest.raises(StoreError) as caught:
        HistoryStore.open(db)
    assert caught.value.code == "permissions"
