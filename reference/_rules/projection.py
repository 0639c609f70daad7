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

What every request of one history needs is computed once, when the history is made: a :class:`History`
holds its request messages already folded and their KD-COMP-2 characters, a request folds only where the
history meets the pending user and the tool rounds, and its estimate reads the history's characters for
as long as the request still starts with those very messages.  A session keeps its last history in a
:class:`HistoryMemo`, which extends it when slots were only appended: a turn at turn 1000 no longer walks
the thousand slots before it (issue 20).
"""

from __future__ import annotations

import copy
import json
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from typing import Literal, overload

from relavium_reference._model.llm import LlmMessage, LlmTextPart, ToolDef
from relavium_reference._model.shapes import MemoryPolicySpec

__all__ = [
    "SUMMARY_CLOSE",
    "SUMMARY_OPEN",
    "Exchange",
    "History",
    "HistoryMemo",
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
class History(Sequence[HistoryMessage]):
    """A projected history (the summary first, then the selected slots' messages, before folding) as one
    frozen value, with what every request that carries it needs: its request messages folded
    (:attr:`folded`) and their KD-COMP-2 characters (:attr:`chars`).  Make one with :meth:`of`."""

    items: tuple[HistoryMessage, ...]
    folded: tuple[LlmMessage, ...]
    chars: int

    @classmethod
    def of(cls, items: Iterable[HistoryMessage]) -> History:
        owned = tuple(items)
        folded = tuple(fold_same_role(list(map(_MESSAGE, owned))))
        return cls(owned, folded, _message_chars(folded))

    def extended(self, more: Sequence[HistoryMessage]) -> History:
        """This history and then ``more``, folded only where they meet (equal to :meth:`of` of both)."""
        folded, kept = _fold_onto(self.folded, list(map(_MESSAGE, more)))
        prefix_chars = self.prefix(kept)[1]
        return History((*self.items, *more), tuple(folded), prefix_chars + _message_chars(folded[kept:]))

    def prefix(self, kept: int) -> tuple[tuple[LlmMessage, ...], int]:
        """The first ``kept`` folded messages (all of them, or all but the last) and their characters."""
        if kept == len(self.folded):
            return self.folded, self.chars
        return self.folded[:kept], self.chars - _message_chars(self.folded[kept:])

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[HistoryMessage]:
        return iter(self.items)

    @overload
    def __getitem__(self, index: int) -> HistoryMessage: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[HistoryMessage, ...]: ...

    def __getitem__(self, index: int | slice) -> HistoryMessage | tuple[HistoryMessage, ...]:
        return self.items[index]


class HistoryMemo:
    """One session's last projected history, so that a turn does not project its whole transcript again.

    :meth:`project` returns what :func:`project_history` returns for the same arguments, as a
    :class:`History`: the last one when the summary and the selected slots are unchanged, the last one
    extended when slots were only appended, and a fresh projection otherwise.  The key is the summary and
    the selected slots themselves (frozen values, compared by value after identity), never a version
    number: no change of the transcript, of the selection or of the summary can be served a stale history.
    """

    def __init__(self) -> None:
        self._summary: str | None = None
        self._slots: tuple[Exchange, ...] = ()
        self._history = History.of(())

    def project(
        self, exchanges: Sequence[Exchange], memory: MemoryPolicySpec, summary: str | None
    ) -> History:
        slots = tuple(select_exchanges(exchanges, memory))
        seen = len(self._slots)
        if summary == self._summary and slots[:seen] == self._slots:
            if len(slots) == seen:
                return self._history
            history = self._history.extended(working_messages(slots[seen:]))
        else:
            history = History.of([*summary_messages(summary), *working_messages(slots)])
        self._summary, self._slots, self._history = summary, slots, history
        return history


@dataclass(frozen=True)
class ProjectedRequest:
    """The owned parts of one request: the authored system prompt and the folded messages."""

    system: str
    messages: list[LlmMessage]
    tools: list[ToolDef] | None
    known_prefix: tuple[tuple[LlmMessage, ...], int] | None = field(default=None, compare=False, repr=False)
    """Leading messages whose KD-COMP-2 characters are known, and that count: :func:`estimate_tokens`
    uses it only while :attr:`messages` starts with those very (frozen) messages."""


def project_request(
    *,
    system: str,
    history: Sequence[HistoryMessage],
    pending_user: str | None,
    rounds: Sequence[LlmMessage] = (),
    tools: Sequence[ToolDef] | None = None,
) -> ProjectedRequest:
    """The one projection: history, the pending user, this turn's tool rounds, folded last.

    ``history`` comes from :func:`project_history` (or a session's :class:`HistoryMemo`).  ``rounds``
    and ``tools`` are deep-copied so that nothing a provider does to the request can reach the turn's own
    record.  ``pending_user`` is ``None`` only to measure the history alone (a compaction's before and
    after).
    """
    base = history if isinstance(history, History) else History.of(history)
    tail = [text_message("user", pending_user)] if pending_user is not None else []
    tail.extend(LlmMessage.model_validate(copy.deepcopy(message.model_dump())) for message in rounds)
    messages, kept = _fold_onto(base.folded, tail)
    owned_tools = [ToolDef.model_validate(copy.deepcopy(t.model_dump())) for t in tools] if tools else None
    return ProjectedRequest(
        system=system, messages=messages, tools=owned_tools, known_prefix=base.prefix(kept)
    )


_MESSAGE_OVERHEAD = 8
_NON_TEXT_PART = 256


def estimate_tokens(request: ProjectedRequest) -> int:
    """The KD-COMP-2 estimate of a projected request: characters / 4, rounded up.

    Characters: the system text, 8 per message plus each part's text length (256 for a part that is
    not text), and the compact JSON length of each tool definition.  The characters of a known prefix
    (:attr:`ProjectedRequest.known_prefix`) are read, not counted again, when the request's messages
    still start with exactly those messages.
    """
    chars, messages, start = len(request.system), request.messages, 0
    if request.known_prefix is not None:
        prefix, prefix_chars = request.known_prefix
        if len(prefix) <= len(messages) and all(map(operator.is_, prefix, messages)):
            chars, start = chars + prefix_chars, len(prefix)
    chars += _message_chars(islice(messages, start, None))
    for tool in request.tools or ():
        chars += len(json.dumps(tool.to_wire(), separators=(",", ":"), ensure_ascii=False))
    return math.ceil(chars / 4)


def _message_chars(messages: Iterable[LlmMessage]) -> int:
    """KD-COMP-2 characters of messages: 8 each, plus each part's text length (256 for a non-text part)."""
    chars = 0
    for message in messages:
        chars += _MESSAGE_OVERHEAD
        for part in message.content:
            chars += len(part.text) if isinstance(part, LlmTextPart) else _NON_TEXT_PART
    return chars


def _fold_onto(folded: Sequence[LlmMessage], tail: Sequence[LlmMessage]) -> tuple[list[LlmMessage], int]:
    """``fold_same_role`` of ``folded`` (already folded) then ``tail``, folding only where they meet.

    Returns the new list and how many leading messages of ``folded`` it shares as they are: all of them,
    or all but the last when that one and the tail's first share a role and become one message.
    """
    rest = fold_same_role(tail)
    if folded and rest and folded[-1].role == rest[0].role:
        last, first = folded[-1], rest[0]
        joined = LlmMessage.model_construct(role=last.role, content=(*last.content, *first.content))
        return [*islice(folded, len(folded) - 1), joined, *islice(rest, 1, None)], len(folded) - 1
    return [*folded, *rest], len(folded)


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
