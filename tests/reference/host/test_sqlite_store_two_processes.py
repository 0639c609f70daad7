"""Two real processes appending to one SQLite store session (issue 35, item 5).

An append from a view another process has moved past is refused with the contract's ``conflict`` and
writes nothing; appends racing from two processes leave the stored history one chain holding exactly the
appends that were answered.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from relavium_reference._host.session_store_sqlite import SqliteSessionStore

_WRITER = r"""
import asyncio, json, sys
from pathlib import Path
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import SessionError

folder, name, rounds, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])

async def main():
    store = SqliteSessionStore.open(folder)
    answered, conflicts = [], 0
    while not go.exists():
        await asyncio.sleep(0.001)
    for i in range(rounds):
        await store.forget("s")
        view = (await store.acquire("s", require_existing=True)).session
        leaf = view.committed()[-1]["id"]
        entry = f"{name}-{i}"
        try:
            await view.append([{"id": entry, "parentId": leaf, "type": "message"}])
            answered.append(entry)
        except SessionError as exc:
            assert exc.code == "conflict", exc.code
            conflicts += 1
    await store.dispose()
    print(json.dumps({"answered": answered, "conflicts": conflicts}))

asyncio.run(main())
"""

_STALE = r"""
import asyncio, json, sys
from pathlib import Path
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import SessionError

folder, ready, moved = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

async def main():
    store = SqliteSessionStore.open(folder)
    view = (await store.acquire("s", require_existing=True)).session
    ready.touch()
    while not moved.exists():
        await asyncio.sleep(0.001)
    try:
        await view.append([{"id": "stale", "parentId": "root", "type": "message"}])
        print(json.dumps({"refused": None}))
    except SessionError as exc:
        print(json.dumps({"refused": str(exc.code)}))
    await store.dispose()

asyncio.run(main())
"""


def _stored(folder: Path) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        store = SqliteSessionStore.open(folder)
        try:
            return (await store.acquire("s", require_existing=True)).session.committed()
        finally:
            await store.dispose()

    return asyncio.run(read())


def _seed(folder: Path) -> None:
    async def seed() -> None:
        store = SqliteSessionStore.open(folder)
        await (await store.acquire("s")).session.append([{"id": "root", "parentId": None, "type": "message"}])
        await store.dispose()

    asyncio.run(seed())


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _answer(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return answer


def test_an_append_from_a_view_another_process_moved_past_is_refused_with_conflict(tmp_path: Path) -> None:
    _seed(tmp_path)
    ready, moved = tmp_path / "ready", tmp_path / "moved"
    stale = _spawn(_STALE, str(tmp_path), str(ready), str(moved))
    try:
        for _ in range(60_000):
            if ready.exists() or stale.poll() is not None:
                break
            time.sleep(0.002)
        assert ready.exists(), stale.stderr.read() if stale.stderr else ""

        async def move_on() -> None:
            store = SqliteSessionStore.open(tmp_path)
            view = (await store.acquire("s", require_existing=True)).session
            await view.append([{"id": "other", "parentId": "root", "type": "message"}])
            await store.dispose()

        asyncio.run(move_on())
        moved.touch()
        assert _answer(stale) == {"refused": "conflict"}
    finally:
        if stale.poll() is None:
            stale.kill()
    assert [e["id"] for e in _stored(tmp_path)] == ["root", "other"]


def test_appends_racing_from_two_processes_leave_one_chain_of_the_answered_appends(tmp_path: Path) -> None:
    _seed(tmp_path)
    go = tmp_path / "go"
    writers = [_spawn(_WRITER, str(tmp_path), name, "40", str(go)) for name in ("p", "q")]
    go.touch()
    answers = [_answer(w) for w in writers]
    stored = _stored(tmp_path)
    ids = [e["id"] for e in stored]
    assert ids[0] == "root"
    for before, entry in itertools.pairwise(stored):
        assert entry["parentId"] == before["id"], ids
    answered = [e for a in answers for e in a["answered"]]
    assert sorted(ids[1:]) == sorted(answered)  # every answered append is stored, nothing else
    assert len(answered) + sum(a["conflicts"] for a in answers) == 80
