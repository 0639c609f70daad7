"""Broken stores of ownership and incarnations (clauses SS-OWN-*, SS-INC-*): what ownerOf and
incarnationOf answer.
"""

from __future__ import annotations

import hashlib
from typing import Any

from relavium_conformance._reference.session_store_impl import StoreKind, store_capabilities
from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_reference._host.session_store_live import INHERIT, StoreSession, mint_id
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import (
    UNKNOWN,
    SessionMetadata,
    SessionPlacement,
    Unknown,
)

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="owner-of-collapses-unknown",
    summary="ownerOf answers null for an id with no row",
    clauses=("SS-OWN-002", "SS-OWN-003"),
)
class OwnerOfCollapses(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return None if isinstance(owner, Unknown) else owner


@store_break_of(
    name="owner-of-anonymous-reads-unknown",
    summary="ownerOf answers no row for an anonymous session",
    clauses=("SS-OWN-002", "SS-OWN-004"),
)
class AnonymousReadsUnknown(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return UNKNOWN if owner is None else owner


@store_break_of(
    name="owner-of-owned-reads-anonymous",
    summary="ownerOf answers null for an owned session",
    clauses=("SS-OWN-002", "SS-OWN-005"),
)
class OwnedReadsAnonymous(SqliteSessionStore):
    async def owner_of(self, session_id: str) -> str | Unknown | None:
        owner = await super().owner_of(session_id)
        return None if isinstance(owner, str) else owner


@store_break_of(
    name="incarnation-reminted",
    summary="each cached view mints a new incarnation",
    clauses=("SS-INC-001", "SS-INC-004"),
)
class IncarnationReminted(SqliteSessionStore):
    def _session(self, row: Any) -> StoreSession:
        metadata = SessionMetadata(row["id"], row["created_at"], mint_id(), row["forked_from"])
        return StoreSession(metadata, self._entries(row["id"]), self._append)

    async def forget(self, session_id: str) -> None:
        await super().forget(session_id)


@store_break_of(
    name="incarnation-of-unknown-answers",
    summary="incarnationOf answers a value for an id with no row",
    clauses=("SS-INC-002",),
)
class IncarnationOfUnknownAnswers(SqliteSessionStore):
    async def incarnation_of(self, session_id: str) -> str | Unknown:
        found = await super().incarnation_of(session_id)
        return "none" if found is UNKNOWN else found


@store_break_of(
    name="fork-copies-incarnation",
    summary="a fork's row copies its source's incarnation instead of minting its own: two occupants "
    "read as one (no hand-written case catches it; generation does)",
    clauses=("SS-INC-001",),
)
class ForkCopiesIncarnation(SqliteSessionStore):
    async def fork(self, source_id: str, owner: Any = INHERIT) -> str | None:
        new_id = await super().fork(source_id, owner)
        if new_id is not None:
            with self._write() as db:
                db.execute(
                    "UPDATE store_sessions SET incarnation ="
                    " (SELECT incarnation FROM store_sessions WHERE id = ?) WHERE id = ?",
                    (source_id, new_id),
                )
        return new_id


@store_break_of(
    name="incarnation-derived-from-id",
    summary="a row's incarnation is a digest of its session id: stable across restarts and replicas, but "
    "a session deleted and created again under its id reads as the same occupant",
    clauses=("SS-INC-001",),
)
class IncarnationDerivedFromId(SqliteSessionStore):
    def _create(self, session_id: str, placement: SessionPlacement | None) -> None:
        super()._create(session_id, placement)
        with self._write() as db:
            digest = hashlib.sha256(session_id.encode()).hexdigest()[:32]
            db.execute("UPDATE store_sessions SET incarnation = ? WHERE id = ?", (digest, session_id))


def _without_forget(kind: StoreKind) -> tuple[str, ...]:
    return tuple(word for word in store_capabilities(kind) if word != "store:forget")


@store_break_of(
    name="incarnation-of-unknown-answers-without-forget",
    summary="a store that leaves out forget, and whose incarnationOf answers a value for an id with no "
    "row: only the incarnation case that needs no forget catches it",
    clauses=("SS-INC-002",),
    declaring=_without_forget,
)
class IncarnationOfUnknownAnswersWithoutForget(IncarnationOfUnknownAnswers):
    pass
