"""The PostgreSQL session store, directly, on the server ``RELAVIUM_PG_DSN`` names (skipped without one).

Every test opens its own schema and drops it afterwards.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from relavium_reference._model.session_store_shapes import UNKNOWN, SessionError, SessionPlacement
from relavium_reference._rules.pg_dsn import check_schema_name, redact_dsn

DSN = os.environ.get("RELAVIUM_PG_DSN", "").strip()
needs_server = pytest.mark.skipif(
    not DSN, reason="RELAVIUM_PG_DSN is not set: no PostgreSQL server to test on"
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def msg(entry_id: str, parent: str | None = None) -> dict[str, Any]:
    return {"id": entry_id, "parentId": parent, "type": "message"}


@pytest.fixture
def schema() -> Iterator[str]:
    from relavium_reference._host.session_store_postgres import drop_schema

    name = f"relavium_test_{uuid.uuid4().hex[:16]}"
    yield name
    run(drop_schema(DSN, name))


async def _open(schema: str, **options: Any) -> Any:
    from relavium_reference._host.session_store_postgres import PostgresSessionStore

    return await PostgresSessionStore.open(DSN, schema, **options)


def test_redact_dsn_hides_every_password_form() -> None:
    assert redact_dsn("host=db password=s3cret user=u") == "host=db password=*** user=u"
    assert redact_dsn("host=db password='a b\\'c' user=u") == "host=db password=*** user=u"
    assert redact_dsn("postgresql://u:s3cret@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert redact_dsn("postgres://db/x?user=u&password=s3cret&sslmode=require") == (
        "postgres://db/x?user=u&password=***&sslmode=require"
    )
    assert redact_dsn("host=db user=u") == "host=db user=u"


def test_schema_names_are_plain_identifiers_and_never_postgres_own() -> None:
    assert check_schema_name("relavium_store") is None
    for bad in ("", "Upper", "1abc", 'a"b', "a;drop", "pg_catalog", "information_schema", "x" * 64):
        assert check_schema_name(bad) is not None, bad


@needs_server
def test_replicas_share_history_ownership_and_incarnation(schema: str) -> None:
    async def go() -> None:
        a, b = await _open(schema), await _open(schema)
        try:
            made = await a.acquire("s")
            await made.session.append([msg("e1"), msg("e2", "e1")])
            seen = await b.acquire("s", require_existing=True)
            assert [e["id"] for e in seen.session.committed()] == ["e1", "e2"]
            assert seen.session.metadata.incarnation == made.session.metadata.incarnation
            assert await b.incarnation_of("s") == made.session.metadata.incarnation
            assert await a.owner_of("s") is UNKNOWN
            assert await a.claim("s", None) is None  # anonymous: a row whose owner is null
            assert await b.claim("s", "bob") is None  # first write won
            assert await b.owner_of("s") is None
        finally:
            await a.dispose()
            await b.dispose()

    run(go())


@needs_server
def test_an_append_from_a_stale_view_is_refused_with_conflict_and_writes_nothing(schema: str) -> None:
    async def go() -> None:
        a, b = await _open(schema), await _open(schema)
        try:
            view_a = (await a.acquire("s")).session
            await view_a.append([msg("root")])
            view_b = (await b.acquire("s", require_existing=True)).session
            await view_b.append([msg("b1", "root")])
            with pytest.raises(SessionError) as refused:
                await view_a.append([msg("a1", "root")])
            assert refused.value.code == "conflict"
            await a.forget("s")
            fresh = (await a.acquire("s", require_existing=True)).session
            assert [e["id"] for e in fresh.committed()] == ["root", "b1"]
        finally:
            await a.dispose()
            await b.dispose()

    run(go())


@needs_server
def test_racing_appends_from_two_replicas_leave_one_chain(schema: str) -> None:
    async def go() -> None:
        a, b = await _open(schema), await _open(schema)
        try:
            await (await a.acquire("s")).session.append([msg("root")])
            for round_no in range(10):
                views = [(await s.acquire("s", require_existing=True)).session for s in (a, b)]
                leaf = views[0].committed()[-1]["id"]
                assert views[1].committed()[-1]["id"] == leaf
                results = await asyncio.gather(
                    *(v.append([msg(f"{i}-{round_no}", leaf)]) for i, v in enumerate(views)),
                    return_exceptions=True,
                )
                assert sum(r is None for r in results) == 1, results
                assert all(r is None or getattr(r, "code", None) == "conflict" for r in results)
                await a.forget("s")
                await b.forget("s")
            stored = (await a.acquire("s", require_existing=True)).session.committed()
            assert len(stored) == 11
            for before, entry in itertools.pairwise(stored):
                assert entry["parentId"] == before["id"]
        finally:
            await a.dispose()
            await b.dispose()

    run(go())


@needs_server
def test_release_of_a_placed_session_deletes_it_and_its_owner_row_for_every_replica(schema: str) -> None:
    async def go() -> None:
        a, b = await _open(schema), await _open(schema)
        try:
            placement = SessionPlacement(scope="t1", handle="h1")
            got = await a.acquire("p", placement=placement)
            await got.session.append([msg("e1")])
            await a.register("p", "alice")
            assert [r.session_id for r in await b.list_placed("subagent")] == ["p"]
            assert await b.list_sessions() == []
            with pytest.raises(SessionError) as refused:
                await b.acquire("p")
            assert refused.value.code == "placement_refused"
            await b.release("p")
            assert await a.owner_of("p") is UNKNOWN
            with pytest.raises(SessionError):
                await a.acquire("p", require_existing=True)
            ordinary = await a.acquire("o")
            await ordinary.session.append([msg("k")])
            await a.release("o")  # an ordinary session keeps its history
            again = await b.acquire("o", require_existing=True)
            assert [e["id"] for e in again.session.committed()] == ["k"]
        finally:
            await a.dispose()
            await b.dispose()

    run(go())


@needs_server
def test_fork_copies_committed_history_and_ownership_in_one_transaction(schema: str) -> None:
    async def go() -> None:
        a, b = await _open(schema), await _open(schema)
        try:
            src = (await a.acquire("src")).session
            await src.append([msg("e1"), msg("e2", "e1")])
            src.stage([msg("staged", "e2")])
            await a.register("src", "alice")
            fork_id = await b.fork("src")
            assert fork_id is not None
            assert await b.fork("missing") is None
            assert await a.owner_of(fork_id) == "alice"
            assert await a.fork("src", "carol") is not None
            copy = (await a.acquire(fork_id, require_existing=True)).session
            assert [e["id"] for e in copy.committed()] == ["e1", "e2"]
            assert copy.metadata.forked_from == "src"
            listed = {s.session_id: s.forked_from for s in await b.list_sessions()}
            assert listed[fork_id] == "src"
        finally:
            await a.dispose()
            await b.dispose()

    run(go())


@needs_server
def test_the_schema_is_versioned_and_a_newer_one_is_refused(schema: str) -> None:
    import psycopg

    from relavium_reference._host.session_store_postgres import SCHEMA_VERSION, PostgresStoreError

    async def go() -> None:
        first = await _open(schema)
        await first.dispose()
        second = await _open(schema)  # migrating an up-to-date schema changes nothing
        await second.dispose()
        async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
            cur = await conn.execute(f'SELECT version FROM "{schema}".store_version')
            assert await cur.fetchall() == [(SCHEMA_VERSION,)]
            await conn.execute(f'UPDATE "{schema}".store_version SET version = {SCHEMA_VERSION + 1}')
        with pytest.raises(PostgresStoreError, match="version"):
            await _open(schema)

    run(go())


@needs_server
def test_opening_the_same_schema_from_many_replicas_at_once_migrates_once(schema: str) -> None:
    async def go() -> None:
        stores = await asyncio.gather(*(_open(schema) for _ in range(6)))
        try:
            made = await asyncio.gather(*(s.acquire("one") for s in stores))
            assert len({m.session.metadata.incarnation for m in made}) == 1
        finally:
            for store in stores:
                await store.dispose()

    run(go())


def test_an_unreachable_or_malformed_dsn_is_a_clear_error_with_the_password_redacted() -> None:
    from relavium_reference._host.session_store_postgres import PostgresStoreError

    for dsn in ("host=127.0.0.1 port=1 password=hunter2 connect_timeout=2", "not a dsn", ""):
        with pytest.raises(PostgresStoreError) as failed:
            run(_open_with(dsn))
        assert "hunter2" not in str(failed.value)
        assert str(failed.value)


async def _open_with(dsn: str) -> Any:
    from relavium_reference._host.session_store_postgres import PostgresSessionStore

    return await PostgresSessionStore.open(dsn, "relavium_never", timeout=3)
