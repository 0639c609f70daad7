"""The pure export mapping: a session record and its transcript to a workflow document.

Turn reading (KD-EXP-3), over the messages sorted by ``sequenceNumber``, ``system`` rows set aside
(boundary markers belong to no turn, and export reads turns superseded by a boundary too):

* a ``user`` row opens an exchange;
* an ``assistant`` row with at least one text part and no ``tool_call`` part is a *terminal*: it
  completes the open exchange (its text may be empty) and the exchange becomes the next ``turn-N``;
* any other ``assistant`` row (tool calls, with or without preamble text) and every ``tool`` row are
  structure of the open exchange: the calls' resolved names feed the node's ``tools``;
* an open exchange met by the next ``user`` row is either a *legacy bare user* (no row of its own after
  the user row): its text is kept and prefixes the next completed prompt; or an *interrupted
  exchange* (it had structure): it is dropped from the chain, prefix text and all stays pending;
* rows outside any open exchange (an assistant or tool row before the first user, or after a
  terminal) are not part of a turn;
* at the end, an open exchange is rolled back: a trailing bare user, an unfinished exchange and any
  pending legacy prefix create no node.

Every message, whatever the reading, is kept in ``metadata.relaviumExport``.

The prompt (KD-EXP-4) is the pending legacy texts then the exchange's user text, each non-empty one
kept, joined by a blank line; a row's text is its text parts joined by a blank line (media ignored).
Interpolation openers are then neutralised: a space goes after every ``{`` that another ``{``
follows.  ``tools`` is the first-seen, de-duplicated list of the exchange's ``tool_call`` names,
without the fixed ``unknown_tool`` marker, and is left out when empty.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ._errors import InvalidInputError
from ._messages import (
    UNKNOWN_TOOL,
    AgentSessionRecord,
    SessionMessage,
    TextPart,
    ToolCallPart,
    message_text,
)
from ._workflow import (
    SCHEMA_VERSION,
    AgentNode,
    Edge,
    InputNode,
    OutputNode,
    RelaviumExport,
    WorkflowDocument,
    WorkflowMetadata,
    WorkflowNode,
    WorkflowSpec,
)
from ._workflow_id import workflow_id

__all__ = [
    "INPUT_NODE_ID",
    "OUTPUT_NODE_ID",
    "ExportedTurn",
    "completed_export_turns",
    "is_terminal",
    "neutralise_interpolation",
    "session_to_workflow",
]

INPUT_NODE_ID = "input"
OUTPUT_NODE_ID = "output"
_OPENER = re.compile(r"\{(?=\{)")
_PROMPT_JOIN = "\n\n"


@dataclass(frozen=True)
class ExportedTurn:
    """One completed logical turn as the export sees it."""

    prompt: str  # raw (not yet neutralised)
    tools: tuple[str, ...]
    user_sequence: int
    terminal_sequence: int


@dataclass
class _Exchange:
    user: SessionMessage
    prefix: list[str]
    tool_names: list[str] = field(default_factory=list)
    has_structure: bool = False


def is_terminal(message: SessionMessage) -> bool:
    """An assistant row holding a text part (even empty) and no tool call."""
    return (
        message.role == "assistant"
        and any(isinstance(part, TextPart) for part in message.content)
        and not any(isinstance(part, ToolCallPart) for part in message.content)
    )


def neutralise_interpolation(text: str) -> str:
    """Insert one space after each ``{`` immediately followed by ``{`` (``{{`` -> ``{ {``) (KD-EXP-4)."""
    return _OPENER.sub("{ ", text)


def _join(texts: Iterable[str]) -> str:
    return _PROMPT_JOIN.join(text for text in texts if text)


def _dedupe_grants(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name in names if name != UNKNOWN_TOOL))


def _ordered(session_id: str, messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    ordered = sorted(messages, key=lambda message: message.sequence_number)
    for index, message in enumerate(ordered):
        if message.session_id != session_id:
            raise InvalidInputError("message belongs to another session", location=f"messages.{index}")
        if index and ordered[index - 1].sequence_number == message.sequence_number:
            raise InvalidInputError("duplicate sequenceNumber", location=f"messages.{index}")
    return ordered


def completed_export_turns(messages: Sequence[SessionMessage]) -> list[ExportedTurn]:
    """The completed logical turns of an ordered transcript, in order (see the module docstring)."""
    turns: list[ExportedTurn] = []
    pending_prefix: list[str] = []
    exchange: _Exchange | None = None
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "user":
            if exchange is not None and not exchange.has_structure:
                pending_prefix.append(message_text(exchange.user.content))
            exchange = _Exchange(user=message, prefix=pending_prefix)
            continue
        if exchange is None:
            continue  # not inside any exchange: no turn to attach it to
        if is_terminal(message):
            prompt = _join([*exchange.prefix, message_text(exchange.user.content)])
            turns.append(
                ExportedTurn(
                    prompt=prompt,
                    tools=_dedupe_grants(exchange.tool_names),
                    user_sequence=exchange.user.sequence_number,
                    terminal_sequence=message.sequence_number,
                )
            )
            pending_prefix = []
            exchange = None
            continue
        exchange.has_structure = True
        exchange.tool_names.extend(part.name for part in message.tool_calls)
    return turns


def _agent_node(index: int, agent_ref: str, turn: ExportedTurn) -> AgentNode:
    prompt = neutralise_interpolation(turn.prompt)
    return AgentNode(
        id=f"turn-{index}",
        type="agent",
        agent_ref=agent_ref,
        prompt_template=prompt or None,
        tools=turn.tools or None,
    )


def session_to_workflow(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> WorkflowDocument:
    """Build the workflow scaffold of a persisted session, deterministically (no clock, no randomness).

    Raises :class:`InvalidInputError` when a message belongs to another session or two messages share a
    sequence number.  The agent snapshot is copied as captured; no authoring rule is applied to it.
    """
    ordered = _ordered(record.id, messages)
    turns = completed_export_turns(ordered)
    agent_nodes = [_agent_node(index, record.agent_slug, turn) for index, turn in enumerate(turns, 1)]
    nodes: list[WorkflowNode] = [
        InputNode(id=INPUT_NODE_ID, type="input"),
        *agent_nodes,
        OutputNode(id=OUTPUT_NODE_ID, type="output"),
    ]
    chain = [node.id for node in nodes]
    edges = tuple(Edge.model_validate({"from": a, "to": b}) for a, b in itertools.pairwise(chain))
    export = RelaviumExport(
        source="session",
        session_id=record.id,
        agent_slug=record.agent_slug,
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        messages=tuple(ordered),
    )
    spec = WorkflowSpec(
        id=workflow_id(record.title, record.id),
        name=record.title,
        metadata=WorkflowMetadata(relavium_export=export),
        agents=(record.agent_snapshot,) if record.agent_snapshot is not None else None,
        nodes=tuple(nodes),
        edges=edges,
    )
    return WorkflowDocument(schema_version=SCHEMA_VERSION, workflow=spec)
