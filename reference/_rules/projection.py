"""Request projection: from the working transcript to the messages of the next provider request.

Pure.  The working transcript is text only: completed exchanges of a user text and its final
assistant text (an empty final keeps the user alone; a legacy bare user is a slot of its own).  Tool
pairs never cross a turn boundary.

There is **one** projection, :func:`project_request`: the resolved memory policy selects the history
(KD-PROJ-1), a running summary is placed first as untrusted user-role data (KD-COMP-3; the system
prompt stays as authored), the pending user follows, and only then are same-role neighbours folded.
The request sent to a provider and the session's context estimate (:func:`estimate_tokens`, KD-COMP-2)
are both computed from what it returns.

Texts are validated once, where they enter: each history message keeps its frozen request message
(:attr:`HistoryMessage.message`) and each slot its history messages (:attr:`Exchange.messages`), so a
request at turn 1000 shares a thousand frozen values instead of rebuilding them.  Every call builds new
lists (the request's, a folded message's content), copies this turn's tool rounds and tool definitions
(their arguments and schemas are plain mutable data), and shares only frozen values; the caller owns
what it gets.
"""

from __future__ import annotations

import copy
import json
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import Literal

from relavium_reference._model.llm import LlmMessage, LlmTextPart, ToolDef
from relavium_reference._model.shapes import MemoryPolicySpec

__all__ = [
    "SUMMARY_CLOSE",
    "SUMMARY_OPEN",
    "Exchange",
    "HistoryMessage",
    "ProjectedRequest",
    "estimate_tokens",
    "fold_same_role",
    "project_history",
    "project_request",
    "select_exchanges",
    "summary_messages",
    "text_message",
    "working_messages",
]


@dataclass(frozen=True)
class HistoryMessage:
    role: Literal["user", "assistant"]
    text: str

    @cached_property
    def message(self) -> LlmMessage:
        """The frozen request message of this text, validated the first time a request needs it."""
        return text_message(self.role, self.text)


@dataclass(frozen=True)
class Exchange:
    """One slot of the working transcript: the user text and the final assistant text."""

    user: str
    assistant: str | None  # None: a legacy bare user kept in context, with no terminal

    @property
    def message_units(self) -> int:
        """Messages the slot contributes: the user, plus the final text when it is not empty."""
        return 2 if self.assistant else 1

    @cached_property
    def messages(self) -> tuple[HistoryMessage, ...]:
        """The slot's text-only messages, built once: the user, then the final text when not empty."""
        if self.assistant:
            return (HistoryMessage("user", self.user), HistoryMessage("assistant", self.assistant))
        return (HistoryMessage("user", self.user),)


def working_messages(exchanges: Sequence[Exchange]) -> list[HistoryMessage]:
    """The text-only messages of completed exchanges; an empty final contributes its user alone."""
    out: list[HistoryMessage] = []
    for exchange in exchanges:
        out.extend(exchange.messages)
    return out


def select_exchanges(exchanges: Sequence[Exchange], memory: MemoryPolicySpec) -> list[Exchange]:
    """The slots a request carries under the resolved policy (KD-PROJ-1).

    ``none`` carries no earlier turn; ``window`` the newest ``window_size`` slots; ``summary`` every
    retained slot.  The policy is read by its ``type`` alone.
    """
    if memory.type == "none":
        return []
    if memory.type == "window":
        size = getattr(memory, "window_size", 0)
        return list(exchanges[-size:]) if size > 0 else []
    return list(exchanges)


SUMMARY_OPEN = "<earlier-conversation-summary>"
SUMMARY_CLOSE = "</earlier-conversation-summary>"


def summary_messages(summary: str | None) -> list[HistoryMessage]:
    """A running summary as untrusted user-role data, never part of the system prompt (KD-COMP-3)."""
    if not summary:
        return []
    return [HistoryMessage("user", f"{SUMMARY_OPEN}\n{summary}\n{SUMMARY_CLOSE}")]


def project_history(
    exchanges: Sequence[Exchange], memory: MemoryPolicySpec, summary: str | None = None
) -> list[HistoryMessage]:
    """Selection and summary placement, before any folding: the summary first, then the selected slots."""
    return [*summary_messages(summary), *working_messages(select_exchanges(exchanges, memory))]


@dataclass(frozen=True)
class ProjectedRequest:
    """The owned parts of one request: the authored system prompt and the folded messages."""

    system: str
    messages: list[LlmMessage]
    tools: list[ToolDef] | None


def project_request(
    *,
    system: str,
    history: Sequence[HistoryMessage],
    pending_user: str | None,
    rounds: Sequence[LlmMessage] = (),
    tools: Sequence[ToolDef] | None = None,
) -> ProjectedRequest:
    """The one projection: history, the pending user, this turn's tool rounds, folded last.

    ``history`` comes from :func:`project_history`.  ``rounds`` and ``tools`` are deep-copied so that
    nothing a provider does to the request can reach the turn's own record.  ``pending_user`` is
    ``None`` only to measure the history alone (a compaction's before and after).
    """
    items = list(map(_MESSAGE, history))
    if pending_user is not None:
        items.append(text_message("user", pending_user))
    items.extend(LlmMessage.model_validate(copy.deepcopy(message.model_dump())) for message in rounds)
    messages = fold_same_role(items)
    owned_tools = [ToolDef.model_validate(copy.deepcopy(t.model_dump())) for t in tools] if tools else None
    return ProjectedRequest(system=system, messages=messages, tools=owned_tools)


_MESSAGE_OVERHEAD = 8
_NON_TEXT_PART = 256


def estimate_tokens(request: ProjectedRequest) -> int:
    """The KD-COMP-2 estimate of a projected request: characters / 4, rounded up.

    Characters: the system text, 8 per message plus each part's text length (256 for a part that is
    not text), and the compact JSON length of each tool definition.
    """
    chars = len(request.system)
    for message in request.messages:
        chars += _MESSAGE_OVERHEAD
        for part in message.content:
            chars += len(part.text) if isinstance(part, LlmTextPart) else _NON_TEXT_PART
    for tool in request.tools or ():
        chars += len(json.dumps(tool.to_wire(), separators=(",", ":"), ensure_ascii=False))
    return math.ceil(chars / 4)


def fold_same_role(messages: Sequence[LlmMessage]) -> list[LlmMessage]:
    """Merge neighbours of the same role into one message (providers want alternation).

    A new list; a message without a same-role neighbour is shared as it is (it is frozen), and a run of
    neighbours becomes one new message whose content is their parts in order, built without validating
    again what was validated when each part was made.
    """
    roles = list(map(_ROLE, messages))
    if not any(map(operator.eq, roles, islice(roles, 1, None))):
        return list(messages)  # already alternating (the usual case): nothing to build
    folded: list[LlmMessage] = []
    start, count = 0, len(messages)
    while start < count:
        first = messages[start]
        end = start + 1
        while end < count and messages[end].role == first.role:
            end += 1
        if end == start + 1:
            folded.append(first)
        else:
            parts = tuple(part for message in messages[start:end] for part in message.content)
            folded.append(LlmMessage.model_construct(role=first.role, content=parts))
        start = end
    return folded


# Field readers for the passes that run once per message of a request: mapped in C, not in Python.
_MESSAGE = operator.attrgetter("message")
_ROLE = operator.attrgetter("role")


def text_message(role: Literal["user", "assistant"], text: str) -> LlmMessage:
    return LlmMessage(role=role, content=(LlmTextPart(text=text),))
