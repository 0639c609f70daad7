"""Breaks of the legacy-row rules (clauses AS-LEG-*): bare user rows and legacy text on resume."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from relavium_conformance._reference.impl import export_workflow
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import Document, by_sequence, state_with
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage
from relavium_reference._model.records import is_terminal_row
from relavium_reference._rules.export_mapping import neutralise_interpolation
from relavium_reference._rules.resume import (
    ResumeMessage,
    SessionResumeState,
    TurnSpan,
    reconstruct_session_state,
)
from relavium_reference._rules.workflow_yaml import dump_yaml

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="reconstruct-counts-legacy-bare-user",
    summary="a legacy bare user row counts as a turn towards the reconstructed turn counter",
    clauses=("AS-LEG-006",),
    replaces="reconstruct_session_state",
)
def _reconstruct_counts_legacy_users(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    state = reconstruct_session_state(record, messages)
    legacy = len(state.turn_boundary_sequences) - len(state.completed_turn_spans)
    return state.model_copy(update={"turn_count": state.turn_count + legacy})


@break_of(
    name="reconstruct-keeps-final-bare-user",
    summary="a final user row with no terminal stays in the resumed messages instead of rolling back",
    clauses=("AS-LEG-007",),
    replaces="reconstruct_session_state",
)
def _reconstruct_keeps_final_bare_user(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    state = reconstruct_session_state(record, messages)
    rows = by_sequence([m for m in messages if m.role != "system"])
    if not rows or rows[-1].role != "user":
        return state
    last = rows[-1]
    return state.model_copy(
        update={
            "messages": (*state.messages, ResumeMessage(role="user", text=last.text)),
            "message_sequences": (*state.message_sequences, last.sequence_number),
            "turn_boundary_sequences": (*state.turn_boundary_sequences, last.sequence_number),
        }
    )


@break_of(
    name="resume-legacy-text-dropped",
    summary="legacy bare-user text is left out of the resumed context",
    clauses=("AS-LEG-003", "AS-LEG-008"),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _legacy_text_dropped(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = state.completed_turn_spans
    covered = {i for span in spans for i in range(span.start, span.end)}
    if len(covered) == len(state.messages):
        return state
    keep = [i for i in range(len(state.messages)) if i in covered]
    index = {old: new for new, old in enumerate(keep)}
    return state.model_copy(
        update={
            "messages": tuple(state.messages[i] for i in keep),
            "message_sequences": tuple(state.message_sequences[i] for i in keep)
            if state.message_sequences
            else (),
            "completed_turn_spans": tuple(
                TurnSpan(start=index[s.start], end=index[s.end - 1] + 1) for s in spans
            ),
        }
    )


@break_of(
    name="resume-legacy-slot-merged",
    summary="legacy text gets no boundary slot of its own",
    clauses=("AS-LEG-005",),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _legacy_slot_merged(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    slots = state.turn_boundary_sequences
    if len(slots) <= len(state.completed_turn_spans):
        return state
    spans = len(state.completed_turn_spans)
    return state.model_copy(update={"turn_boundary_sequences": slots[-spans:] if spans else ()})


@break_of(
    name="reconstruct-empty-terminal-is-absent",
    summary="an explicit empty terminal is read as no terminal: its user becomes a legacy bare user",
    clauses=("AS-LEG-010",),
    replaces="reconstruct_session_state",
)
def _without_empty_terminals(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    kept = [m for m in messages if not (is_terminal_row(m.role, m.content) and not m.text)]
    return reconstruct_session_state(record, kept)


@break_of(
    name="reconstruct-rollback-at-write-time",
    summary="a bare user followed by another user row is dropped, as if rolled back when written",
    clauses=("AS-LEG-012",),
    replaces="reconstruct_session_state",
)
def _rollback_at_write_time(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """A user row followed directly by another user row is dropped, as if it had been rolled back
    when it was written (trailing then) rather than judged at read time."""
    ordered = sorted(messages, key=lambda m: m.sequence_number)
    dropped = {
        a.sequence_number for a, b in itertools.pairwise(ordered) if a.role == "user" and b.role == "user"
    }
    return reconstruct_session_state(record, [m for m in ordered if m.sequence_number not in dropped])


@break_of(
    name="export-legacy-text-is-a-node",
    summary="legacy bare-user text with no later terminal becomes an agent node",
    clauses=("AS-LEG-009",),
    replaces="export_workflow",
)
def _export_legacy_text_is_a_node(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    """Bare users after the last terminal (but the final row) each become an agent node."""
    document, _text = export_workflow(record, messages)
    ordered = sorted((m for m in messages if m.role != "system"), key=lambda m: m.sequence_number)
    last_terminal = max((i for i, m in enumerate(ordered) if is_terminal_row(m.role, m.content)), default=-1)
    legacy = [m for m in ordered[last_terminal + 1 : -1] if m.role == "user"]
    if not legacy:
        return document, _text
    workflow = document["workflow"]
    nodes = workflow["nodes"]
    extra = [
        {"type": "agent", "agent_ref": record.agent_slug, "prompt_template": neutralise_interpolation(m.text)}
        for m in legacy
    ]
    agents = [{**node, "id": f"turn-{index}"} for index, node in enumerate([*nodes[1:-1], *extra], 1)]
    chain = [nodes[0], *agents, nodes[-1]]
    workflow["nodes"] = chain
    workflow["edges"] = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(chain)]
    return document, dump_yaml(document)
