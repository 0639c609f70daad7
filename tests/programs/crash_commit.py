"""Child program of tests/reference/host/test_crash_consistency.py: commit one turn, optionally
dying mid-commit.

Usage: ``python crash_commit.py DB_PATH``.  The environment variable ``RELAVIUM_CRASH_AT`` chooses:

* ``count``: commit normally and print, as JSON on stdout, the SQL statements the commit ran;
* ``stmt:N``: SIGKILL this process just before the N-th statement (0-based) of the commit runs;
* ``after``: SIGKILL this process right after ``commit_turn`` returns;
* unset: commit normally, print nothing.

SIGKILL cannot be caught: no ``finally``, no ``atexit``, no rollback runs in this process, so the
database is left exactly as a crash would leave it.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from relavium_reference._host.history_store import HistoryStore
from relavium_reference._model.records import CompletedTurn, parse_completed_turn

SESSION_ID = "crash-session"


def crash_turn() -> CompletedTurn:
    """The turn every child commits: two tool round trips, an empty final, two cost entries."""
    structural = []
    for index, tool in enumerate(("read_file", "run_command")):
        call_id = f"crash-call-{index}"
        structural.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {index}"},
                    {"type": "tool_call", "id": call_id, "name": tool},
                ],
            }
        )
        structural.append(
            {
                "role": "tool",
                "content": [
                    {"type": "tool_result", "toolCallId": call_id, "name": tool, "isError": index == 1}
                ],
            }
        )
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": "the crashing turn"}]},
            "structural": structural,
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": ""}]},
            "costs": [
                {"model": "model-a", "inputTokens": 100, "outputTokens": 10, "costMicrocents": 1000},
                {"model": "model-b", "inputTokens": 50, "outputTokens": 5, "costMicrocents": 500},
            ],
        }
    )


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    path = sys.argv[1]
    mode = os.environ.get("RELAVIUM_CRASH_AT", "")
    turn = crash_turn()
    store = HistoryStore.open(path)
    statements: list[str] = []
    kill_at = int(mode.removeprefix("stmt:")) if mode.startswith("stmt:") else None

    def on_statement(sql: str) -> None:
        if kill_at is not None and len(statements) == kill_at:
            _die()
        statements.append(sql)

    store._db.set_trace_callback(on_statement)
    store.commit_turn(SESSION_ID, turn)
    store._db.set_trace_callback(None)
    if mode == "after":
        _die()
    if mode == "count":
        print(json.dumps(statements))
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
