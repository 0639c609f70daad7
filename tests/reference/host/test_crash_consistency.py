"""A turn commit survives SIGKILL at every point: the whole turn is durable, or none of it is.

A child process (``tests/programs/crash_commit.py``) commits one turn into a database that already holds
a session, one earlier turn and the cost of an uncommitted one, and kills itself with SIGKILL just before
a chosen SQL statement of the commit runs (or right after the commit returns).  The parent reopens the
database every time and checks integrity, all-or-nothing, the cost invariant, reconstruction, and that
the store accepts the next turn with gap-free numbers.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from relavium_reference._host.history_store import HistoryStore
from relavium_reference._model.messages import parse_agent_session_record
from relavium_reference._model.records import CostEntry, parse_completed_turn
from relavium_reference._rules.resume import reconstruct_session_state

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only"),
]

CHILD = Path(__file__).resolve().parents[2] / "programs" / "crash_commit.py"
SESSION_ID = "crash-session"
PRIOR_ROWS = 2
TURN_ROWS = 6  # user, two (call, result) pairs, terminal
PRIOR_COST = 70 + 5  # the earlier turn, plus an uncommitted turn's recorded cost
TURN_COST = 1000 + 500


def _turn(text: str) -> object:
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": text}]},
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": f"reply to {text}"}]},
            "costs": [{"model": "model-a", "inputTokens": 7, "outputTokens": 3, "costMicrocents": 70}],
        }
    )


def _seed(path: Path) -> None:
    with HistoryStore.open(path) as store:
        store.create_session(
            parse_agent_session_record(
                {
                    "id": SESSION_ID,
                    "agentSlug": "coder",
                    "context": {"workingDir": "/w"},
                    "createdAt": "2026-01-01T00:00:00Z",
                    "updatedAt": "2026-01-01T00:00:00Z",
                }
            )
        )
        store.commit_turn(SESSION_ID, _turn("before the crash"))  # type: ignore[arg-type]
        store.record_cost(SESSION_ID, CostEntry(model="model-b", input_tokens=1, cost_microcents=5))


def _run_child(path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELAVIUM_CRASH_AT": mode}
    return subprocess.run(
        [sys.executable, str(CHILD), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _commit_statements(tmp_path: Path) -> list[str]:
    path = tmp_path / "count" / "history.db"
    _seed(path)
    done = _run_child(path, "count")
    assert done.returncode == 0, done.stderr
    statements = json.loads(done.stdout)
    assert isinstance(statements, list)
    return [str(s) for s in statements]


def _check_after_crash(path: Path, *, expect_turn: bool) -> None:
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()
    with HistoryStore.open(path) as store:
        record, messages = store.load_full(SESSION_ID)  # every row and the cost invariant re-checked
        rows = len(messages)
        assert rows in (PRIOR_ROWS, PRIOR_ROWS + TURN_ROWS), "a partial turn is durable"
        assert rows == (PRIOR_ROWS + TURN_ROWS if expect_turn else PRIOR_ROWS)
        assert record.total_cost_microcents == PRIOR_COST + (TURN_COST if expect_turn else 0)
        state = reconstruct_session_state(record, messages)
        assert state.turn_count == (2 if expect_turn else 1)
        expected_texts = ["before the crash", "reply to before the crash"]
        if expect_turn:
            expected_texts.append("the crashing turn")  # empty final: the user alone
        assert [m.text for m in state.messages] == expected_texts
        # The store is usable after the crash and numbering stays gap-free.
        after = store.commit_turn(SESSION_ID, _turn("after the crash"))  # type: ignore[arg-type]
        assert [m.sequence_number for m in after] == [rows, rows + 1]
        assert len(store.load_messages(SESSION_ID)) == rows + 2


def test_the_commit_runs_as_one_immediate_transaction(tmp_path: Path) -> None:
    statements = [s.strip().upper() for s in _commit_statements(tmp_path)]
    assert statements[0] == "BEGIN IMMEDIATE"
    assert statements[-1] == "COMMIT"
    assert sum(s.startswith("INSERT INTO SESSION_MESSAGES") for s in statements) == TURN_ROWS
    assert "COMMIT" not in statements[:-1]


def test_sigkill_at_every_point_of_a_commit_leaves_all_or_nothing(tmp_path: Path) -> None:
    statements = _commit_statements(tmp_path)
    for index, sql in enumerate(statements):
        path = tmp_path / f"kill-{index}" / "history.db"
        _seed(path)
        done = _run_child(path, f"stmt:{index}")
        assert done.returncode == -signal.SIGKILL, (index, sql, done.stderr)
        # Killed before its COMMIT ran, the turn is absent, whichever statement was next.
        _check_after_crash(path, expect_turn=False)


def test_sigkill_right_after_the_commit_keeps_the_whole_turn(tmp_path: Path) -> None:
    path = tmp_path / "after" / "history.db"
    _seed(path)
    done = _run_child(path, "after")
    assert done.returncode == -signal.SIGKILL, done.stderr
    _check_after_crash(path, expect_turn=True)


def test_a_child_that_is_not_killed_commits_the_turn(tmp_path: Path) -> None:
    path = tmp_path / "clean" / "history.db"
    _seed(path)
    done = _run_child(path, "")
    assert done.returncode == 0, done.stderr
    _check_after_crash(path, expect_turn=True)
