"""Broken stores of fork (clauses SS-FORK-*): what a fork copies, owns and names as its source."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.session_store_impl import StoreKind, store_capabilities
from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_reference._host.session_store_live import INHERIT, Inherit, iso_of_ms, mint_id
from relavium_reference._host.session_store_postgres import PostgresSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import StoreSummary

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="fork-drops-ownership",
    summary="a fork without an owner argument gets no ownership row",
    clauses=("SS-FORK-012", "SS-FORK-013"),
)
class ForkDropsOwnership(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is not None and not isinstance(owner, str):
            with self._write() as db:
                db.execute("DELETE FROM store_owners WHERE session_id = ?", (new_id,))
        return new_id


@store_break_of(
    name="fork-ignores-owner", summary="fork ignores its owner argument", clauses=("SS-FORK-011",)
)
class ForkIgnoresOwner(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        return await super().fork(source_id, INHERIT)


@store_break_of(
    name="fork-copies-uncommitted",
    summary="fork copies the source's turn in flight",
    clauses=("SS-FORK-014",),
)
class ForkCopiesUncommitted(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        live = self._live.get(source_id)
        if new_id is not None and live is not None and live.staged():
            await self._append(new_id, live.staged())
        return new_id


@store_break_of(name="fork-copies-nothing", summary="fork makes an empty session", clauses=("SS-FORK-004",))
class ForkCopiesNothing(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (new_id,))
        return new_id


@store_break_of(
    name="fork-of-missing-creates",
    summary="fork of a missing source answers a new empty session",
    clauses=("SS-FORK-005",),
)
class ForkOfMissingCreates(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is None:
            return (await self.acquire()).session_id
        return new_id


@store_break_of(
    name="fork-shares-history", summary="writes to a fork land in its source too", clauses=("SS-FORK-006",)
)
class ForkSharesHistory(SqliteSessionStore):
    """A fork's writes land in its source too (the copy is not independent)."""

    async def _append(self, session_id: str, entries: list[dict[str, Any]], base: int | None = None) -> None:
        await super()._append(session_id, entries, base)
        row = self._row(session_id)
        if row is not None and row["forked_from"]:
            await super()._append(row["forked_from"], entries)
            source = self._live.get(row["forked_from"])
            if source is not None:
                source._committed.extend(copy.deepcopy(entries))


@store_break_of(
    name="forked-from-wrong", summary="a fork's summary names itself as its source", clauses=("SS-FORK-001",)
)
class ForkedFromWrong(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [
            replace(r, forked_from=r.session_id) if r.forked_from else r
            for r in await super().list_sessions()
        ]


@store_break_of(
    name="forked-from-everywhere", summary="every summary carries a forkedFrom", clauses=("SS-FORK-002",)
)
class ForkedFromEverywhere(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [replace(r, forked_from=r.forked_from or "root") for r in await super().list_sessions()]


@store_break_of(
    name="pg-fork-not-transactional",
    summary="the PostgreSQL store's fork commits the new row first, then copies the entries one "
    "statement at a time, then the ownership row: a replica killed mid-fork leaves a partial copy",
    clauses=("SS-FORK-009",),
    kind="pg",
)
class PgForkNotTransactional(PostgresSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        if await self._one("SELECT 1 AS found FROM {s}.store_sessions WHERE id = %s", (source_id,)) is None:
            return None
        new_id = mint_id()
        now = self._clock()
        await self._exec(
            "INSERT INTO {s}.store_sessions (id, created_at, forked_from, last_active_at)"
            " VALUES (%s, %s, %s, %s)",
            (new_id, iso_of_ms(now), source_id, now),
        )
        rows = await self._all(
            "SELECT seq, entry FROM {s}.store_entries WHERE session_id = %s ORDER BY seq", (source_id,)
        )
        for row in rows:
            await self._exec(
                "INSERT INTO {s}.store_entries (session_id, seq, entry) VALUES (%s, %s, %s)",
                (new_id, row["seq"], row["entry"]),
            )
        source = await self._one("SELECT owner FROM {s}.store_owners WHERE session_id = %s", (source_id,))
        if isinstance(owner, str) or source is not None:
            chosen = owner if isinstance(owner, str) else source["owner"] if source else None
            await self._exec(
                "INSERT INTO {s}.store_owners (session_id, owner) VALUES (%s, %s)", (new_id, chosen)
            )
        return new_id


def _without_forget(kind: StoreKind) -> tuple[str, ...]:
    return tuple(word for word in store_capabilities(kind) if word != "store:forget")


@store_break_of(
    name="fork-shares-history-without-forget",
    summary="a store that leaves out forget, and whose fork's writes land in its source too: only cases "
    "that judge fork without forget catch it",
    clauses=("SS-FORK-006",),
    declaring=_without_forget,
)
class ForkSharesHistoryWithoutForget(ForkSharesHistory):
    pass


@store_break_of(
    name="fork-copies-nothing-without-forget",
    summary="a store that leaves out forget, and whose fork makes an empty session",
    clauses=("SS-FORK-004",),
    declaring=_without_forget,
)
class ForkCopiesNothingWithoutForget(ForkCopiesNothing):
    pass
