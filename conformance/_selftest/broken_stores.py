"""Broken session stores: the reference stores with one obligation of the declaration taken away.

Each is caught when at least one store case citing its clauses fails against it while the reference
store of the same kind passes them all (``store_proofs.py``).  Most are the durable SQLite store with
one method changed; one is the TTL store (its sweep), some swap one pure helper, one declares two
durabilities at once.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from relavium_conformance._reference.store_impl import (
    REFERENCE_STORE_PURE,
    ReferenceStoreImplementation,
    StoreKind,
    StorePure,
    store_capabilities,
)
from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._host.store_session import INHERIT, AcquiredSession, Inherit, StoreSession, mint_id
from relavium_reference._model.store_shapes import (
    UNKNOWN,
    PlacedRow,
    SessionMetadata,
    SessionPlacement,
    StoreSummary,
    Unknown,
)
from relavium_reference._rules.store_helpers import bounded_tail

__all__ = ["BROKEN_STORES", "BrokenStore"]


@dataclass(frozen=True)
class BrokenStore:
    name: str
    rule: str
    clauses: tuple[str, ...]
    kind: StoreKind = "sqlite"
    store: type[Any] | None = None
    pure: StorePure = REFERENCE_STORE_PURE
    capabilities: tuple[str, ...] | None = None
    per_instance_storage: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def implementation(self) -> ReferenceStoreImplementation:
        opener = None
        if self.store is not None:
            cls = self.store
            if self.kind == "sqlite":

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    where = tempfile.mkdtemp(prefix="broken-") if self.per_instance_storage else location
                    return cls.open(where, clock=clock)

            else:

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    return cls(clock=clock)

        return ReferenceStoreImplementation(
            self.kind,
            opener=opener,
            pure=self.pure,
            capabilities=self.capabilities
            if self.capabilities is not None
            else store_capabilities(self.kind),
            name=f"broken:{self.name}",
        )


# --- the SQLite store, one method changed --------------------------------------------------------


class _OwnerOfCollapses(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return None if isinstance(owner, Unknown) else owner


class _AnonymousReadsUnknown(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return UNKNOWN if owner is None else owner


class _OwnedReadsAnonymous(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return None if isinstance(owner, str) else owner


class _ListNewestOnly(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return (await super().list_sessions())[:1]


class _TtlHidesPlacementArgument(TtlSessionStore):
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


class _RegisterReadThenWrite(SqliteSessionStore):
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


class _ForgetDeletes(SqliteSessionStore):
    async def forget(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM store_sessions WHERE id = ?", (session_id,))


class _ForkDropsOwnership(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is not None and not isinstance(owner, str):
            with self._write() as db:
                db.execute("DELETE FROM store_owners WHERE session_id = ?", (new_id,))
        return new_id


class _ForkIgnoresOwner(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        return await super().fork(source_id, INHERIT)


class _ForkCopiesUncommitted(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        live = self._live.get(source_id)
        if new_id is not None and live is not None and live.staged():
            await self._append(new_id, live.staged())
        return new_id


class _ForkCopiesNothing(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (new_id,))
        return new_id


class _ForkOfMissingCreates(SqliteSessionStore):
    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is None:
            return (await self.acquire()).session_id
        return new_id


class _ForkSharesHistory(SqliteSessionStore):
    """A fork's writes land in its source too (the copy is not independent)."""

    async def _append(self, session_id: str, entries: list[dict[str, Any]]) -> None:
        await super()._append(session_id, entries)
        row = self._row(session_id)
        if row is not None and row["forked_from"]:
            await super()._append(row["forked_from"], entries)
            source = self._live.get(row["forked_from"])
            if source is not None:
                source._committed.extend(copy.deepcopy(entries))


class _ForkedFromWrong(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [
            replace(r, forked_from=r.session_id) if r.forked_from else r
            for r in await super().list_sessions()
        ]


class _ForkedFromEverywhere(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [replace(r, forked_from=r.forked_from or "root") for r in await super().list_sessions()]


class _PlacedVisible(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        rows = self._db.execute(
            "SELECT id, last_active_at, created_at, last_task_id, last_task_run_id, forked_from"
            " FROM store_sessions ORDER BY last_active_at DESC, id"
        ).fetchall()
        return [StoreSummary(*row) for row in rows]


class _PlacedClaimable(SqliteSessionStore):
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


class _PlacementReacquireRefused(SqliteSessionStore):
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


class _PlacementIgnored(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        return await super().acquire(session_id, require_existing=require_existing)


class _PlacementRewritten(SqliteSessionStore):
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


class _PlacedAtOnReopen(SqliteSessionStore):
    def _touch_row(self, session_id: str) -> None:
        super()._touch_row(session_id)
        with self._write() as db:
            db.execute(
                "UPDATE store_sessions SET placed_at = ? WHERE id = ? AND placed = 1",
                (self._clock(), session_id),
            )


class _TupleGuessed(SqliteSessionStore):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        rows = await super().list_placed(kind, older_than_ms=older_than_ms, scope=scope)
        return [replace(r, scope=r.scope or "", handle=r.handle or "") for r in rows]


class _OlderThanIgnored(SqliteSessionStore):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]:
        return await super().list_placed(kind, scope=scope)


class _ReleasePlacedKeeps(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        self._live.pop(session_id, None)


class _PlacedLostOnRestart(SqliteSessionStore):
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


class _RequireExistingCreates(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        return await super().acquire(session_id, placement=placement)


class _AcquireNotSingleFlight(SqliteSessionStore):
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


class _AcquireRecreates(SqliteSessionStore):
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


class _MintedIdNotResolved(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        got = await super().acquire(session_id, require_existing=require_existing, placement=placement)
        return got if session_id is not None else AcquiredSession(got.session, "session")


class _ListOldestFirst(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return list(reversed(await super().list_sessions()))


class _NoteTaskRunKeepsRunId(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if run_id is None:
            with self._write() as db:
                db.execute("UPDATE store_sessions SET last_task_id = ? WHERE id = ?", (task_id, session_id))
            return
        await super().note_task_run(session_id, task_id, run_id)


class _NoteTaskRunIgnored(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        return None


class _LastTaskDefaultsToSession(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [
            replace(r, last_task_id=r.last_task_id or r.session_id) for r in await super().list_sessions()
        ]


class _NoteTaskRunThrows(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if self._row(session_id) is None:
            raise KeyError(session_id)
        await super().note_task_run(session_id, task_id, run_id)


class _TouchIgnored(SqliteSessionStore):
    async def touch(self, session_id: str) -> None:
        return None


class _CreatedAtNotIso(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [replace(r, created_at="yesterday") for r in await super().list_sessions()]


class _ReleaseKeepsLive(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        return None


class _SizeCountsNothing(SqliteSessionStore):
    @property
    def size(self) -> int:
        return 0


class _RegisterOverwrites(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if owner is not None and not isinstance(owner, str):
            await super().register(session_id, owner)
            return
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO store_owners (session_id, owner) VALUES (?, ?)", (session_id, owner)
            )


class _RegisterThrowsLater(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if not isinstance(await self.owner_of(session_id), Unknown):
            raise PermissionError("already owned")
        await super().register(session_id, owner)


class _RegisterSwallowsInvalid(SqliteSessionStore):
    async def register(self, session_id: str, owner: object) -> None:
        if owner is not None and not isinstance(owner, str):
            return
        await super().register(session_id, owner)


class _OwnershipDroppedWithView(SqliteSessionStore):
    async def forget(self, session_id: str) -> None:
        await super().forget(session_id)
        with self._write() as db:
            db.execute("DELETE FROM store_owners WHERE session_id = ?", (session_id,))


class _IncarnationReminted(SqliteSessionStore):
    def _session(self, row: Any) -> StoreSession:
        metadata = SessionMetadata(row["id"], row["created_at"], mint_id(), row["forked_from"])
        return StoreSession(metadata, self._entries(row["id"]), self._append)

    async def forget(self, session_id: str) -> None:
        await super().forget(session_id)


class _IncarnationOfUnknownAnswers(SqliteSessionStore):
    async def incarnation_of(self, session_id: str) -> str | Unknown:
        found = await super().incarnation_of(session_id)
        return "none" if found is UNKNOWN else found


class _DisposeThrows(SqliteSessionStore):
    async def dispose(self) -> None:
        await super().dispose()
        raise RuntimeError("connection already closed")


class _SweepIgnoresPin(TtlSessionStore):
    async def pin(self, session_id: str) -> None:
        return None


# --- pure helpers, one changed ---------------------------------------------------------------------


def _tail_first_compaction(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    whole = list(entries)
    for entry in whole:
        if entry.get("type") == "compaction":
            floor = entry.get("firstKeptEntryId")
            for index, candidate in enumerate(whole):
                if candidate.get("id") == floor:
                    return whole[index:], floor
    return whole, None


def _tail_after_floor(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    tail, floor = bounded_tail(entries)
    return (tail[1:], floor) if floor is not None else (tail, floor)


def _tail_empty_off_path(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    tail, floor = bounded_tail(entries)
    compacted = any(e.get("type") == "compaction" for e in entries)
    return ([], None) if compacted and floor is None else (tail, floor)


def _tail_strips_fields(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    for entry in entries:
        if isinstance(entry, dict):
            for key in [k for k in entry if k not in ("id", "parentId", "type", "firstKeptEntryId")]:
                del entry[key]
    return bounded_tail(entries)


def _conflict_unguarded(value: object) -> bool:
    return getattr(value, "code", None) == "conflict" and type(value).__name__ == "SessionError"


def _conflict_by_message(value: object) -> bool:
    try:
        return "conflict" in str(value).lower() or getattr(value, "code", None) == "conflict"
    except Exception:
        return False


def _conflict_never(value: object) -> bool:
    return False


def _content_by_count(branch: Sequence[Mapping[str, Any]]) -> bool:
    return len(branch) > 0


def _content_counts_metadata(branch: Sequence[Mapping[str, Any]]) -> bool:
    return any(e.get("type") in ("message", "session_info") for e in branch)


def _pure(**changes: Any) -> StorePure:
    return replace(REFERENCE_STORE_PURE, **changes)


_SQLITE_CAPS = store_capabilities("sqlite")

BROKEN_STORES: tuple[BrokenStore, ...] = (
    BrokenStore(
        "owner-of-collapses-unknown",
        "ownerOf answers null for an id with no row",
        ("SS-OWN-002", "SS-OWN-003"),
        store=_OwnerOfCollapses,
    ),
    BrokenStore(
        "owner-of-anonymous-reads-unknown",
        "ownerOf answers no row for an anonymous session",
        ("SS-OWN-002", "SS-OWN-004"),
        store=_AnonymousReadsUnknown,
    ),
    BrokenStore(
        "owner-of-owned-reads-anonymous",
        "ownerOf answers null for an owned session",
        ("SS-OWN-002", "SS-OWN-005"),
        store=_OwnedReadsAnonymous,
    ),
    BrokenStore(
        "list-newest-only", "list answers only the newest session", ("SS-RUN-026",), store=_ListNewestOnly
    ),
    BrokenStore(
        "ttl-hides-placement-argument",
        "a store without placements still treats a placed acquire specially",
        ("SS-PLACE-009",),
        kind="ttl",
        store=_TtlHidesPlacementArgument,
    ),
    BrokenStore(
        "register-read-then-write",
        "register reads its own view, then writes with REPLACE",
        ("SS-REG-003", "SS-REG-004"),
        store=_RegisterReadThenWrite,
    ),
    BrokenStore(
        "forget-deletes", "forget deletes the session's history", ("SS-LIFE-012",), store=_ForgetDeletes
    ),
    BrokenStore(
        "fork-drops-ownership",
        "a fork without an owner argument gets no ownership row",
        ("SS-FORK-012", "SS-FORK-013"),
        store=_ForkDropsOwnership,
    ),
    BrokenStore(
        "fork-ignores-owner", "fork ignores its owner argument", ("SS-FORK-011",), store=_ForkIgnoresOwner
    ),
    BrokenStore(
        "fork-copies-uncommitted",
        "fork copies the source's turn in flight",
        ("SS-FORK-014",),
        store=_ForkCopiesUncommitted,
    ),
    BrokenStore(
        "fork-copies-nothing", "fork makes an empty session", ("SS-FORK-004",), store=_ForkCopiesNothing
    ),
    BrokenStore(
        "fork-of-missing-creates",
        "fork of a missing source answers a new empty session",
        ("SS-FORK-005",),
        store=_ForkOfMissingCreates,
    ),
    BrokenStore(
        "fork-shares-history",
        "writes to a fork land in its source too",
        ("SS-FORK-006",),
        store=_ForkSharesHistory,
    ),
    BrokenStore(
        "forked-from-wrong",
        "a fork's summary names itself as its source",
        ("SS-FORK-001",),
        store=_ForkedFromWrong,
    ),
    BrokenStore(
        "forked-from-everywhere",
        "every summary carries a forkedFrom",
        ("SS-FORK-002",),
        store=_ForkedFromEverywhere,
    ),
    BrokenStore(
        "placed-visible-in-list", "placed sessions appear in list()", ("SS-PLACE-012",), store=_PlacedVisible
    ),
    BrokenStore(
        "placed-id-claimable",
        "a claim-form acquire attaches to a placed session",
        ("SS-PLACE-016",),
        store=_PlacedClaimable,
    ),
    BrokenStore(
        "placement-reacquire-refused",
        "the creating chain's re-acquire with its placement is refused",
        ("SS-PLACE-017",),
        store=_PlacementReacquireRefused,
    ),
    BrokenStore(
        "placement-ignored",
        "a store declaring placements creates ordinary sessions",
        ("SS-PLACE-001", "SS-PLACE-002", "SS-PLACE-018"),
        store=_PlacementIgnored,
    ),
    BrokenStore(
        "placement-rewritten",
        "re-opening with another placement rewrites the tuple",
        ("SS-PLACE-015",),
        store=_PlacementRewritten,
    ),
    BrokenStore(
        "placed-at-on-reopen",
        "placedAt is stamped again at every re-open",
        ("SS-PLACE-003",),
        store=_PlacedAtOnReopen,
    ),
    BrokenStore(
        "tuple-guessed",
        "listPlaced fills a missing scope or handle with an empty string",
        ("SS-PLACE-005",),
        store=_TupleGuessed,
    ),
    BrokenStore(
        "older-than-ignored", "listPlaced ignores olderThanMs", ("SS-PLACE-020",), store=_OlderThanIgnored
    ),
    BrokenStore(
        "release-placed-keeps-history",
        "release of a placed session drops only the cached view",
        ("SS-PLACE-014",),
        store=_ReleasePlacedKeeps,
    ),
    BrokenStore(
        "placed-lost-on-restart",
        "placed sessions do not survive a restart despite the declaration",
        ("SS-PLACE-006", "SS-PLACE-008", "SS-PLACE-011"),
        store=_PlacedLostOnRestart,
    ),
    BrokenStore(
        "require-existing-creates",
        "requireExisting creates the session on a miss",
        ("SS-LIFE-006", "SS-LIFE-007"),
        store=_RequireExistingCreates,
    ),
    BrokenStore(
        "acquire-not-single-flight",
        "each acquire hands out a new live session object",
        ("SS-LIFE-004",),
        store=_AcquireNotSingleFlight,
    ),
    BrokenStore(
        "acquire-recreates",
        "a claim-form acquire of an existing id starts it afresh",
        ("SS-LIFE-005", "SS-PLACE-013"),
        store=_AcquireRecreates,
    ),
    BrokenStore(
        "minted-id-not-resolved",
        "acquire without an id answers an id that is not the session's",
        ("SS-TYPE-006",),
        store=_MintedIdNotResolved,
    ),
    BrokenStore(
        "not-durable",
        "declares durable but each instance has storage of its own",
        ("SS-LIFE-003", "SS-GEN-007", "SS-RUN-027", "SS-FORK-009"),
        store=SqliteSessionStore,
        per_instance_storage=True,
    ),
    BrokenStore("list-oldest-first", "list answers oldest first", ("SS-RUN-002",), store=_ListOldestFirst),
    BrokenStore(
        "note-task-run-keeps-run-id",
        "noteTaskRun without runId keeps the previous run id",
        ("SS-RUN-024", "SS-RUN-018"),
        store=_NoteTaskRunKeepsRunId,
    ),
    BrokenStore(
        "note-task-run-ignored",
        "noteTaskRun records nothing",
        ("SS-RUN-003", "SS-RUN-011", "SS-RUN-019", "SS-RUN-022"),
        store=_NoteTaskRunIgnored,
    ),
    BrokenStore(
        "last-task-defaults-to-session",
        "lastTaskId answers the session id before any run",
        ("SS-RUN-010",),
        store=_LastTaskDefaultsToSession,
    ),
    BrokenStore(
        "note-task-run-throws",
        "noteTaskRun throws for an unknown session",
        ("SS-RUN-020",),
        store=_NoteTaskRunThrows,
    ),
    BrokenStore(
        "touch-ignored",
        "touch does not mark the session active",
        ("SS-LIFE-008", "SS-RUN-008"),
        store=_TouchIgnored,
    ),
    BrokenStore(
        "created-at-not-iso", "createdAt is not an ISO time", ("SS-RUN-007",), store=_CreatedAtNotIso
    ),
    BrokenStore(
        "release-keeps-live",
        "release leaves the session in the live set",
        ("SS-LIFE-010",),
        store=_ReleaseKeepsLive,
    ),
    BrokenStore("size-counts-nothing", "size is always zero", ("SS-LIFE-020",), store=_SizeCountsNothing),
    BrokenStore(
        "register-overwrites",
        "register overwrites the first owner",
        ("SS-REG-001", "SS-REG-002"),
        store=_RegisterOverwrites,
    ),
    BrokenStore(
        "register-throws-later",
        "a later register throws instead of a silent no-op",
        ("SS-REG-002",),
        store=_RegisterThrowsLater,
    ),
    BrokenStore(
        "register-swallows-invalid",
        "a first register with a non-string owner is silently dropped",
        ("SS-REG-006",),
        store=_RegisterSwallowsInvalid,
    ),
    BrokenStore(
        "ownership-dropped-with-view",
        "forget drops the ownership row of a live session",
        ("SS-REG-005",),
        store=_OwnershipDroppedWithView,
    ),
    BrokenStore(
        "incarnation-reminted",
        "each cached view mints a new incarnation",
        ("SS-INC-001", "SS-INC-004"),
        store=_IncarnationReminted,
    ),
    BrokenStore(
        "incarnation-of-unknown-answers",
        "incarnationOf answers a value for an id with no row",
        ("SS-INC-002",),
        store=_IncarnationOfUnknownAnswers,
    ),
    BrokenStore(
        "dispose-throws",
        "dispose throws once the connection is closed",
        ("SS-LIFE-021",),
        store=_DisposeThrows,
    ),
    BrokenStore(
        "sweep-ignores-pin",
        "the TTL sweep evicts pinned sessions",
        ("SS-LIFE-016",),
        kind="ttl",
        store=_SweepIgnoresPin,
    ),
    BrokenStore(
        "declaration-contradictory",
        "declares durable and process-local at once",
        ("SS-GEN-009",),
        capabilities=(*_SQLITE_CAPS, "store:process-local"),
    ),
    BrokenStore(
        "bounded-tail-first-compaction",
        "boundedTail floors at the first compaction",
        ("SS-HIST-003",),
        pure=_pure(bounded_tail=_tail_first_compaction),
    ),
    BrokenStore(
        "bounded-tail-after-floor",
        "boundedTail's tail starts after the floor entry",
        ("SS-HIST-002", "SS-HIST-004"),
        pure=_pure(bounded_tail=_tail_after_floor),
    ),
    BrokenStore(
        "bounded-tail-empty-off-path",
        "boundedTail answers nothing when the floor is off the path",
        ("SS-HIST-009",),
        pure=_pure(bounded_tail=_tail_empty_off_path),
    ),
    BrokenStore(
        "bounded-tail-modifies-entries",
        "boundedTail strips fields from the entries it was given",
        ("SS-HIST-008",),
        pure=_pure(bounded_tail=_tail_strips_fields),
    ),
    BrokenStore(
        "conflict-raises-on-unreadable",
        "isSessionConflict reads the value unguarded",
        ("SS-GEN-005",),
        pure=_pure(is_session_conflict=_conflict_unguarded),
    ),
    BrokenStore(
        "conflict-by-message",
        "isSessionConflict trusts a value that mentions a conflict",
        ("SS-GEN-006",),
        pure=_pure(is_session_conflict=_conflict_by_message),
    ),
    BrokenStore(
        "conflict-never",
        "isSessionConflict is never true",
        ("SS-GEN-003", "SS-GEN-004"),
        pure=_pure(is_session_conflict=_conflict_never),
    ),
    BrokenStore(
        "content-by-count",
        "hasConversationContent counts entries",
        ("SS-HIST-010", "SS-HIST-011", "SS-HIST-012"),
        pure=_pure(has_conversation_content=_content_by_count),
    ),
    BrokenStore(
        "content-counts-session-info",
        "hasConversationContent counts session_info rows",
        ("SS-HIST-013",),
        pure=_pure(has_conversation_content=_content_counts_metadata),
    ),
)
