"""The host's persister: where a session's durable facts go.

The spec puts persistence in the host: the session hands over its new row at start, each completed
turn as one :class:`CompletedTurn` to commit atomically, and the cost of turns that commit no
transcript (errors, aborts).  :class:`SqlitePersister` is the reference host's persister over the
``history.db`` store; the kit plays its own persister through the adapter (``host.createSession``,
``host.commitTurn``, ``host.recordCost``, ``host.loadSession``).
A persister that keeps usage durably (:class:`KeepsUsage`, as ``SqlitePersister`` does) offers the
session its usage writer, so a persisted host always has one, governor or not (KD-USE-1).
A persister that raises makes the session latch: no later provider attempt, tool dispatch or command.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._host.history_usage import SqliteUsageWriter
from relavium_reference._model.errors import InvalidInputError, PersistError
from relavium_reference._model.history_results import BoundaryMarker
from relavium_reference._model.llm import LlmMessage
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage
from relavium_reference._model.messages import TextPart as DurableText
from relavium_reference._model.records import CompletedTurn, CostEntry, structural_drafts
from relavium_reference._model.usage_writer import ModelPrice

__all__ = [
    "KeepsUsage",
    "PersistError",
    "ReleasesWriter",
    "SqlitePersister",
    "TurnPersister",
    "completed_turn",
]


class TurnPersister(Protocol):
    async def create_session(self, record: AgentSessionRecord) -> None: ...

    async def commit_turn(self, session_id: str, turn: CompletedTurn) -> None:
        """All or nothing; raise on failure (the store stays as it was)."""
        ...

    async def record_cost(self, session_id: str, entry: CostEntry) -> None: ...

    async def append_marker(self, session_id: str, marker: BoundaryMarker) -> None:
        """Append one boundary marker row after every existing row; raise on failure (nothing written)."""
        ...

    async def load_transcript(self, session_id: str) -> tuple[AgentSessionRecord, tuple[SessionMessage, ...]]:
        """The session's record and every durable row, in sequence order (for export)."""
        ...


@runtime_checkable
class ReleasesWriter(Protocol):
    """A persister holding a writer lease per session (KD-DB-9); the session releases it on cancel."""

    async def release_writer(self, session_id: str) -> None: ...


@runtime_checkable
class KeepsUsage(Protocol):
    """A persister that keeps usage coverage durably: it offers each session its usage writer (KD-USE-1)."""

    def usage_writer(self, session_id: str, prices: Mapping[str, ModelPrice]) -> UsageWriter:
        """A writer over the same store for ``session_id``; a model absent from ``prices`` is unpriced."""
        ...


class SqlitePersister:
    """Persists through a :class:`HistoryStore` (``history.db``), off the event loop's thread.

    Each call is one ``asyncio.to_thread`` handoff.  (One dedicated thread per persister was measured
    and dropped: under load it waited about twice as long per durable turn as the shared pool.  A
    thread per store fed by a bare ``SimpleQueue`` was measured again later: the same CPU per turn,
    and 1.1-1.7 times the wall time under load.)
    """

    def __init__(self, store: HistoryStore) -> None:
        if not isinstance(store, HistoryStore):
            raise InvalidInputError("a SqlitePersister needs a HistoryStore", location="store")
        self._store = store

    async def create_session(self, record: AgentSessionRecord) -> None:
        await asyncio.to_thread(self._store.create_session, record)

    async def commit_turn(self, session_id: str, turn: CompletedTurn) -> None:
        await asyncio.to_thread(self._store.commit_turn, session_id, turn)

    async def record_cost(self, session_id: str, entry: CostEntry) -> None:
        await asyncio.to_thread(self._store.record_cost, session_id, entry)

    async def append_marker(self, session_id: str, marker: BoundaryMarker) -> None:
        text = "".join(part.text for part in marker.content)
        await asyncio.to_thread(
            self._store.append_marker,
            session_id,
            dropped_through_sequence=marker.compaction.dropped_through_sequence,
            text=text,
        )

    async def load_transcript(self, session_id: str) -> tuple[AgentSessionRecord, tuple[SessionMessage, ...]]:
        return await asyncio.to_thread(self._store.load_full, session_id)

    async def release_writer(self, session_id: str) -> None:
        await asyncio.to_thread(self._store.release_writer, session_id)

    def usage_writer(self, session_id: str, prices: Mapping[str, ModelPrice]) -> UsageWriter:
        return SqliteUsageWriter(self._store, session_id, prices)

    def _joint_writer(self, writer: UsageWriter | None) -> SqliteUsageWriter | None:
        """``writer`` when it is a writer over this persister's store, so a turn's last resolution may ride
        in the turn's commit (``joint_commit``); ``None`` for any other writer, for a subclass that changes
        :meth:`commit_turn`, and for a writer whose class changes ``resolved`` (each then goes through its
        own method)."""
        if type(self).commit_turn is not SqlitePersister.commit_turn:
            return None
        if (
            isinstance(writer, SqliteUsageWriter)
            and type(writer).resolved is SqliteUsageWriter.resolved
            and writer._store is self._store
        ):
            return writer
        return None


def completed_turn(
    *,
    user_text: str,
    final_text: str,
    round_messages: Sequence[LlmMessage],
    structural_names: dict[str, str],
    model: str | None,
    finish_reason: str,
    costs: Sequence[CostEntry],
) -> CompletedTurn:
    """The durable form of one successful exchange: user row, content-free tool rows, terminal row.

    The terminal row always has a text part, even when the final text is empty.  The user and terminal
    drafts are given as data, so each is validated once, with the turn (an instance would be checked
    again there).
    """
    return CompletedTurn.model_validate(
        {
            "user": {"role": "user", "content": (DurableText(text=user_text),)},
            "structural": structural_drafts(round_messages, structural_names, model_id=model),
            "terminal": {"role": "assistant", "content": (DurableText(text=final_text),), "modelId": model},
            "finishReason": finish_reason,
            "costs": tuple(costs),
        }
    )
