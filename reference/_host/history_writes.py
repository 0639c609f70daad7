"""The statements of ``history.db``'s hot write transactions, run inside a transaction the caller holds.

:class:`~relavium_reference._host.history_store.HistoryStore` opens the ``BEGIN IMMEDIATE`` transaction,
holds the writer lease and maps errors; these functions only write.  What they keep cheap, per transaction:

* a write checks that its session is live with one indexed ``SELECT 1`` (it needs nothing more of the
  row);
* a completed turn's rows go in with one prebuilt ``executemany``, and the messages returned are the
  ones each row's own reader rebuilt before it was written (the load's fast reader for the rows the
  engine writes, else ``stored_message``): SQLite keeps these text and integer values as given, so there
  is no read-back through the connection;
* every statement text is fixed, so SQLite's statement cache prepares each once per connection;
* a statement that adds to a running figure (a cost row, the session totals) changes its row only while
  every sum stays within ``2**63 - 1`` (a guard in its ``WHERE``): SQLite would turn a larger INTEGER
  sum into a REAL instead of failing, which would poison the row for every later read.  A row left
  unchanged (``rowcount`` 0, the row being known to exist) refuses the write
  (``StoreError("totals_range")``) and the caller's transaction rolls back.
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from relavium_reference._model.messages import (
    MediaPart,
    ReasoningPart,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_text,
)
from relavium_reference._model.records import CompletedTurn, CostEntry, MessageDraft, derive_title
from relavium_reference._rules.history_fast import MESSAGE_COLUMNS, fast_message
from relavium_reference._rules.history_rows import (
    StoreError,
    iso_from_ms,
    message_row,
    stored_message,
    values_row,
)

__all__ = ["add_cost", "check_live", "insert_message", "next_sequence", "write_turn"]

_INSERT_MESSAGE = (
    f"INSERT INTO session_messages ({', '.join(MESSAGE_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in MESSAGE_COLUMNS)})"
)
#: The part models a draft's content must be made of, exactly, to take the fast path: ``values_row`` calls
#: their ``to_wire`` before anything validated the draft, so a draft built without validation (another
#: type, a dict, a subclass) takes the full path, which validates it first.
_KNOWN_PARTS = frozenset({TextPart, ToolCallPart, ToolResultPart, ReasoningPart, MediaPart})
_LIVE_SESSION = "SELECT 1 FROM agent_sessions WHERE id = ? AND deleted_at IS NULL"
_NEXT_SEQUENCE = "SELECT COALESCE(MAX(sequence_number), -1) + 1 FROM session_messages WHERE session_id = ?"
_ADD_COST = (
    "INSERT INTO session_costs (id, session_id, model, model_catalog_id, input_tokens, "
    "output_tokens, cost_microcents, call_count, unpriced_calls, is_legacy, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) "
    "ON CONFLICT (session_id, model, is_legacy) DO UPDATE SET "
    "input_tokens = input_tokens + excluded.input_tokens, "
    "output_tokens = output_tokens + excluded.output_tokens, "
    "cost_microcents = cost_microcents + excluded.cost_microcents, "
    "call_count = call_count + excluded.call_count, "
    "unpriced_calls = unpriced_calls + excluded.unpriced_calls, "
    "model_catalog_id = COALESCE(excluded.model_catalog_id, model_catalog_id), "
    "updated_at = excluded.updated_at "
    "WHERE input_tokens <= 9223372036854775807 - excluded.input_tokens "
    "AND output_tokens <= 9223372036854775807 - excluded.output_tokens "
    "AND cost_microcents <= 9223372036854775807 - excluded.cost_microcents "
    "AND call_count <= 9223372036854775807 - excluded.call_count "
    "AND unpriced_calls <= 9223372036854775807 - excluded.unpriced_calls"
)
#: The session's totals stay within SQLite's INTEGER after adding ``?1``-``?3`` (a difference that cannot
#: overflow: every figure added is non-negative).
_TOTALS_FIT = (
    "total_input_tokens <= 9223372036854775807 - ?1 "
    "AND total_output_tokens <= 9223372036854775807 - ?2 "
    "AND total_cost_microcents <= 9223372036854775807 - ?3"
)
_ADD_TOTALS = (
    "UPDATE agent_sessions SET total_input_tokens = total_input_tokens + ?1, "
    "total_output_tokens = total_output_tokens + ?2, "
    "total_cost_microcents = total_cost_microcents + ?3 WHERE id = ?4 AND " + _TOTALS_FIT
)
#: A turn's totals, title (while the session has none) and ``updated_at``: one statement on the session row.
_TURN_SESSION = (
    "UPDATE agent_sessions SET total_input_tokens = total_input_tokens + ?1, "
    "total_output_tokens = total_output_tokens + ?2, "
    "total_cost_microcents = total_cost_microcents + ?3, "
    "title = COALESCE(title, ?4), updated_at = ?5 WHERE id = ?6 AND " + _TOTALS_FIT
)


def check_live(db: sqlite3.Connection, session_id: str) -> None:
    """Refuse a write to a missing or soft-deleted session (``StoreError("session_not_found")``)."""
    if db.execute(_LIVE_SESSION, (session_id,)).fetchone() is None:
        raise StoreError("session_not_found")


def next_sequence(db: sqlite3.Connection, session_id: str) -> int:
    """The session's next gap-free sequence number (``max + 1``), read inside the writing transaction."""
    return int(db.execute(_NEXT_SEQUENCE, (session_id,)).fetchone()[0])


def insert_message(db: sqlite3.Connection, message: SessionMessage, finish_reason: str | None) -> None:
    db.execute(_INSERT_MESSAGE, message_row(message, finish_reason))


def write_turn(
    db: sqlite3.Connection, session_id: str, turn: CompletedTurn, title: str | None, now: int
) -> tuple[SessionMessage, ...]:
    """A completed turn's rows (user, structural, terminal: gap-free), its cost rows and totals, and the
    title while the session has none; the messages as a load will return them."""
    check_live(db, session_id)
    stamp = iso_from_ms(now)
    first = next_sequence(db, session_id)
    last = len(turn.rows) - 1
    stored = [
        _stored(
            draft,
            session_id=session_id,
            sequence=first + offset,
            message_id=str(uuid.uuid4()),
            now=now,
            stamp=stamp,
            finish_reason=turn.finish_reason if offset == last else None,
        )
        for offset, draft in enumerate(turn.rows)
    ]
    db.executemany(_INSERT_MESSAGE, [row for row, _message in stored])
    for entry in turn.costs:
        _upsert_cost(db, session_id, entry, now)
    _in_range(
        db.execute(
            _TURN_SESSION,
            (
                turn.input_tokens,
                turn.output_tokens,
                turn.cost_microcents,
                title or derive_title(message_text(turn.user.content)),
                now,
                session_id,
            ),
        )
    )
    return tuple(message for _row, message in stored)


def _stored(
    draft: MessageDraft,
    *,
    session_id: str,
    sequence: int,
    message_id: str,
    now: int,
    stamp: str,
    finish_reason: str | None,
) -> tuple[dict[str, Any], SessionMessage]:
    """One draft's row and the message a load will return for it.

    A draft that leaves its id and timestamp to the store and whose parts are instances of the known part
    models (every row the engine writes) becomes the row its values give, and the load's own fast reader
    decides that row (:func:`fast_message`: every field checked against the model's rule, the
    denormalised columns against the body).  Whatever it does not
    decide takes the full path: the message validated, its row built and read back by the full reader,
    refused exactly as before.  Both paths give the same row (``values_row``) and the same message
    (``tests/reference/host/test_history_writes.py``).  ``stamp`` is ``now`` as ISO text.
    """
    content = draft.content
    if (
        draft.id is None
        and draft.timestamp is None
        and type(content) is tuple
        and all(type(part) in _KNOWN_PARTS for part in content)
    ):
        row = values_row(
            message_id=message_id,
            session_id=session_id,
            sequence_number=sequence,
            role=draft.role,
            content=content,
            model_id=draft.model_id,
            dropped_through=None,
            created_at=now,
            finish_reason=finish_reason,
        )
        message = fast_message((*(row[name] for name in MESSAGE_COLUMNS), None))
        if message is not None:
            return row, message
    return stored_message(
        draft.to_message(
            session_id=session_id, sequence_number=sequence, message_id=message_id, timestamp=stamp
        ),
        finish_reason,
    )


def add_cost(db: sqlite3.Connection, session_id: str, entry: CostEntry, now: int) -> None:
    """Add one cost entry to its ``(model, legacy)`` row and to the session's totals (one cost writer)."""
    _upsert_cost(db, session_id, entry, now)
    _in_range(
        db.execute(_ADD_TOTALS, (entry.input_tokens, entry.output_tokens, entry.cost_microcents, session_id))
    )


def _in_range(cursor: sqlite3.Cursor) -> None:
    """Refuse the write when its guard kept the row as it was: a figure would have left the range."""
    if cursor.rowcount != 1:
        raise StoreError("totals_range")


def _upsert_cost(db: sqlite3.Connection, session_id: str, entry: CostEntry, now: int) -> None:
    """Add one cost entry to its ``(model, legacy)`` row; the caller moves the totals with it."""
    _in_range(
        db.execute(
            _ADD_COST,
            (
                str(uuid.uuid4()),
                session_id,
                entry.model,
                entry.model_catalog_id,
                entry.input_tokens,
                entry.output_tokens,
                entry.cost_microcents,
                entry.call_count,
                entry.unpriced_calls,
                now,
                now,
            ),
        )
    )
