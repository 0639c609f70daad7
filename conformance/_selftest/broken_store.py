"""Broken implementations of the durable rows: the store's row validation, and append-only history.

Three are the reference engine with one check of the read side (``pure.readStoredRow``) taken away:
the row's body is still parsed strictly, so malformed JSON and unknown fields are still refused, but
the columns it no longer checks may say anything.  The ``stored-rows`` vector suite must catch each.
One damages the write side (``pure.storedRowColumns``), which the ``stored-columns`` suite must catch.
The last writes a resumed session's persisted exchanges again, which the transcript
``persistence/rows-are-append-only`` must catch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import REFERENCE_PURE
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession, InvalidInputError
from relavium_reference._host.history_store import (
    StoreError,
    derive_columns,
    iso_from_ms,
    message_from_row,
    strict_json,
)
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.messages import SessionMessage, TextPart, parse_session_message
from relavium_reference._model.records import CompletedTurn, MessageDraft
from relavium_reference._model.vocabulary import TERMINAL_FINISH_REASONS

__all__ = ["STORE_BREAKS"]


def _body_only(row: Mapping[str, Any]) -> SessionMessage:
    """The message a row's canonical columns hold, with no look at its denormalised columns."""
    raw = row["content_parts"]
    wire: dict[str, Any] = {
        "id": row["id"],
        "sessionId": row["session_id"],
        "sequenceNumber": row["sequence_number"],
        "role": row["role"],
        "content": [] if raw is None else strict_json(raw),
        "timestamp": iso_from_ms(row["created_at"]),
    }
    if row["model_id"] is not None:
        wire["modelId"] = row["model_id"]
    if row["compaction_dropped_through_sequence"] is not None:
        wire["compaction"] = {"droppedThroughSequence": row["compaction_dropped_through_sequence"]}
    try:
        return parse_session_message(wire)
    except InvalidInputError:
        raise StoreError("invalid_message") from None


def _skips_column_checks(row: Mapping[str, Any]) -> SessionMessage:
    return _body_only(row)


def _trusts_text_column(row: Mapping[str, Any]) -> SessionMessage:
    """Every column is checked except ``content``, which is taken as the body's own projection."""
    message = _body_only(row)
    return message_from_row({**row, "content": derive_columns(message)["content"]})


def _allows_finish_reason_anywhere(row: Mapping[str, Any]) -> SessionMessage:
    """Any finish reason on any row is accepted; the other columns are still checked."""
    message = _body_only(row)
    stored = row["finish_reason"]
    wanted = derive_columns(message, stored if stored in TERMINAL_FINISH_REASONS else None)["finish_reason"]
    return message_from_row({**row, "finish_reason": wanted})


def _writes_empty_tool_calls(message: SessionMessage, finish_reason: str | None) -> dict[str, Any]:
    """A row without call parts gets an empty array in ``tool_calls`` instead of NULL."""
    columns = REFERENCE_PURE.stored_row_columns(message, finish_reason)
    return {**columns, "toolCalls": columns["toolCalls"] or []}


class _ResumeRewritesHistory(AgentSession):
    """A resumed instance's first commit is preceded by commits of every exchange it restored."""

    _replay: tuple[tuple[str, str], ...] = ()

    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        if isinstance(session, _ResumeRewritesHistory):
            session._replay = tuple(
                (e.user, e.assistant) for e in session._exchanges if e.assistant is not None
            )
        return session

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        persister = self._deps.persister
        replay, self._replay = self._replay, ()
        if persister is not None:
            for user, reply in replay:
                turn = CompletedTurn(
                    user=MessageDraft(role="user", content=(TextPart(text=user),)),
                    terminal=MessageDraft(role="assistant", content=(TextPart(text=reply),)),
                )
                await persister.commit_turn(self.session_id, turn)
        return await super()._commit(text, end, progress)


STORE_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "store-skips-column-checks",
        "the store reads a row without comparing its denormalised columns with the canonical body",
        ("AS-VAL-005",),
        pure=replace(REFERENCE_PURE, read_stored_row=_skips_column_checks),
    ),
    BrokenImplementation(
        "store-trusts-text-column",
        "the store reads a row without comparing its text projection column with the canonical text",
        ("AS-VAL-006",),
        pure=replace(REFERENCE_PURE, read_stored_row=_trusts_text_column),
    ),
    BrokenImplementation(
        "store-allows-finish-reason-anywhere",
        "the store accepts any finish reason, or none, on a row of any role",
        ("AS-VAL-009",),
        pure=replace(REFERENCE_PURE, read_stored_row=_allows_finish_reason_anywhere),
    ),
    BrokenImplementation(
        "store-writes-empty-tool-calls",
        "the store writes an empty tool_calls array, not NULL, for a row without call parts",
        ("AS-VAL-007",),
        pure=replace(REFERENCE_PURE, stored_row_columns=_writes_empty_tool_calls),
    ),
    BrokenImplementation(
        "resume-rewrites-history",
        "after a resume, the exchanges already persisted are written again before the next turn's rows",
        ("AS-MSG-002",),
        _ResumeRewritesHistory,
    ),
)
