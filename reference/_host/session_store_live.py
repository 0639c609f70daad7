"""The live session a session store hands out (KD-SS-4), and the face both reference stores share.

A :class:`StoreSession` holds the committed path (what its store persisted) and the entries of a turn
still in flight (``stage``), which only :meth:`StoreSession.commit` hands to the store.  A fork copies
the committed path only.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from relavium_reference._model.session_store_shapes import (
    Durability,
    PlacedRow,
    SessionMetadata,
    SessionPlacement,
    StoreSummary,
    Unknown,
    check_entry,
)

__all__ = [
    "INHERIT",
    "AcquiredSession",
    "Inherit",
    "SessionStoreFace",
    "StoreSession",
    "iso_of_ms",
    "mint_id",
]

Writer = Callable[..., Awaitable[None]]
"""``writer(session_id, batch, base=n)``: persist ``batch`` after the first ``n`` committed entries.  A
store whose stored history no longer has exactly ``n`` entries (another replica wrote meanwhile) refuses
with ``conflict`` (KD-SS-1) and writes nothing; ``base=None`` (a store's own internal copy) skips that
check."""


def mint_id() -> str:
    return uuid.uuid4().hex


def iso_of_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Inherit:
    """``fork`` called with no owner argument (distinct from an explicit ``None``)."""

    def __repr__(self) -> str:
        return "INHERIT"


INHERIT = Inherit()


class StoreSession:
    """One live session: the committed path, then the staged entries of the turn in flight."""

    def __init__(
        self, metadata: SessionMetadata, committed: Iterable[Mapping[str, Any]], writer: Writer
    ) -> None:
        self.metadata = metadata
        self._committed = [dict(e) for e in committed]
        self._staged: list[dict[str, Any]] = []
        self._writer = writer

    @property
    def session_id(self) -> str:
        return self.metadata.session_id

    def committed(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self._committed]

    def staged(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self._staged]

    def stage(self, entries: Iterable[Any]) -> None:
        self._staged.extend(check_entry(e) for e in entries)

    async def commit(self) -> None:
        batch, self._staged = self._staged, []
        if batch:
            await self._writer(self.session_id, batch, base=len(self._committed))
            self._committed.extend(batch)

    async def append(self, entries: Iterable[Any]) -> None:
        self.stage(entries)
        await self.commit()


@dataclass(frozen=True)
class AcquiredSession:
    session: StoreSession
    session_id: str


class SessionStoreFace(Protocol):
    """The declaration's ``SessionStore`` as the reference stores implement it (every face present)."""

    durability: Durability | None
    placements: Mapping[str, Durability] | None

    @property
    def size(self) -> int: ...

    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession: ...

    async def touch(self, session_id: str) -> None: ...

    async def release(self, session_id: str) -> None: ...

    async def forget(self, session_id: str) -> None: ...

    async def pin(self, session_id: str) -> None: ...

    async def unpin(self, session_id: str) -> None: ...

    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None: ...

    async def list_sessions(self) -> list[StoreSummary]: ...

    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None: ...

    async def owner_of(self, session_id: str) -> str | Unknown | None: ...

    async def register(self, session_id: str, owner: object) -> None: ...

    async def incarnation_of(self, session_id: str) -> str | Unknown: ...

    async def dispose(self) -> None: ...


class PlacementFace(Protocol):
    async def list_placed(
        self, kind: str, *, older_than_ms: int | None = None, scope: str | None = None
    ) -> list[PlacedRow]: ...
