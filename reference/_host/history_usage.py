"""The reference host's usage writer over ``history.db`` (KD-USE-1): durable coverage, one row per invocation.

``session_usage`` is the writer's ledger.  A pending record is written (committed) before the writer
acknowledges it, so the invocation never egresses before its uncertainty is durable; a resolution turns
that row ``resolved`` (or ``unknown`` when the provider reported no usage) with its money, in one
transaction, and the answer is read back in the same transaction: amount, missing-price count and
coverage always together (AS-USE-006, AS-USE-010).

* Coverage is derived from the rows, never stored apart from them: ``pending`` while any row is
  pending (an attempt whose usage never arrived, for instance one aborted mid-stream, stays pending:
  that uncertainty is real), else ``unknown`` while any row is unknown, else ``complete``.
* ``open("fresh")`` is the complete-zero basis of a freshly created session: it refuses a session that
  already has ledger rows.  ``open("adopt")`` (resume, reseat) takes the rows as they are, pending and
  unknown ones included, and answers their totals: construction-time counters never enter.
* The ledger holds every attempt's money; ``session_costs`` (written with each turn's commit, or the
  cost record of a failed or aborted turn) holds what the transcript's turns spent.  A commit that fails
  leaves both as they were before it; the attempt's resolution stays in the ledger, which is what a
  resumed instance adopts.
* A turn's final attempt is resolved in the turn's own commit (:meth:`SqliteUsageWriter._resolved_with_turn`,
  see ``_host/joint_commit``): the ledger row, the turn's rows, its cost row and the totals in one
  transaction.  When that commit fails it rolls back whole, and the session then resolves the billed
  attempt on its own, so the sentence above still holds.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from relavium_reference._model.errors import InvalidInputError, PersistError
from relavium_reference._model.usage_writer import (
    Coverage,
    ModelPrice,
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)

if TYPE_CHECKING:
    from relavium_reference._host.history_store import HistoryStore
    from relavium_reference._model.records import CompletedTurn

__all__ = ["USAGE_SCHEMA", "SqliteUsageWriter", "usage_totals"]

USAGE_SCHEMA = """
CREATE TABLE session_usage (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  purpose TEXT NOT NULL CHECK (purpose IN ('turn', 'summary')),
  provider TEXT NOT NULL,
  model TEXT NOT NULL CHECK (model <> ''),
  state TEXT NOT NULL CHECK (state IN ('pending', 'resolved', 'unknown')),
  input_tokens INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  cost_microcents INTEGER NOT NULL DEFAULT 0 CHECK (cost_microcents >= 0),
  priced INTEGER NOT NULL DEFAULT 0 CHECK (priced IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK (state = 'resolved' OR (priced = 0 AND cost_microcents = 0))
);
CREATE UNIQUE INDEX idx_session_usage_ordinal ON session_usage (session_id, ordinal);
"""


def usage_totals(db: sqlite3.Connection, session_id: str) -> UsageTotals:
    """The ledger's durable view of ``session_id``: amount, missing prices and coverage, together."""
    row = db.execute(
        "SELECT COALESCE(SUM(cost_microcents), 0), "
        "COALESCE(SUM(state = 'resolved' AND priced = 0), 0), "
        "COALESCE(SUM(state = 'pending'), 0), COALESCE(SUM(state = 'unknown'), 0) "
        "FROM session_usage WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    amount, missing, pending, unknown = (int(value) for value in row)
    coverage: Coverage = "pending" if pending else "unknown" if unknown else "complete"
    return UsageTotals(amount_microcents=amount, missing_price_count=missing, coverage=coverage)


class SqliteUsageWriter:
    """One session's writer over the store; ``prices`` maps a model to its price (absent: unpriced).
    ``InvalidInputError``: a store without the usage ledger, a session id that is not a string, or prices
    that are not a mapping of model names to ``ModelPrice``."""

    def __init__(self, store: HistoryStore, session_id: str, prices: Mapping[str, ModelPrice]) -> None:
        if not all(callable(getattr(store, name, None)) for name in ("usage_write", "usage_read")):
            raise InvalidInputError("a usage writer needs a HistoryStore", location="store")
        if not isinstance(session_id, str):
            raise InvalidInputError("a session id must be a string", location="sessionId")
        if not isinstance(prices, Mapping) or not all(
            isinstance(model, str) and isinstance(price, ModelPrice) for model, price in prices.items()
        ):
            raise InvalidInputError("prices must map model names to ModelPrice", location="prices")
        self._store = store
        self._session_id = session_id
        self._prices = dict(prices)
        self._open_row: str | None = None

    async def open(self, basis: UsageBasis) -> UsageTotals:
        return await asyncio.to_thread(self._open, basis)

    async def pending(self, record: UsagePending) -> None:
        await asyncio.to_thread(self._pending, record)

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        return await asyncio.to_thread(self._resolved, record)

    def _open(self, basis: UsageBasis) -> UsageTotals:
        def read(db: sqlite3.Connection) -> UsageTotals:
            count = db.execute(
                "SELECT COUNT(*) FROM session_usage WHERE session_id = ?", (self._session_id,)
            ).fetchone()[0]
            if basis == "fresh" and count:
                raise PersistError("a fresh usage basis needs a session without usage")
            return usage_totals(db, self._session_id)

        return self._store.usage_read(self._session_id, read)

    def _pending(self, record: UsagePending) -> None:
        row_id = str(uuid.uuid4())

        def write(db: sqlite3.Connection, now: int) -> None:
            db.execute(  # the next ordinal (max + 1) read in the same statement
                "INSERT INTO session_usage (id, session_id, ordinal, purpose, provider, model, state, "
                "created_at, updated_at) "
                "SELECT ?, ?, COALESCE(MAX(ordinal), -1) + 1, ?, ?, ?, 'pending', ?, ? "
                "FROM session_usage WHERE session_id = ?",
                (
                    row_id,
                    self._session_id,
                    record.purpose,
                    record.provider.value,
                    record.model,
                    now,
                    now,
                    self._session_id,
                ),
            )

        self._store.usage_write(self._session_id, write)
        self._open_row = row_id

    def _settlement(self, record: UsageResolved) -> tuple[int, bool]:
        """The money a resolution of ``record`` answers, ``(cost_microcents, priced)``: no I/O."""
        price = self._prices.get(record.model)
        priced = record.reported and price is not None
        return (price.cost(record.input_tokens, record.output_tokens) if priced and price else 0), priced

    async def _resolved_with_turn(self, turn: CompletedTurn, record: UsageResolved) -> UsageSettled:
        """Resolve ``record`` and commit ``turn`` in one transaction (one handoff, one durable commit)."""
        return await asyncio.to_thread(self._commit_with_turn, turn, record)

    def _commit_with_turn(self, turn: CompletedTurn, record: UsageResolved) -> UsageSettled:
        _messages, settled = self._store._commit_turn_with(self._session_id, turn, self._resolution(record))
        self._open_row = None
        return settled

    def _resolved(self, record: UsageResolved) -> UsageSettled:
        settled = self._store.usage_write(self._session_id, self._resolution(record))
        self._open_row = None
        return settled

    def _resolution(self, record: UsageResolved) -> Callable[[sqlite3.Connection, int], UsageSettled]:
        """The write that turns the acknowledged pending row ``resolved`` (or ``unknown``), and reads the
        totals back in the same transaction.  The row stays this writer's open one until that commits."""
        cost, priced = self._settlement(record)
        state = "resolved" if record.reported else "unknown"
        row_id = self._open_row
        if row_id is None:
            raise PersistError("a resolution needs its acknowledged pending record")

        def write(db: sqlite3.Connection, now: int) -> UsageSettled:
            changed = db.execute(
                "UPDATE session_usage SET state = ?, input_tokens = ?, output_tokens = ?, "
                "cost_microcents = ?, priced = ?, updated_at = ? WHERE id = ? AND state = 'pending'",
                (state, record.input_tokens, record.output_tokens, cost, int(priced), now, row_id),
            ).rowcount
            if changed != 1:
                raise PersistError("the pending usage record is gone")
            totals = usage_totals(db, self._session_id)
            return UsageSettled(cost_microcents=cost, priced=priced, totals=totals)

        return write
