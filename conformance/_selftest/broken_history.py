"""Broken implementations of durable history and resume (each breaks one rule of issue 5's area).

Each is the reference engine with one behaviour changed: how it hands a completed turn to the host's
persister, how it reacts to a failed commit, or how strictly it reads durable rows on resume.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession, TurnResult
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.messages import TextPart as DurableText
from relavium_reference._model.records import CompletedTurn, MessageDraft

__all__ = ["HISTORY_BREAKS"]


def _without_terminal_text(user_text: str) -> CompletedTurn:
    """A turn whose terminal row has no text part: built without validation, as a broken engine would."""
    return CompletedTurn.model_construct(
        user=MessageDraft(role="user", content=(DurableText(text=user_text),)),
        structural=(),
        terminal=MessageDraft.model_construct(role="assistant", content=(), model_id=None),
        finish_reason="stop",
        costs=(),
    )


class _PersistsAbortedTurn(AgentSession):
    """Commits an aborted turn as if it had completed with the text streamed so far."""

    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "aborted" and self._deps.persister is not None:
            turn = CompletedTurn(
                user=MessageDraft(role="user", content=(DurableText(text=text),)),
                terminal=MessageDraft(role="assistant", content=(DurableText(text=""),)),
            )
            await self._deps.persister.commit_turn(self.session_id, turn)
        return result


class _DropsEmptyTerminal(AgentSession):
    """Writes no text part on the terminal row when the final text is empty (the old archive's shape)."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        if end.text or self._deps.persister is None:
            return await super()._commit(text, end, progress)
        turn = _without_terminal_text(text)
        try:
            await self._deps.persister.commit_turn(self.session_id, turn)
        except Exception:
            self._latched = True
            return False
        return True


class _CommitsInTwoTransactions(AgentSession):
    """Commits the user row first and the rest of the exchange in a second commit."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        persister = self._deps.persister
        if persister is None:
            return await super()._commit(text, end, progress)
        user_only = _without_terminal_text(text)
        try:
            await persister.commit_turn(self.session_id, user_only)
        except Exception:
            self._latched = True
            return False
        return await super()._commit(text, end, progress)


class _IgnoresTheLatch(AgentSession):
    """Carries on after a failed commit as if nothing had happened."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        await super()._commit(text, end, progress)
        self._latched = False
        return True


_KNOWN_PART_FIELDS = {
    "text": {"type", "text"},
    "tool_call": {"type", "id", "name"},
    "tool_result": {"type", "toolCallId", "name", "isError", "byteLength", "truncated", "attachments"},
    "reasoning": {"type", "text", "redacted"},
    "media": {"type", "mimeType", "source", "byteLength", "durationMs"},
}


class _AcceptsUnknownContentFields(ReferenceImplementation):
    """Silently drops unknown fields (and raw arguments, results, signatures) of durable content parts."""

    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume" and isinstance(params.get("messages"), list):
            params = {**params, "messages": [_strip(message) for message in params["messages"]]}
        return await super()._dispatch(method, params)


def _strip(message: Any) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    parts = []
    for part in message["content"]:
        keep = _KNOWN_PART_FIELDS.get(str(part.get("type")), set(part)) if isinstance(part, dict) else None
        parts.append({k: v for k, v in part.items() if k in keep} if keep is not None else part)
    return {**message, "content": parts}


HISTORY_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "persists-aborted-turn",
        "an aborted turn is committed to the transcript",
        ("AS-MSG-021",),
        _PersistsAbortedTurn,
    ),
    BrokenImplementation(
        "drops-empty-terminal",
        "an empty final text is persisted without a terminal text part",
        ("AS-MSG-011",),
        _DropsEmptyTerminal,
    ),
    BrokenImplementation(
        "commits-in-two-transactions",
        "a completed turn reaches the host in two commits instead of one whole exchange",
        ("AS-MSG-014",),
        _CommitsInTwoTransactions,
    ),
    BrokenImplementation(
        "ignores-the-latch",
        "after a failed commit the session keeps calling the provider and running commands",
        ("AS-MSG-015",),
        _IgnoresTheLatch,
    ),
    BrokenImplementation(
        "accepts-unknown-content-fields",
        "durable rows with unknown fields or raw tool arguments are read, the extras silently dropped",
        ("AS-MSG-005",),
        implementation=_AcceptsUnknownContentFields,
    ),
)
