"""Value types handed to the session store: a message draft, a completed turn, a cost entry.

A :class:`CompletedTurn` is everything one successful ``sendMessage`` makes durable: the user row,
the ordered structural call/result rows, the one terminal assistant row (with a text part even when
the final text is empty) and the money the turn spent.  Its shape is checked when it is built, so the
store's transaction only ever sees a well-formed exchange.  Sequence numbers are not part of a draft:
the store assigns them inside the commit, which keeps them gap-free.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field, StrictInt, StrictStr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import LlmMessage, LlmTextPart, LlmToolCallPart, LlmToolResultPart
from relavium_reference._model.messages import (
    ISO_TIMESTAMP_PATTERN,
    REFUSAL_MESSAGES,
    UNKNOWN_TOOL,
    MessageRole,
    SessionContentPart,
    SessionMessage,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    fixed_validation_error,
)
from relavium_reference._model.shapes import WireModel
from relavium_reference._model.vocabulary import TerminalFinishReason

__all__ = [
    "INT64_MAX",
    "TITLE_MAX_CODE_POINTS",
    "CompletedTurn",
    "CostEntry",
    "MessageDraft",
    "SessionCostRow",
    "TerminalFinishReason",
    "check_user_text",
    "derive_title",
    "is_structural_row",
    "is_terminal_row",
    "parse_completed_turn",
    "result_byte_length",
    "structural_drafts",
]

TITLE_MAX_CODE_POINTS = 40

#: Stop reasons a successful turn can end with (``tool_use`` marks structural rows; ``error`` never commits).

_NonNegative = Annotated[StrictInt, Field(ge=0)]
#: The largest figure ``history.db`` can hold: SQLite's INTEGER is a signed 64-bit value.
INT64_MAX = 2**63 - 1
#: A token, call or money figure handed to the store: non-negative and within SQLite's INTEGER.
_Figure = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]

_TURN_REFUSALS = {
    "turn_user_row": "the first row of a turn must be a user message with a text part",
    "turn_structural_row": "a structural row must be an assistant tool call or a tool result",
    "turn_terminal_row": "the terminal row must be an assistant message with a text part and no tool call",
    "turn_duplicate_call": "a tool call id is already waiting for its result",
    "turn_orphan_result": "a tool result must answer an earlier call of the same turn",
    "turn_unanswered_call": "every tool call of a completed turn needs exactly one result",
    "turn_draft_invalid": "a message draft breaks the session message rules",
    "cost_unpriced": "unpriced calls cannot exceed the call count",
    "turn_totals_range": "a turn's token and money sums must fit a 64-bit integer",
}


_MESSAGE_RULES = REFUSAL_MESSAGES


def _refuse(kind: str) -> PydanticCustomError:
    return PydanticCustomError(kind, _TURN_REFUSALS[kind])


class MessageDraft(WireModel):
    """A message before the store gives it a session and a sequence number.

    ``id`` and ``timestamp`` may be left out: the store mints a UUID and reads its clock.
    """

    role: MessageRole
    content: tuple[SessionContentPart, ...]
    model_id: Annotated[StrictStr, Field(min_length=1)] | None = None
    id: Annotated[StrictStr, Field(min_length=1)] | None = None
    timestamp: Annotated[StrictStr, Field(pattern=ISO_TIMESTAMP_PATTERN)] | None = None

    @model_validator(mode="after")
    def _obeys_message_rules(self) -> MessageDraft:
        try:
            self.to_message(
                session_id="draft",
                sequence_number=0,
                message_id="draft",
                timestamp=self.timestamp or "1970-01-01T00:00:00Z",
            )
        except ValidationError as exc:
            kind = exc.errors()[0]["type"]
            raise PydanticCustomError(
                kind, _MESSAGE_RULES.get(kind, _TURN_REFUSALS["turn_draft_invalid"])
            ) from None
        return self

    def to_message(
        self, *, session_id: str, sequence_number: int, message_id: str, timestamp: str
    ) -> SessionMessage:
        return SessionMessage(
            id=self.id or message_id,
            session_id=session_id,
            sequence_number=sequence_number,
            role=self.role,
            content=self.content,
            model_id=self.model_id,
            timestamp=self.timestamp or timestamp,
        )


def is_structural_row(role: str, content: tuple[Any, ...]) -> bool:
    """A tool-call row (assistant with a call part, preamble text or not) or a tool-result row."""
    if role == "tool":
        return True
    return role == "assistant" and any(isinstance(part, ToolCallPart) for part in content)


def is_terminal_row(role: str, content: tuple[Any, ...]) -> bool:
    """An assistant row with a text part and no call part: the row that closes a turn (KD-RES-1)."""
    return (
        role == "assistant"
        and any(isinstance(part, TextPart) for part in content)
        and not any(isinstance(part, ToolCallPart) for part in content)
    )


class CostEntry(WireModel):
    """Money and tokens one model spent, keyed by the raw provider model string.

    Every figure is within ``0..2**63 - 1`` (SQLite's INTEGER); a larger one is invalid input.
    """

    model: Annotated[StrictStr, Field(min_length=1)]
    input_tokens: _Figure = 0
    output_tokens: _Figure = 0
    cost_microcents: _Figure = 0
    call_count: _Figure = 1
    unpriced_calls: _Figure = 0
    model_catalog_id: Annotated[StrictStr, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _unpriced_within_calls(self) -> CostEntry:
        if self.unpriced_calls > self.call_count:
            raise _refuse("cost_unpriced")
        return self


class SessionCostRow(WireModel):
    """One ``session_costs`` row as read back: accumulated per (session, model, legacy flag)."""

    model: StrictStr
    model_catalog_id: StrictStr | None = None
    input_tokens: _NonNegative
    output_tokens: _NonNegative
    cost_microcents: _NonNegative
    call_count: _NonNegative
    unpriced_calls: _NonNegative
    is_legacy: bool


class CompletedTurn(WireModel):
    """One successful exchange, ready for an all-or-nothing commit."""

    user: MessageDraft
    structural: tuple[MessageDraft, ...] = ()
    terminal: MessageDraft
    finish_reason: TerminalFinishReason = "stop"
    costs: tuple[CostEntry, ...] = ()

    @model_validator(mode="after")
    def _is_one_whole_exchange(self) -> CompletedTurn:
        if self.user.role != "user" or not any(isinstance(p, TextPart) for p in self.user.content):
            raise _refuse("turn_user_row")
        if not is_terminal_row(self.terminal.role, self.terminal.content):
            raise _refuse("turn_terminal_row")
        pending: set[str] = set()  # calls not answered yet; an id may be reused once answered
        for row in self.structural:
            if not is_structural_row(row.role, row.content):
                raise _refuse("turn_structural_row")
            for part in row.content:
                if isinstance(part, ToolCallPart):
                    if part.id in pending:
                        raise _refuse("turn_duplicate_call")
                    pending.add(part.id)
                elif isinstance(part, ToolResultPart):
                    if part.tool_call_id not in pending:
                        raise _refuse("turn_orphan_result")
                    pending.remove(part.tool_call_id)
        if pending:
            raise _refuse("turn_unanswered_call")
        if max(self.input_tokens, self.output_tokens, self.cost_microcents) > INT64_MAX:
            raise _refuse("turn_totals_range")
        return self

    @property
    def rows(self) -> tuple[MessageDraft, ...]:
        """The rows in commit order: user, structural rows, terminal."""
        return (self.user, *self.structural, self.terminal)

    @property
    def input_tokens(self) -> int:
        return sum(entry.input_tokens for entry in self.costs)

    @property
    def output_tokens(self) -> int:
        return sum(entry.output_tokens for entry in self.costs)

    @property
    def cost_microcents(self) -> int:
        return sum(entry.cost_microcents for entry in self.costs)


def parse_completed_turn(data: Any) -> CompletedTurn:
    """Validate a wire-form turn; a refusal raises :class:`InvalidInputError` with a fixed message."""
    try:
        return CompletedTurn.model_validate(data)
    except ValidationError as exc:
        raise fixed_validation_error(exc, "CompletedTurn", _TURN_REFUSALS) from None


def check_user_text(text: object) -> None:
    """Refuse user text the store could not keep: not a string, or holding a lone surrogate.

    ``history.db`` keeps text as UTF-8, which cannot encode a surrogate code point on its own (a pair
    is one astral character and is fine).  Refused with ``InvalidInputError`` at ``text``, before the turn
    starts, so nothing is written and the session stays usable.
    """
    if not isinstance(text, str):
        raise InvalidInputError("the message text must be a string", location="text")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(
                "the message text must not hold a lone surrogate", location="text"
            ) from None


def derive_title(user_text: str) -> str | None:
    """A session title from its first completed user message (KD-DB-5).

    Whitespace runs collapse to one space; more than 40 code points are cut to 39 plus ``…``.
    Text with nothing visible gives no title.
    """
    collapsed = " ".join(unicodedata.normalize("NFC", user_text).split())
    if not collapsed:
        return None
    if len(collapsed) <= TITLE_MAX_CODE_POINTS:
        return collapsed
    return collapsed[: TITLE_MAX_CODE_POINTS - 1].rstrip() + "…"


def result_byte_length(result: Any) -> int:
    """The size of a tool output as the model received it: UTF-8 bytes (KD-MSG-1).

    A string counts as itself; any other value as its compact JSON text.
    """
    text = (
        result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    )
    return len(text.encode("utf-8"))


def structural_drafts(
    round_messages: Sequence[LlmMessage],
    structural_names: Mapping[str, str],
    *,
    model_id: str | None = None,
) -> tuple[MessageDraft, ...]:
    """Project a turn's in-flight tool rounds onto content-free structural rows.

    Each assistant round message becomes one call row (its preamble text kept, arguments dropped,
    reasoning dropped); each tool result becomes its own tool row with the error flag and the
    output's byte length, never the output.  ``structural_names`` maps a call id to the name the
    registry resolved it to; a call missing from it is named ``unknown_tool``.  This is the one
    place where raw arguments and results are left behind, on purpose: the durable union itself
    refuses them.
    """
    drafts: list[MessageDraft] = []
    for message in round_messages:
        if message.role == "assistant":
            parts: list[Any] = []
            for part in message.content:
                if isinstance(part, LlmTextPart):
                    parts.append(TextPart(text=part.text))
                elif isinstance(part, LlmToolCallPart):
                    parts.append(ToolCallPart(id=part.id, name=structural_names.get(part.id, UNKNOWN_TOOL)))
            if any(isinstance(part, ToolCallPart) for part in parts):
                drafts.append(MessageDraft(role="assistant", content=tuple(parts), model_id=model_id))
        elif message.role == "tool":
            for part in message.content:
                if isinstance(part, LlmToolResultPart):
                    result = ToolResultPart(
                        tool_call_id=part.tool_call_id,
                        name=structural_names.get(part.tool_call_id, UNKNOWN_TOOL),
                        is_error=part.is_error,
                        byte_length=result_byte_length(part.result),
                    )
                    drafts.append(MessageDraft(role="tool", content=(result,)))
    return tuple(drafts)
