"""Broken stores of placements (clauses SS-PLACE-*, SS-TYPE-*): placed acquires, their visibility,
reacquisition and durability.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_reference._host.session_store_live import AcquiredSession
from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import PlacedRow, SessionPlacement, StoreSummary

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="ttl-hides-placement-argument",
    summary="a store without placements still treats a placed acquire specially",
    clauses=("SS-PLACE-009",),
    kind="ttl",
)
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


@store_break_of(
    name="placed-visible-in-list", summary="placed sessions appear in list()", clauses=("SS-PLACE-012",)
)
class PlacedVisible(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        rows = self._db.execute(
            "SELECT id, last_active_at, created_at, last_task_id, last_task_run_id, forked_from"
            " FROM store_sessions ORDER BY last_active_at DESC, id"
        ).fetchall()
        return [StoreSummary(*row) for row in rows]


@store_break_of(
    name="placed-id-claimable",
    summary="a claim-form acquire attaches to a placed session",
    clauses=("SS-PLACE-016",),
)
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


@store_break_of(
    name="placement-reacquire-refused",
    summary="the creating chain's re-acquire with its placement is refused",
    clauses=("SS-PLACE-017",),
)
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


@store_break_of(
    name="placement-ignored",
    summary="a store declaring placements creates ordinary sessions",
    clauses=("SS-PLACE-001", "SS-PLACE-002", "SS-PLACE-018"),
)
class PlacementIgnored(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        return await super().acquire(session_id, require_existing=require_existing)


@store_break_of(
    name="placement-rewritten",
    summary="re-opening with another placement rewrites the tuple",
    clauses=("SS-PLACE-015",),
)
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


@store_break_of(
    name="placed-at-on-reopen",
    summary="placedAt is stamped again at every re-open",
    clauses=("SS-PLACE-003",),
)
class PlacedAtOnReopen(SqliteSessionStore):
    def _touch_row(self, session_id: str) -> None:
        super()._touch_row(session_id)
        with self._write() as db:
            db.execute(
                "UPDATE store_sessions SET placed_at = ? WHERE id = ? AND placed = 1",
                (self._clock(), session_id),
            )


@store_break_of(
    name="tuple-guessed",
    summary="listPlaced fills a missing scope or handle with an empty string",
    clauses=("SS-PLACE-005",),
)
class TupleGuessed(SqliteSessionStore):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        rows = await super().list_placed(kind, older_than_ms=older_than_ms, scope=scope)
        return [replace(r, scope=r.scope or "", handle=r.handle or "") for r in rows]


@store_break_of(
    name="older-than-ignored", summary="listPlaced ignores olderThanMs", clauses=("SS-PLACE-020",)
)
class OlderThanIgnored(SqliteSessionStore):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        return await super().list_placed(kind, scope=scope)


@store_break_of(
    name="release-placed-keeps-history",
    summary="release of a placed session drops only the cached view",
    clauses=("SS-PLACE-014",),
)
class ReleasePlacedKeeps(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        self._live.pop(session_id, None)


@store_break_of(
    name="placed-lost-on-restart",
    summary="placed sessions do not survive a restart despite the declaration",
    clauses=("SS-PLACE-006", "SS-PLACE-008", "SS-PLACE-011"),
)
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


@store_break_of(
    name="minted-id-not-resolved",
    summary="acquire without an id answers an id that is not the session's",
    clauses=("SS-TYPE-006",),
)
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


@store_break_of(
    name="release-keeps-placed-entries",
    summary="release of a placed session deletes its row, partition entry and owner, but not its "
    "entries: the id created again starts with the old history",
    clauses=("SS-PLACE-014",),
)
class ReleaseKeepsPlacedEntries(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        row = self._row(session_id)
        if row is None or not row["placed"]:
            return
        with self._write() as db:
            db.execute("DELETE FROM store_sessions WHERE id = ?", (session_id,))
            db.execute("DELETE FROM store_owners WHERE session_id = ?", (session_id,))
