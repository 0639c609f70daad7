"""The reference session stores, directly: the TTL store over a repo and the durable SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import DAY_MS, UNKNOWN, SessionError, SessionPlacement


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def msg(entry_id: str, parent: str | None = None) -> dict[str, Any]:
    return {
        "id": entry_id,
        "parentId": parent,
        "type": "message",
        "message": {"role": "user", "text": entry_id},
    }


@pytest.fixture(params=["ttl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    clock = Clock()
    made = (
        TtlSessionStore(clock=clock)
        if request.param == "ttl"
        else SqliteSessionStore.open(tmp_path, clock=clock)
    )
    made.test_clock = clock
    yield made
    run(made.dispose())


def test_acquire_creates_then_returns_the_same_session(store: Any) -> None:
    async def go() -> None:
        first = await store.acquire("s1")
        again = await store.acquire("s1")
        assert first.session is again.session
        assert first.session_id == "s1"
        minted = await store.acquire()
        assert minted.session_id
        assert minted.session_id != "s1"

    run(go())


def test_concurrent_acquire_returns_one_session(store: Any) -> None:
    async def go() -> None:
        got = await asyncio.gather(*(store.acquire("same") for _ in range(16)))
        assert len({id(a.session) for a in got}) == 1

    run(go())


def test_require_existing_refuses_and_creates_nothing(store: Any) -> None:
    async def go() -> None:
        with pytest.raises(SessionError) as caught:
            await store.acquire("missing", require_existing=True)
        assert caught.value.code == "not_found"
        assert await store.incarnation_of("missing") is UNKNOWN
        assert store.size == 0

    run(go())


def test_owner_of_has_three_states_and_register_first_write_wins(store: Any) -> None:
    async def go() -> None:
        assert await store.owner_of("x") is UNKNOWN
        await store.register("x", None)
        assert await store.owner_of("x") is None
        await store.register("x", "bob")
        assert await store.owner_of("x") is None
        await store.register("y", "alice")
        await store.register("y", "bob")
        await store.register("y", 42)
        assert await store.owner_of("y") == "alice"
        with pytest.raises(SessionError):
            await store.register("z", 42)
        assert await store.owner_of("z") is UNKNOWN

    run(go())


def test_forget_keeps_history(store: Any) -> None:
    async def go() -> None:
        acquired = await store.acquire("s")
        await acquired.session.append([msg("e1"), msg("e2", "e1")])
        await store.forget("s")
        again = await store.acquire("s", require_existing=True)
        assert [e["id"] for e in again.session.committed()] == ["e1", "e2"]

    run(go())


def test_fork_copies_committed_only_and_inherits_ownership(store: Any) -> None:
    async def go() -> None:
        source = await store.acquire("src")
        await source.session.append([msg("e1")])
        source.session.stage([msg("inflight", "e1")])
        await store.register("src", "alice")
        plain = await store.fork("src")
        explicit_null = await store.fork("src", None)
        other = await store.fork("src", "carol")
        assert await store.owner_of(plain) == "alice"
        assert await store.owner_of(explicit_null) == "alice"
        assert await store.owner_of(other) == "carol"
        fork = await store.acquire(plain, require_existing=True)
        assert [e["id"] for e in fork.session.committed()] == ["e1"]
        await fork.session.append([msg("f1", "e1")])
        assert [e["id"] for e in (await store.acquire("src")).session.committed()] == ["e1"]
        assert await store.fork("nope") is None
        unowned = await store.acquire("free")
        del unowned
        no_row = await store.fork("free")
        assert await store.owner_of(no_row) is UNKNOWN
        assert await store.owner_of(await store.fork("free", None)) is None

    run(go())


def test_note_task_run_without_run_id_clears_it(store: Any) -> None:
    async def go() -> None:
        await store.acquire("s")
        await store.note_task_run("s", "t1", "r1")
        [row] = [r for r in await store.list_sessions() if r.session_id == "s"]
        assert (row.last_task_id, row.last_task_run_id) == ("t1", "r1")
        await store.note_task_run("s", "t2")
        [row] = [r for r in await store.list_sessions() if r.session_id == "s"]
        assert (row.last_task_id, row.last_task_run_id) == ("t2", None)
        await store.note_task_run("unknown", "t3")  # never throws

    run(go())


def test_list_is_newest_first(store: Any) -> None:
    async def go() -> None:
        for name in ("a", "b", "c"):
            store.test_clock.now += 1000
            await store.acquire(name)
        store.test_clock.now += 1000
        await store.touch("a")
        assert [r.session_id for r in await store.list_sessions()] == ["a", "c", "b"]

    run(go())


def test_ttl_sweep_skips_pinned_and_delete_evicts_history() -> None:
    clock = Clock()
    store = TtlSessionStore(clock=clock)

    async def go() -> None:
        await store.acquire("kept")
        await store.acquire("idle")
        await store.pin("kept")
        clock.now += 8 * DAY_MS
        assert store.size == 1
        assert [r.session_id for r in await store.list_sessions()] == ["kept"]
        with pytest.raises(SessionError):
            await store.acquire("idle", require_existing=True)

    run(go())


def test_sqlite_restart_reaches_everything(tmp_path: Path) -> None:
    async def go() -> None:
        store = SqliteSessionStore.open(tmp_path)
        acquired = await store.acquire("s")
        await acquired.session.append([msg("e1")])
        incarnation = await store.incarnation_of("s")
        await store.register("s", "alice")
        placed = SessionPlacement(scope="t1", handle="a1")
        await store.acquire("p", placement=placed)
        await store.dispose()
        again = SqliteSessionStore.open(tmp_path)
        reopened = await again.acquire("s", require_existing=True)
        assert [e["id"] for e in reopened.session.committed()] == ["e1"]
        assert reopened.session.metadata.incarnation == incarnation == await again.incarnation_of("s")
        assert await again.owner_of("s") == "alice"
        assert [r.session_id for r in await again.list_sessions()] == ["s"]
        rows = await again.list_placed("subagent")
        assert [(r.session_id, r.scope, r.handle) for r in rows] == [("p", "t1", "a1")]
        await again.dispose()

    run(go())


def test_sqlite_placement_obligations(tmp_path: Path) -> None:
    async def go() -> None:
        store = SqliteSessionStore.open(tmp_path)
        placement = SessionPlacement(scope="t1", handle="a1")
        created = await store.acquire("p", placement=placement)
        await created.session.append([msg("e1")])
        assert [r.session_id for r in await store.list_sessions()] == []
        with pytest.raises(SessionError) as caught:
            await store.acquire("p")
        assert caught.value.code == "placement_refused"
        reopened = await store.acquire("p", require_existing=True, placement=SessionPlacement(scope="t2"))
        assert reopened.session is created.session
        assert [r.scope for r in await store.list_placed("subagent")] == ["t1"]
        assert await store.list_placed("subagent", scope="t2") == []
        await store.register("p", "alice")
        await store.release("p")
        assert await store.list_placed("subagent") == []
        assert await store.owner_of("p") is UNKNOWN
        with pytest.raises(SessionError):
            await store.acquire("p", require_existing=True)
        incomplete = await store.acquire("q", placement=SessionPlacement(scope="t1"))
        del incomplete
        [row] = await store.list_placed("subagent")
        assert row.to_wire()["tupleIncomplete"] is True
        await store.dispose()

    run(go())


def test_sqlite_register_across_two_connections(tmp_path: Path) -> None:
    async def go() -> None:
        one, two = SqliteSessionStore.open(tmp_path), SqliteSessionStore.open(tmp_path)
        await one.register("s", "alice")
        await two.register("s", "bob")
        assert await two.owner_of("s") == "alice" == await one.owner_of("s")
        await one.dispose()
        await two.dispose()

    run(go())
