"""Broken stores of registration (clauses SS-REG-*): register's single write and its refusals."""

from __future__ import annotations

import asyncio

from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_reference._host.session_store_postgres import PostgresSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import Unknown

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="register-read-then-write",
    summary="register reads its own view, then writes with REPLACE",
    clauses=("SS-REG-003", "SS-REG-004"),
)
class RegisterReadThenWrite(SqliteSessionStore):
    """Reads the owner from this instance's view, then writes with REPLACE: no uniqueness guarantee."""

    _view: dict[str, str | None]

    async def register(self, session_id: str, owner: object) -> None:
        view = self.__dict__.setdefault("_view", {})
        if session_id in view:
            return
        await asyncio.sleep(0)
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO store_owners (session_id, owner) VALUES (?, ?)", (session_id, owner)
            )
        view[session_id] = owner


@store_break_of(
    name="register-overwrites",
    summary="register overwrites the first owner",
    clauses=("SS-REG-001", "SS-REG-002"),
)
class RegisterOverwrites(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if owner is not None and not isinstance(owner, str):
            await super().register(session_id, owner)
            return
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO store_owners (session_id, owner) VALUES (?, ?)", (session_id, owner)
            )


@store_break_of(
    name="register-throws-later",
    summary="a later register throws instead of a silent no-op",
    clauses=("SS-REG-002",),
)
class RegisterThrowsLater(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if not isinstance(await self.owner_of(session_id), Unknown):
            raise PermissionError("already owned")
        await super().register(session_id, owner)


@store_break_of(
    name="register-swallows-invalid",
    summary="a first register with a non-string owner is silently dropped",
    clauses=("SS-REG-006",),
)
class RegisterSwallowsInvalid(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if owner is not None and not isinstance(owner, str):
            return
        await super().register(session_id, owner)


@store_break_of(
    name="ownership-dropped-with-view",
    summary="forget drops the ownership row of a live session",
    clauses=("SS-REG-005",),
)
class OwnershipDroppedWithView(SqliteSessionStore):
    async def forget(self, session_id: str) -> None:
        await super().forget(session_id)
        with self._write() as db:
            db.execute("DELETE FROM store_owners WHERE session_id = ?", (session_id,))


@store_break_of(
    name="pg-register-read-then-write",
    summary="the PostgreSQL store's register reads the ownership row, then writes one: a racing "
    "replica's owner is overwritten after it read itself back",
    clauses=("SS-REG-004", "SS-REG-003"),
    kind="pg",
)
class PgRegisterReadThenWrite(PostgresSessionStore):
    async def claim(self, session_id: str, owner: object) -> str | None:
        if owner is not None and not isinstance(owner, str):
            return await super().claim(session_id, owner)
        found = await self._one("SELECT owner FROM {s}.store_owners WHERE session_id = %s", (session_id,))
        if found is None:  # nobody yet, as far as this read knows
            await self._exec(
                "INSERT INTO {s}.store_owners (session_id, owner) VALUES (%s, %s)"
                " ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner",
                (session_id, owner),
            )
        winner = await self._one("SELECT owner FROM {s}.store_owners WHERE session_id = %s", (session_id,))
        return None if winner is None else winner["owner"]


@store_break_of(
    name="release-drops-owner-row",
    summary="release of an ordinary session drops its ownership row and keeps its history: the live "
    "session reads as unowned, claimable by anyone (store/release-owned-owner-of reads ownerOf after it)",
    clauses=("SS-REG-005",),
)
class ReleaseDropsOwnerRow(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        await super().release(session_id)
        with self._write() as db:
            db.execute("DELETE FROM store_owners WHERE session_id = ?", (session_id,))
