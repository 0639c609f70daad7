"""Child program of tests/reference/host/test_history_faults.py: use a store under a file-size limit
(a full disk).

Usage: ``python full_disk.py DB_PATH LIMIT_BYTES MODE``.  ``SIGXFSZ`` is ignored, so a write past the
limit fails with ``EFBIG`` the way a write to a full disk fails with ``ENOSPC``; then
``RLIMIT_FSIZE`` is set to ``LIMIT_BYTES`` and ``MODE`` runs:

* ``open``: open (create) the store at ``DB_PATH``;
* ``commit``: open the existing store and commit turns of session ``full-disk`` until one fails.

Prints one JSON object on stdout: ``committed`` (turns that returned), ``errors`` (the class name and
``RelaviumError``-ness of every exception seen, and its ``code`` when it has one).
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from typing import Any

from relavium_reference._host.history_store import HistoryStore
from relavium_reference._model.errors import RelaviumError
from relavium_reference._model.records import CompletedTurn, parse_completed_turn

SESSION_ID = "full-disk"


def _describe(exc: BaseException) -> dict[str, Any]:
    cause = exc.__cause__
    return {
        "type": type(exc).__name__,
        "documented": isinstance(exc, RelaviumError),
        "code": getattr(exc, "code", None),
        "cause": None if cause is None else type(cause).__name__,
        "causeCode": getattr(cause, "code", None),
    }


def _turn(index: int) -> CompletedTurn:
    """A turn of about 6 KB of text, with one cost entry."""
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": f"q{index} " * 400}]},
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": "a" * 4000}]},
            "costs": [{"model": "m", "inputTokens": 1, "costMicrocents": 1}],
        }
    )


def main() -> None:
    path, limit, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    committed = 0
    errors: list[dict[str, Any]] = []
    try:
        with HistoryStore.open(path) as store:
            if mode == "commit":
                for index in range(10_000):
                    store.commit_turn(SESSION_ID, _turn(index))
                    committed += 1
    except BaseException as exc:  # everything is reported, documented or not
        errors.append(_describe(exc))
    print(json.dumps({"committed": committed, "errors": errors}))


if __name__ == "__main__":
    main()
