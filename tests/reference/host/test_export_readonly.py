"""``relavium-conformance export`` only reads (KD-EXP-8, KD-EXP-9): a foreign SQLite file is refused and left
byte-identical, a history.db is opened read-only, and the export file has one mode on both write paths."""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.reference.enginekit import minimal_record

from relavium_reference._host.export_cli import EXPORT_FILE_MODE, register
from relavium_reference._host.history_store import HistoryStore, StoreError
from relavium_reference._model.records import parse_completed_turn

_POSIX = sys.platform != "win32"


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="relavium-conformance")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["export", *argv])
    code: int = args.handler(args)
    return code


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listing(directory: Path) -> dict[str, tuple[str, int]]:
    files = sorted(p for p in directory.iterdir() if p.is_file())
    return {p.name: (_digest(p), stat.S_IMODE(p.stat().st_mode)) for p in files}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "work"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "history.db"
    with HistoryStore.open(path) as store:
        store.create_session(minimal_record())
        store.commit_turn(
            "s-1",
            parse_completed_turn(
                {
                    "user": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    "terminal": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                }
            ),
        )
    return path


def _foreign(path: Path, *, wal: bool) -> Path:
    """Another program's SQLite database: its own tables, an index, a trigger and a row."""
    connection = sqlite3.connect(path)
    if wal:
        connection.execute("PRAGMA journal_mode = WAL")
    connection.executescript(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
        "CREATE INDEX notes_body ON notes (body);"
        "CREATE TRIGGER notes_guard BEFORE DELETE ON notes BEGIN SELECT RAISE(ABORT, 'no'); END;"
        "INSERT INTO notes (body) VALUES ('keep me');"
    )
    connection.commit()
    if wal:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_a_foreign_sqlite_file_is_refused_and_left_byte_identical(
    tmp_path: Path, workdir: Path, capsys: pytest.CaptureFixture[str], wal: bool
) -> None:
    other = tmp_path / "other-program"
    other.mkdir()
    db = _foreign(other / "app.sqlite", wal=wal)
    before = _digest(db)
    before_mode = stat.S_IMODE(db.stat().st_mode)
    assert _run("--db", str(db), "s-1", "--out", "x.yaml") == 1
    assert _digest(db) == before
    assert stat.S_IMODE(db.stat().st_mode) == before_mode
    assert not (workdir / "x.yaml").exists()
    err = capsys.readouterr().err
    assert "is not a history.db" in err
    assert "session not found" not in err
    check = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        names = {row[0] for row in check.execute("SELECT name FROM sqlite_master")}
        mode = check.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        check.close()
    assert names == {"notes", "notes_body", "notes_guard"}
    assert mode == ("wal" if wal else "delete")
    if not wal:  # no journal or side file appears beside a rollback-journal database
        assert sorted(p.name for p in other.iterdir()) == ["app.sqlite"]


def test_export_reads_a_history_db_without_changing_it(history: Path, workdir: Path) -> None:
    before = _listing(history.parent)
    assert _run("--db", str(history), "s-1") == 0
    after = _listing(history.parent)
    assert after["history.db"] == before["history.db"]
    assert set(after) <= set(before) | {"history.db-wal", "history.db-shm"}  # SQLite's own reader files


def test_a_read_only_store_refuses_every_write(history: Path) -> None:
    with HistoryStore.open_readonly(history) as store:
        assert store.load_session("s-1").id == "s-1"
        with pytest.raises(StoreError) as caught:
            store.update_session("s-1", title="changed")
        assert caught.value.code == "unavailable"
    with HistoryStore.open(history) as store:
        assert store.load_session("s-1").title == "hi"


def test_a_read_only_open_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        HistoryStore.open_readonly(tmp_path / "absent" / "history.db")
    assert caught.value.code == "unavailable"
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.skipif(not _POSIX, reason="POSIX file modes")
@pytest.mark.usefixtures("loose_umask")
def test_the_export_file_has_one_mode_on_both_write_paths(history: Path, workdir: Path) -> None:
    assert _run("--db", str(history), "s-1", "--out", "new.yaml") == 0
    assert stat.S_IMODE((workdir / "new.yaml").stat().st_mode) == EXPORT_FILE_MODE == 0o600
    existing = workdir / "existing.yaml"
    existing.write_text("old")
    os.chmod(existing, 0o644)
    assert _run("--db", str(history), "s-1", "--out", str(existing), "--force") == 0
    assert stat.S_IMODE(existing.stat().st_mode) == EXPORT_FILE_MODE
    assert existing.read_bytes() == (workdir / "new.yaml").read_bytes()
