"""Broken stores of acquire, list and task runs (clauses SS-RUN-*)."""

from __future__ import annotations

import time
from dataclasses import replace

from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_reference._host.session_store_live import iso_of_ms
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import SessionPlacement, StoreSummary

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="list-newest-only", summary="list answers only the newest session", clauses=("SS-RUN-026",)
)
class ListNewestOnly(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return (await super().list_sessions())[:1]


@store_break_of(name="list-oldest-first", summary="list answers oldest first", clauses=("SS-RUN-002",))
class ListOldestFirst(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return list(reversed(await super().list_sessions()))


@store_break_of(
    name="note-task-run-keeps-run-id",
    summary="noteTaskRun without runId keeps the previous run id",
    clauses=("SS-RUN-024", "SS-RUN-018"),
)
class NoteTaskRunKeepsRunId(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if run_id is None:
            with self._write() as db:
                db.execute("UPDATE store_sessions SET last_task_id = ? WHERE id = ?", (task_id, session_id))
            return
        await super().note_task_run(session_id, task_id, run_id)


@store_break_of(
    name="note-task-run-ignored",
    summary="noteTaskRun records nothing",
    clauses=("SS-RUN-003", "SS-RUN-011", "SS-RUN-019", "SS-RUN-022"),
)
class NoteTaskRunIgnored(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        return None


@store_break_of(
    name="last-task-defaults-to-session",
    summary="lastTaskId answers the session id before any run",
    clauses=("SS-RUN-010",),
)
class LastTaskDefaultsToSession(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [
            replace(r, last_task_id=r.last_task_id or r.session_id) for r in await super().list_sessions()
        ]


@store_break_of(
    name="note-task-run-throws", summary="noteTaskRun throws for an unknown session", clauses=("SS-RUN-020",)
)
class NoteTaskRunThrows(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        if self._row(session_id) is None:
            raise KeyError(session_id)
        await super().note_task_run(session_id, task_id, run_id)


@store_break_of(name="created-at-not-iso", summary="createdAt is not an ISO time", clauses=("SS-RUN-007",))
class CreatedAtNotIso(SqliteSessionStore):
    async def list_sessions(self) -> list[StoreSummary]:
        return [replace(r, created_at="yesterday") for r in await super().list_sessions()]


@store_break_of(
    name="created-at-wall-clock",
    summary="createdAt is stamped from the machine's clock, not the store's (which the kit plays): a "
    "well-formed time, but not when the session was created",
    clauses=("SS-RUN-007",),
)
class CreatedAtWallClock(SqliteSessionStore):
    def _create(self, session_id: str, placement: SessionPlacement | None) -> None:
        super()._create(session_id, placement)
        with self._write() as db:
            db.execute(
                "UPDATE store_sessions SET created_at = ? WHERE id = ?",
                (iso_of_ms(int(time.time() * 1000)), session_id),
            )


@store_break_of(
    name="note-task-run-keeps-old-activity",
    summary="noteTaskRun records the run but leaves lastActiveAt where it was",
    clauses=("SS-RUN-008",),
)
class NoteTaskRunKeepsOldActivity(SqliteSessionStore):
    async def note_task_run(self, session_id: str, task_id: str, run_id: str | None = None) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE store_sessions SET last_task_id = ?, last_task_run_id = ? WHERE id = ?",
                (task_id, run_id, session_id),
            )
