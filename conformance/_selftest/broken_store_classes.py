"""The broken session stores' store classes: each a reference store with one method changed.

The catalogue that names them, the rule each breaks and the clauses that must catch it is
``broken_stores.py``.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from relavium_reference._host.session_store_live import (
    INHERIT,
    AcquiredSession,
    Inherit,
    StoreSession,
    mint_id,
)
from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import (
    UNKNOWN,
    PlacedRow,
    SessionMetadata,
    SessionPlacement,
    StoreSummary,
    Unknown,
)

__all__ = [
    "AcquireNotSingleFlight",
    "AcquireRecreates",
    "AnonymousReadsUnknown",
    "CreatedAtNotIso",
    "DisposeThrows",
    "ForgetDeletes",
    "ForkCopiesNothing",
    "ForkCopiesUncommitted",
    "ForkDropsOwnership",
    "ForkIgnoresOwner",
    "ForkOfMissingCreates",
    "ForkSharesHistory",
    "ForkedFromEverywhere",
    "ForkedFromWrong",
    "IncarnationOfUnknownAnswers",
    "IncarnationReminted",
    "LastTaskDefaultsToSession",
    "ListNewestOnly",
    "ListOldestFirst",
    "MintedIdNotResolved",
    "NoteTaskRunIgnored",
    "NoteTaskRunKeepsRunId",
    "NoteTaskRunThrows",
    "OlderThanIgnored",
    "OwnedReadsAnonymous",
    "OwnerOfCollapses",
    "OwnershipDroppedWithView",
    "PlacedAtOnReopen",
    "PlacedClaimable",
    "PlacedLostOnRestart",
    "PlacedVisible",
    "PlacementIgnored",
    "PlacementReacquireRefused",
    "PlacementRewritten",
    "RegisterOverwrites",
    "RegisterReadThenWrite",
    "RegisterSwallowsInvalid",
    "RegisterThrowsLater",
    "ReleaseKeepsLive",
    "ReleasePlacedKeeps",
    "RequireExistingCreates",
    "SizeCountsNothing",
    "SweepIgnoresPin",
    "TouchIgnored",
    "TtlHidesPlacementArgument",
    "TupleGuessed",
]


class OwnerOfCollapses(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return None if isinstance(owner, Unknown) else owner


class AnonymousReadsUnknown(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return UNKNOWN if owner is None else owner


class OwnedReadsAnonymous(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return None if isinstance(owner, str) else owner


class ListNewestOnly(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return (await super().list_sessions())[:1]


class TtlHidesPlacementArgument(TtlSessionStore):
    """Declares no placements, yet keeps a session created with one out of list()."""

    _hidden: set[str]

    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        got = await super().acquire(session_id, require_existing=require_existing)
        if placement is not None:
            self.__dict__.setdefault("_hidden", set()).add(got.session_id)
        return got

    async def list_sessions(self) -> list[StoreSummary]:
        hidden = self.__dict__.get("_hidden", set())
        return [r for r in await super().list_sessions() if r.session_id not in hidden]


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


class ForgetDeletes(SqliteSessionStore):
    async def forget(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM store_sessions WHERE id = ?", (session_id,))


class ForkDropsOwnership(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is not None and not isinstance(owner, str):
            with self._write() as db:
                db.execute("DELETE FROM store_owners WHERE session_id = ?", (new_id,))
        return new_id


class ForkIgnoresOwner(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        return await super().fork(source_id, INHERIT)


class ForkCopiesUncommitted(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        live = self._live.get(source_id)
        if new_id is not None and live is not None and live.staged():
            await self._append(new_id, live.staged())
        return new_id


class ForkCopiesNothing(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (new_id,))
        return new_id


class ForkOfMissingCreates(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is None:
            return (await self.acquire()).session_id
        return new_id


class ForkSharesHistory(SqliteSessionStore):
    """A fork's writes land in its source too (the copy is not independent)."""

    async def _append(
        self, session_id: str, entries: list[dict[str, Any]], base: int | None = None
    ) -> None:
        await super()._append(session_id, entries, base)
        row = self._row(session_id)
        if row is not None and row["forked_from"]:
            await super()._append(row["forked_from"], entries)
            source = self._live.get(row["forked_from"])
            if source is not None:
                source._committed.extend(copy.deepcopy(entries))


class ForkedFromWrong(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [
            replace(r, forked_from=r.session_id) if r.forked_from else r
            for r in await super().list_sessions()
        ]


class ForkedFromEverywhere(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [replace(r, forked_from=r.forked_from or "root") for r in await super().list_sessions()]


class PlacedVisible(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        rows = self._db.execute(
            "SELECT id, last_active_at, created_at, last_task_id, last_task_run_id, forked_from"
            " FROM store_sessions ORDER BY last_active_at DESC, id"
        ).fetchall()
        return [StoreSummary(*row) for row in rows]


class PlacedClaimable(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        row = self._row(session_id) if session_id else None
        if row is not None and row["placed"]:
            return await super().acquire(session_id, require_existing=True)
        return await super().acquire(session_id, require_existing=require_existing, placement=placement)


class PlacementReacquireRefused(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        row = self._row(session_id) if session_id else None
        if row is not None and row["placed"] and not require_existing:
            placement = None  # the creating chain's re-acquire is treated as a claim
        return await super().acquire(session_id, require_existing=require_existing, placement=placement)


class PlacementIgnored(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        return await super().acquire(session_id, require_existing=require_existing)


class PlacementRewritten(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        got = await super().acquire(session_id, require_existing=require_existing, placement=placement)
        if placement is not None:
            with self._write() as db:
                db.execute(
                    "UPDATE store_sessions SET placement_scope = ?, placement_handle = ?"
                    " WHERE id = ? AND placed = 1",
                    (placement.scope, placement.handle, got.session_id),
                )
        return got


class PlacedAtOnReopen(SqliteSessionStore):
    def _touch_row(self, session_id: str) -> None:
        super()._touch_row(session_id)
        with self._write() as db:
            db.execute(
                "UPDATE store_sessions SET placed_at = ? WHERE id = ? AND placed = 1",
                (self._clock(), session_id),
            )


class TupleGuessed(SqliteSessionStore):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        rows = await super().list_placed(kind, older_than_ms=older_than_ms, scope=scope)
        return [replace(r, scope=r.scope or "", handle=r.handle or "") for r in rows]


class OlderThanIgnored(SqliteSessionStore):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        return await super().list_placed(kind, scope=scope)


class ReleasePlacedKeeps(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        self._live.pop(session_id, None)


class PlacedLostOnRestart(SqliteSessionStore):
    @classmethod
    def open(cls, folder: Any, *, clock: Callable[[], int] = lambda: 0) -> SqliteSessionStore:
        store = super().open(folder, clock=clock)
        with store._write() as db:
            db.execute(
                "DELETE FROM store_entries"
                " WHERE session_id IN (SELECT id FROM store_sessions WHERE placed = 1)"
            )
            db.execute("DELETE FROM store_sessions WHERE placed = 1")
        return store


class RequireExistingCreates(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        return await super().acquire(session_id, placement=placement)


class AcquireNotSingleFlight(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        got = await super().acquire(session_id, require_existing=require_existing, placement=placement)
        await asyncio.sleep(0)
        fresh = StoreSession(got.session.metadata, got.session.committed(), self._append)
        self._live[got.session_id] = fresh
        return AcquiredSession(fresh, got.session_id)


class AcquireRecreates(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        row = self._row(session_id) if session_id else None
        if row is not None and not row["placed"] and not require_existing and placement is None:
            self._live.pop(row["id"], None)
            with self._write() as db:
                db.execute("DELETE FROM store_entries WHERE session_id = ?", (row["id"],))
                db.execute("DELETE FROM store_sessions WHERE id = ?", (row["id"],))
        return await super().acquire(session_id, require_existing=require_existing, placement=placement)


class MintedIdNotResolved(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        got = await super().acquire(session_id, require_existing=require_existing, placement=placement)
        return got if session_id is not None else AcquiredSession(got.session, "session")


class ListOldestFirst(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return list(reversed(await super().list_sessions()))


class NoteTaskRunKeepsRunId(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if run_id is None:
            with self._write() as db:
                db.execute("UPDATE store_sessions SET last_task_id = ? WHERE id = ?", (task_id, session_id))
            return
        await super().note_task_run(session_id, task_id, run_id)


class NoteTaskRunIgnored(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        return None


class LastTaskDefaultsToSession(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [
            replace(r, last_task_id=r.last_task_id or r.session_id) for r in await super().list_sessions()
        ]


class NoteTaskRunThrows(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if self._row(session_id) is None:
            raise KeyError(session_id)
        await super().note_task_run(session_id, task_id, run_id)


class TouchIgnored(SqliteSessionStore):
    async def touch(self, session_id: str) -> None:
        return None


class CreatedAtNotIso(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [replace(r, created_at="yesterday") for r in await super().list_sessions()]


class ReleaseKeepsLive(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        return None


class SizeCountsNothing(SqliteSessionStore):
    @property
    def size(self) -> int:
        return 0


class RegisterOverwrites(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if owner is not None and not isinstance(owner, str):
            await super().register(session_id, owner)
            return
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO store_owners (session_id, owner) VALUES (?, ?)", (session_id, owner)
            )


class RegisterThrowsLater(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if not isinstance(await self.owner_of(session_id), Unknown):
            raise PermissionError("already owned")
        await super().register(session_id, owner)


class RegisterSwallowsInvalid(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if owner is not None and not isinstance(owner, str):
            return
        await super().register(session_id, owner)


class OwnershipDroppedWithView(SqliteSessionStore):
    async def forget(self, session_id: str) -> None:
        await super().forget(session_id)
        with self._write() as db:
            db.execute("DELETE FROM store_owners WHERE session_id = ?", (session_id,))


class IncarnationReminted(SqliteSessionStore):
    def _session(self, row: Any) -> StoreSession:
        metadata = SessionMetadata(row["id"], row["created_at"], mint_id(), row["forked_from"])
        return StoreSession(metadata, self._entries(row["id"]), self._append)

    async def forget(self, session_id: str) -> None:
        await super().forget(session_id)


class IncarnationOfUnknownAnswers(SqliteSessionStore):
    async def incarnation_of(self, session_id: str) -> str | Unknown:
        found = await super().incarnation_of(session_id)
        return "none" if found is UNKNOWN else found


class DisposeThrows(SqliteSessionStore):
    async def dispose(self) -> None:
        await super().dispose()
        raise RuntimeError("connection already closed")


class SweepIgnoresPin(TtlSessionStore):
    async def pin(self, session_id: str) -> None:
        return None
