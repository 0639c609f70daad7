"""The in-memory TTL session store over a session repo (the declaration's default ``TtlSessionStore``).

* :class:`InMemorySessionRepo` holds history: per session its metadata, committed entries and
  ownership row.  It mints the incarnation when a row comes into existence.
* :class:`TtlSessionStore` is the live set over a repo: an idle TTL (seven days by default) on an
  injected clock, swept lazily before every operation; pinned ids are never swept; ``release`` applies
  the evict policy (``delete`` removes the session and then its ownership row from the repo, ``keep``
  drops only the cached view); ``forget`` never touches history; ``list`` shows the live set newest
  first by ``lastActiveAt``; ``fork`` delegates to the repo.  It declares no placements, so a placement
  on ``acquire`` is ignored, and its durability is whatever the deployment states (absent by default:
  read as ``process-local``).

Everything here is synchronous under the hood, so concurrent acquires of one id in one event loop see
one cache and return one session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from relavium_reference._host.session_store_live import (
    INHERIT,
    AcquiredSession,
    Inherit,
    StoreSession,
    iso_of_ms,
    mint_id,
)
from relavium_reference._model.session_store_shapes import (
    DEFAULT_TTL_MS,
    UNKNOWN,
    Durability,
    SessionError,
    SessionErrorCode,
    SessionMetadata,
    SessionPlacement,
    StoreSummary,
    Unknown,
)
from relavium_reference._rules.store_text import (
    check_acquire,
    check_store_text,
    owner_problem,
    task_run_keepable,
)

__all__ = ["InMemorySessionRepo", "TtlSessionStore", "system_ms"]

_NO_ROW = UNKNOWN


def system_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _RepoRow:
    metadata: SessionMetadata
    entries: list[dict[str, Any]] = field(default_factory=list)


class InMemorySessionRepo:
    """History in memory: rows, committed entries, ownership rows (same lifetime as the history)."""

    def __init__(self) -> None:
        self._rows: dict[str, _RepoRow] = {}
        self._owners: dict[str, str | None] = {}

    def has(self, session_id: str) -> bool:
        return session_id in self._rows

    def create(self, session_id: str, created_ms: int, *, forked_from: str | None = None) -> SessionMetadata:
        row = self._rows.get(session_id)
        if row is None:
            metadata = SessionMetadata(session_id, iso_of_ms(created_ms), mint_id(), forked_from)
            row = self._rows[session_id] = _RepoRow(metadata)
        return row.metadata

    def metadata(self, session_id: str) -> SessionMetadata | None:
        row = self._rows.get(session_id)
        return None if row is None else row.metadata

    def entries(self, session_id: str) -> list[dict[str, Any]]:
        row = self._rows.get(session_id)
        return [] if row is None else [dict(e) for e in row.entries]

    async def append(
        self, session_id: str, entries: list[dict[str, Any]], base: int | None = None
    ) -> None:
        row = self._rows.get(session_id)
        if row is None:
            raise SessionError(SessionErrorCode.NOT_FOUND, f"no session {session_id}")
        if base is not None and base != len(row.entries):
            raise SessionError(SessionErrorCode.CONFLICT, f"{session_id} moved on since this view")
        row.entries.extend(dict(e) for e in entries)

    def delete(self, session_id: str) -> None:
        """History first; the ownership row only once the history is gone."""
        self._rows.pop(session_id, None)
        if session_id not in self._rows:
            self._owners.pop(session_id, None)

    def fork(self, source_id: str, new_id: str, created_ms: int) -> SessionMetadata | None:
        source = self._rows.get(source_id)
        if source is None:
            return None
        metadata = self.create(new_id, created_ms, forked_from=source_id)
        self._rows[new_id].entries = [dict(e) for e in source.entries]
        return metadata

    def owner(self, session_id: str) -> str | Unknown | None:
        return self._owners.get(session_id, _NO_ROW)

    def set_owner_once(self, session_id: str, owner: str | None) -> None:
        self._owners.setdefault(session_id, owner)


@dataclass
class _Live:
    session: StoreSession
    last_active_at: int
    pinned: bool = False
    last_task_id: str | None = None
    last_task_run_id: str | None = None


class TtlSessionStore:
    """The in-memory live set with an idle TTL, over a :class:`InMemorySessionRepo`.

    Every id, source id, owner and placement name it is handed must be a store text
    (``_rules/store_text.py``); any other value is refused with ``InvalidInputError``.
    """

    placements: Mapping[str, Durability] | None = None

    def __init__(
        self,
        repo: InMemorySessionRepo | None = None,
        *,
        clock: Callable[[], int] = system_ms,
        ttl_ms: int = DEFAULT_TTL_MS,
        evict: Literal["delete", "keep"] = "delete",
        durability: Durability | None = None,
    ) -> None:
        self.repo = repo if repo is not None else InMemorySessionRepo()
        self._clock = clock
        self._ttl_ms = ttl_ms
        self._evict = evict
        self.durability = durability
        self._live: dict[str, _Live] = {}
        self._pinned: set[str] = set()

    # --- the live set ------------------------------------------------------------------------------

    def _sweep(self) -> None:
        now = self._clock()
        for session_id, live in list(self._live.items()):
            if session_id not in self._pinned and now - live.last_active_at > self._ttl_ms:
                self._drop(session_id)

    def _drop(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        if self._evict == "delete":
            self.repo.delete(session_id)

    @property
    def size(self) -> int:
        self._sweep()
        return len(self._live)

    async def acquire(
        self,
        session_id: str | None = None,
        *,
        require_existing: bool = False,
        placement: SessionPlacement | None = None,
    ) -> AcquiredSession:
        check_acquire(session_id, placement)
        del placement  # no placements declared: ignored, the session is an ordinary one
        self._sweep()
        now = self._clock()
        if session_id is not None and session_id in self._live:
            live = self._live[session_id]
            live.last_active_at = now
            return AcquiredSession(live.session, session_id)
        if session_id is None:
            session_id = mint_id()
        metadata = self.repo.metadata(session_id)
        if metadata is None:
            if require_existing:
                raise SessionError(SessionErrorCode.NOT_FOUND, f"no session {session_id}")
            metadata = self.repo.create(session_id, now)
        session = StoreSession(metadata, self.repo.entries(session_id), self.repo.append)
        self._live[session_id] = _Live(session, now)
        return AcquiredSession(session, session_id)

    async def touch(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._sweep()
        live = self._live.get(session_id)
        if live is not None:
            live.last_active_at = self._clock()

    async def release(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._sweep()
        self._drop(session_id)
        self._pinned.discard(session_id)

    async def forget(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._live.pop(session_id, None)

    async def pin(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._pinned.add(session_id)

    async def unpin(self, session_id: str) -> None:
        check_store_text(session_id, "sessionId")
        self._pinned.discard(session_id)

    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if not task_run_keepable(session_id, task_id, run_id):
            return  # best effort, never throws: a note no store could keep is dropped
        try:
            live = self._live.get(session_id)
            if live is not None:
                live.last_task_id = task_id
                live.last_task_run_id = run_id  # no run id: the honest answer is "unknown"
                live.last_active_at = self._clock()
        except Exception:  # best effort: never throws
            return

    async def list_sessions(self) -> list[StoreSummary]:
        self._sweep()
        rows = [
            StoreSummary(
                session_id=session_id,
                last_active_at=live.last_active_at,
                created_at=live.session.metadata.created_at,
                last_task_id=live.last_task_id,
                last_task_run_id=live.last_task_run_id,
                forked_from=live.session.metadata.forked_from,
            )
            for session_id, live in self._live.items()
        ]
        return sorted(rows, key=lambda r: (-r.last_active_at, r.session_id))

    # --- history faces -----------------------------------------------------------------------------

    async def fork(self, source_id: str, owner: str | Inherit | None = INHERIT) -> str | None:
        check_store_text(source_id, "sourceId")
        if isinstance(owner, str):
            check_store_text(owner, "owner")
        self._sweep()
        live = self._live.get(source_id)
        if live is None and not self.repo.has(source_id):
            return None
        new_id = mint_id()
        if self.repo.fork(source_id, new_id, self._clock()) is None:
            return None
        source_owner = self.repo.owner(source_id)
        if isinstance(owner, str):
            self.repo.set_owner_once(new_id, owner)
        elif isinstance(source_owner, str):
            self.repo.set_owner_once(new_id, source_owner)  # never weaker than the source
        elif source_owner is None or owner is None:
            self.repo.set_owner_once(new_id, None)
        return new_id

    async def owner_of(self, session_id: str) -> str | Unknown | None:
        check_store_text(session_id, "sessionId")
        return self.repo.owner(session_id)

    async def register(self, session_id: str, owner: object) -> None:
        check_store_text(session_id, "sessionId")
        if not isinstance(self.repo.owner(session_id), Unknown):
            return  # first write wins; later calls are silent whatever they carry
        if owner is not None and not isinstance(owner, str):
            raise SessionError(SessionErrorCode.INVALID_OWNER, "an owner is a string or null")
        if owner_problem(owner) is not None:
            check_store_text(owner, "owner")
        self.repo.set_owner_once(session_id, owner)

    async def incarnation_of(self, session_id: str) -> str | Unknown:
        check_store_text(session_id, "sessionId")
        metadata = self.repo.metadata(session_id)
        return UNKNOWN if metadata is None else metadata.incarnation

    async def dispose(self) -> None:
        self._live.clear()
        self._pinned.clear()
