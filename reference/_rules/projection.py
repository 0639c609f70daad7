"""Request projection: from the working transcript to the messages of the next provider request.

Pure.  The working transcript is text only: completed exchanges of a user text and its final
assistant text (an empty final keeps the user alone).  Tool pairs never cross a turn boundary.
The agent's memory policy selects which history goes in; same-role neighbours are folded only
after that selection.  Every call builds new lists and parts, so the caller owns what it gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from relavium_reference._model.llm import ContentPart, LlmMessage, LlmTextPart
from relavium_reference._model.shapes import MemoryNone, MemoryPolicySpec, MemoryWindow

__all__ = [
    "SUMMARY_CLOSE",
    "SUMMARY_OPEN",
    "Exchange",
    "HistoryMessage",
    "fold_same_role",
    "project_history",
    "summary_messages",
    "working_messages",
]


@dataclass(frozen=True)
class HistoryMessage:
    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class Exchange:
    """One completed turn of the working transcript: the user text and the final assistant text."""

    user: str
    assistant: str | None  # None: a legacy bare user kept in context, with no terminal


def working_messages(exchanges: Sequence[Exchange]) -> list[HistoryMessage]:
    """The text-only messages of completed exchanges; an empty final contributes its user alone."""
    out: list[HistoryMessage] = []
    for exchange in exchanges:
        out.append(HistoryMessage("user", exchange.user))
        if exchange.assistant:
            out.append(HistoryMessage("assistant", exchange.assistant))
    return out


def project_history(exchanges: Sequence[Exchange], memory: MemoryPolicySpec | None) -> list[HistoryMessage]:
    """Select the history a request carries, by memory policy (KD-PROJ-1).

    ``none`` carries no earlier turn; ``window`` the last ``window_size`` completed exchanges;
    ``summary`` (and an agent that declares no memory) all retained exchanges.
    """
    if isinstance(memory, MemoryNone):
        return []
    if isinstance(memory, MemoryWindow):
        return working_messages(exchanges[-memory.window_size :])
    return working_messages(exchanges)


SUMMARY_OPEN = "<earlier-conversation-summary>"
SUMMARY_CLOSE = "</earlier-conversation-summary>"


def summary_messages(summary: str | None) -> list[HistoryMessage]:
    """A running summary as untrusted user-role data, never part of the system prompt (KD-PROJ-2)."""
    if not summary:
        return []
    return [HistoryMessage("user", f"{SUMMARY_OPEN}\n{summary}\n{SUMMARY_CLOSE}")]


def fold_same_role(messages: Sequence[LlmMessage]) -> list[LlmMessage]:
    """Merge neighbours of the same role into one message (providers want alternation)."""
    folded: list[LlmMessage] = []
    for message in messages:
        if folded and folded[-1].role == message.role:
            parts: list[ContentPart] = [*folded[-1].content, *message.content]
            folded[-1] = LlmMessage(role=message.role, content=parts)
        else:
            folded.append(LlmMessage(role=message.role, content=list(message.content)))
    return folded


def text_message(role: Literal["user", "assistant"], text: str) -> LlmMessage:
    return LlmMessage(role=role, content=[LlmTextPart(text=text)])
