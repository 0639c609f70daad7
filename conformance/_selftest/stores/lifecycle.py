"""Broken stores of the store lifecycle (clauses SS-LIFE-*): release, forget, touch, size, dispose
and the TTL sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from typing import cast

from relavium_conformance._reference.session_store_impl import StoreKind, store_capabilities
from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_conformance._store.protocol import REJECTS_REQUIRE_EXISTING
from relavium_reference._host.session_store_live import AcquiredSession, StoreSession
from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import (
    SessionError,
    SessionErrorCode,
    SessionPlacement,
)

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="forget-deletes", summary="forget deletes the session's history", clauses=("SS-LIFE-012",)
)
class ForgetDeletes(SqliteSessionStore):
    async def forget(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        with self._write() as db:
            db.execute("DELETE FROM store_entries WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM store_sessions WHERE id = ?", (session_id,))


@store_break_of(
    name="require-existing-creates",
    summary="requireExisting creates the session on a miss",
    clauses=("SS-LIFE-006", "SS-LIFE-007"),
)
class RequireExistingCreates(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        return await super().acquire(session_id, placement=placement)


@store_break_of(
    name="acquire-not-single-flight",
    summary="each acquire hands out a new live session object",
    clauses=("SS-LIFE-004",),
)
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


@store_break_of(
    name="acquire-recreates",
    summary="a claim-form acquire of an existing id starts it afresh",
    clauses=("SS-LIFE-005", "SS-PLACE-013"),
)
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


@store_break_of(
    name="not-durable",
    summary="declares durable but each instance has storage of its own",
    clauses=("SS-LIFE-003", "SS-GEN-007", "SS-RUN-027", "SS-FORK-009"),
    per_instance_storage=True,
)
class StorageOfItsOwn(SqliteSessionStore):
    """The reference SQLite store, opened on a fresh folder every time: each instance keeps its own
    sessions, so nothing a declared-durable store promises survives a reopening."""


@store_break_of(
    name="touch-ignored",
    summary="touch does not mark the session active",
    clauses=("SS-LIFE-008", "SS-RUN-008"),
)
class TouchIgnored(SqliteSessionStore):
    async def touch(self, session_id: str) -> None:
        return None


@store_break_of(
    name="release-keeps-live", summary="release leaves the session in the live set", clauses=("SS-LIFE-010",)
)
class ReleaseKeepsLive(SqliteSessionStore):
    async def release(self, session_id: str) -> None:
        return None


@store_break_of(name="size-counts-nothing", summary="size is always zero", clauses=("SS-LIFE-020",))
class SizeCountsNothing(SqliteSessionStore):
    @property
    def size(self) -> int:
        return 0


@store_break_of(
    name="dispose-throws", summary="dispose throws once the connection is closed", clauses=("SS-LIFE-021",)
)
class DisposeThrows(SqliteSessionStore):
    async def dispose(self) -> None:
        await super().dispose()
        raise RuntimeError("connection already closed")


@store_break_of(
    name="sweep-ignores-pin",
    summary="the TTL sweep evicts pinned sessions",
    clauses=("SS-LIFE-016",),
    kind="ttl",
)
class SweepIgnoresPin(TtlSessionStore):
    async def pin(self, session_id: str) -> None:
        return None


@store_break_of(
    name="acquire-create-read-then-write",
    summary="a claim-form acquire reads that the id is free, then (re)writes its row: two instances "
    "creating one id at once each answer a row of their own (no in-process hand-written case catches "
    "it; generation over two connections does)",
    clauses=("SS-LIFE-004", "SS-INC-001"),
)
class AcquireCreateReadThenWrite(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        if session_id is not None and not require_existing:
            guard = self.__dict__.setdefault("_creating", {}).setdefault(session_id, asyncio.Lock())
            async with guard:  # one instance serialises its own callers, but not another instance's
                if self._row(session_id) is None:
                    await asyncio.sleep(0)
                    with self._write() as db:  # "replace": whatever another instance wrote meanwhile goes
                        db.execute("DELETE FROM store_sessions WHERE id = ?", (session_id,))
                return await super().acquire(session_id, placement=placement)
        return await super().acquire(session_id, require_existing=require_existing, placement=placement)


def rejecting_declaration(kind: StoreKind) -> tuple[str, ...]:
    """The reference's declaration of ``kind``, with ``store:rejects-requireExisting`` added."""
    return (*store_capabilities(kind), REJECTS_REQUIRE_EXISTING)


class RejectsRequireExisting(SqliteSessionStore):
    """A compliant alternative, not a break: the store checks no existence and refuses every acquire
    carrying ``requireExisting`` (code ``unsupported``), as the contract allows.  Declared
    (:func:`rejecting_declaration`) it passes the profile; undeclared it is the break below."""

    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        if require_existing:
            refusal = SessionError(SessionErrorCode.NOT_FOUND, "this store does not take requireExisting")
            refusal.code = cast(SessionErrorCode, "unsupported")
            raise refusal
        return await super().acquire(session_id, placement=placement)


store_break_of(
    name="rejects-require-existing-undeclared",
    summary="the store refuses requireExisting, as the contract allows, but does not declare "
    "store:rejects-requireExisting: a missing id is not answered not_found",
    clauses=("SS-LIFE-006",),
)(RejectsRequireExisting)


@store_break_of(
    name="declared-rejection-creates",
    summary="the store declares store:rejects-requireExisting, yet an acquire with the option is "
    "answered and a missing id created",
    clauses=("SS-LIFE-007",),
    declaring=rejecting_declaration,
)
class DeclaredRejectionCreates(RequireExistingCreates):
    pass


def _durable_alone(kind: StoreKind) -> tuple[str, ...]:
    """Durable, but not shared by several processes at once: the replica cases read unsupported."""
    return tuple(word for word in store_capabilities(kind) if word != "store:replicas")


@store_break_of(
    name="commits-on-dispose",
    summary="a durable store that answers every write but commits them only when it is disposed: a "
    "graceful restart keeps them, a SIGKILL loses them",
    clauses=("SS-LIFE-003", "SS-GEN-007"),
    declaring=_durable_alone,
    processes=True,
)
class CommitsOnDispose(SqliteSessionStore):
    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        if not db.in_transaction:
            db.execute("BEGIN IMMEDIATE")
        yield db  # no COMMIT: the writes wait for dispose

    async def dispose(self) -> None:
        if self._conn is not None and self._conn.in_transaction:
            self._conn.execute("COMMIT")
        await super().dispose()


@store_break_of(
    name="mints-from-a-counter",
    summary="a durable store mints ids from a counter each instance starts again: after a restart a "
    "minted id lands on a stored session and hands out its history",
    clauses=("SS-LIFE-003", "SS-GEN-007"),
)
class MintsFromACounter(SqliteSessionStore):
    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        if session_id is None and not require_existing:
            count = self.__dict__["_minted"] = self.__dict__.get("_minted", 0) + 1
            session_id = f"minted-{count}"
        return await super().acquire(session_id, require_existing=require_existing, placement=placement)
