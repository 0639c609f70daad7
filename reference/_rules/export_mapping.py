"""The pure export mapping: a session record and its transcript to a workflow document.

Turn reading (KD-EXP-3).  The rows are sorted by ``sequenceNumber``; ``system`` rows are set aside
(boundary markers belong to no turn, and export reads the turns a boundary superseded too).  The rest
is grouped exactly as resume groups it (``_resume._slots``, the shared structural projection):

* a *completed turn* is a ``user`` row, its structural rows (tool-call rows with or without preamble
  text, tool-result rows), then a terminal: an ``assistant`` row with a text part (possibly empty)
  and no ``tool_call`` part.  Each becomes the next ``turn-N``;
* a *legacy bare user* is a ``user`` row directly followed by another ``user`` row: its text prefixes
  the next completed prompt and it creates no node;
* an *interrupted exchange* (user row and structure, then another user row), a trailing open exchange,
  rows outside any exchange and legacy prefix text no later turn completes create no node.

Every message, whatever the reading, is kept in ``metadata.relaviumExport``.

The prompt (KD-EXP-4) is the pending legacy texts then the exchange's user text, each non-empty one
kept, joined by a blank line; a row's text is its text parts joined by a blank line (media ignored).
Interpolation openers are then neutralised: a space goes after every ``{`` that another ``{``
follows.  ``tools`` is the first-seen, de-duplicated list of the exchange's ``tool_call`` names,
without the fixed ``unknown_tool`` marker, and is left out when empty.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.gc_pause import gc_paused
from relavium_reference._model.messages import UNKNOWN_TOOL, AgentSessionRecord, SessionMessage
from relavium_reference._model.workflow import (
    EXPORT_METADATA_KEY,
    SCHEMA_VERSION,
    RelaviumExport,
    WorkflowDocument,
    WorkflowMetadata,
)
from relavium_reference._rules.resume import _slots, _text
from relavium_reference._rules.workflow_id import workflow_id

__all__ = [
    "INPUT_NODE_ID",
    "OUTPUT_NODE_ID",
    "ExportedTurn",
    "completed_export_turns",
    "neutralise_interpolation",
    "session_to_workflow",
]

INPUT_NODE_ID = "input"
OUTPUT_NODE_ID = "output"
_OPENER = re.compile(r"\{(?=\{)")
_PROMPT_JOIN = "\n\n"
_SEQUENCE_NUMBER = operator.attrgetter("sequence_number")
_SESSION_ID = operator.attrgetter("session_id")


@dataclass(frozen=True)
class ExportedTurn:
    """One completed logical turn as the export sees it."""

    prompt: str  # raw (not yet neutralised)
    tools: tuple[str, ...]
    user_sequence: int
    terminal_sequence: int


def neutralise_interpolation(text: str) -> str:
    """Insert one space after each ``{`` immediately followed by ``{`` (``{{`` -> ``{ {``) (KD-EXP-4)."""
    return _OPENER.sub("{ ", text)


def _join(texts: Iterable[str]) -> str:
    return _PROMPT_JOIN.join(text for text in texts if text)


def _dedupe_grants(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name in names if name != UNKNOWN_TOOL))


def _ordered(session_id: str, messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    sequence = list(map(_SEQUENCE_NUMBER, messages))
    increasing = all(map(operator.lt, sequence, itertools.islice(sequence, 1, None)))
    # Rows read from a store arrive in order: sorting them again would give the same list.
    ordered = list(messages) if increasing else sorted(messages, key=_SEQUENCE_NUMBER)
    if not increasing:
        sequence = list(map(_SEQUENCE_NUMBER, ordered))
        increasing = all(map(operator.lt, sequence, itertools.islice(sequence, 1, None)))
    if increasing and set(map(_SESSION_ID, ordered)) <= {session_id}:
        return ordered  # one session, strictly increasing: nothing the loop below refuses
    for index, message in enumerate(ordered):
        if message.session_id != session_id:
            raise InvalidInputError("message belongs to another session", location=f"messages.{index}")
        if index and ordered[index - 1].sequence_number == message.sequence_number:
            raise InvalidInputError("duplicate sequenceNumber", location=f"messages.{index}")
    return ordered


def _exchanges(messages: Sequence[SessionMessage]) -> Iterator[tuple[str, tuple[str, ...], int, int]]:
    """Per completed turn: the raw prompt, the granted tools and the user and terminal sequence numbers."""
    transcript = [message for message in messages if message.role != "system"]
    position: dict[int, int] = {}  # sequence number -> index in transcript, built when first needed
    pending_prefix: list[str] = []
    for slot in _slots(transcript):
        user, terminal = slot.user, slot.terminal
        if terminal is None:
            pending_prefix.append(_text(user))
            continue
        if terminal.sequence_number == user.sequence_number + 1:
            tools: tuple[str, ...] = ()  # no row can lie between two consecutive numbers: no tool
        else:
            if not position:
                position = {message.sequence_number: index for index, message in enumerate(transcript)}
            start, end = position[user.sequence_number] + 1, position[terminal.sequence_number]
            tools = _dedupe_grants(part.name for row in transcript[start:end] for part in row.tool_calls)
        if pending_prefix:
            prompt = _join([*pending_prefix, _text(user)])
            pending_prefix = []
        else:
            prompt = _text(user)  # what _join of the one text gives
        yield prompt, tools, user.sequence_number, terminal.sequence_number


def completed_export_turns(messages: Sequence[SessionMessage]) -> list[ExportedTurn]:
    """The completed logical turns of a transcript sorted by sequence number (see the module docstring).

    The grouping into slots is the resume projection's (:mod:`._resume`), applied to every row
    whatever the boundaries: a completed slot is a turn, a retained legacy slot is prompt prefix.
    """
    return [ExportedTurn(*turn) for turn in _exchanges(messages)]


def _transcript(record: AgentSessionRecord, ordered: list[SessionMessage]) -> RelaviumExport:
    """``metadata.relaviumExport``, its messages passed through as the instances they are.

    Validating a tuple of models re-runs each model's own after-validator on every instance; the
    messages are exactly :class:`SessionMessage` instances, ordered and of this session (``_ordered``),
    so the record's fields are validated with no message and the messages added after.  The
    transcript's own check still runs on the whole when :class:`WorkflowMetadata` takes it in.  Any
    other kind of message (a subclass, another type) goes through validation as given.
    """
    fields = {
        "source": "session",
        "session_id": record.id,
        "agent_slug": record.agent_slug,
        "title": record.title,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }
    messages = tuple(ordered)
    if not set(map(type, messages)) <= {SessionMessage}:
        return RelaviumExport(**fields, messages=messages)
    return RelaviumExport(**fields, messages=()).model_copy(update={"messages": messages})


@gc_paused
def session_to_workflow(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> WorkflowDocument:
    """Build the workflow scaffold of a persisted session, deterministically (no clock, no randomness).

    Raises :class:`InvalidInputError` when ``record`` is not an ``AgentSessionRecord`` or ``messages``
    not a sequence of ``SessionMessage``, when a message belongs to another session or two messages
    share a sequence number.  The agent snapshot is copied as captured; no authoring rule is applied.
    """
    if not isinstance(record, AgentSessionRecord):
        raise InvalidInputError("an export needs an AgentSessionRecord", location="record")
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise InvalidInputError("an export needs a sequence of SessionMessage", location="messages")
    if not all(isinstance(message, SessionMessage) for message in messages):
        raise InvalidInputError("an export needs a sequence of SessionMessage", location="messages")
    ordered = _ordered(record.id, messages)
    agent_ref = record.agent_slug
    nodes: list[dict[str, object]] = [{"id": INPUT_NODE_ID, "type": "input"}]
    for index, (prompt, tools, _user, _terminal) in enumerate(_exchanges(ordered), 1):
        if "{{" in prompt:  # nothing to neutralise otherwise
            prompt = neutralise_interpolation(prompt)
        nodes.append(
            {
                "id": f"turn-{index}",
                "type": "agent",
                "agent_ref": agent_ref,
                "prompt_template": prompt or None,
                "tools": tools or None,
            }
        )
    nodes.append({"id": OUTPUT_NODE_ID, "type": "output"})
    chain = [node["id"] for node in nodes]
    # One validation of the document checks every node and edge (the same models as built one by one,
    # the same fields set); its checks of the spec run once, not again for a spec passed in built.
    workflow = {
        "id": workflow_id(record.title, record.id),
        "name": record.title,
        "metadata": WorkflowMetadata.model_validate({EXPORT_METADATA_KEY: _transcript(record, ordered)}),
        "agents": (record.agent_snapshot,) if record.agent_snapshot is not None else None,
        "nodes": nodes,
        "edges": [{"from": a, "to": b} for a, b in itertools.pairwise(chain)],
    }
    return WorkflowDocument.model_validate({"schema_version": SCHEMA_VERSION, "workflow": workflow})
