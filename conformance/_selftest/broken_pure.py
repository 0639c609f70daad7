"""Broken pure functions: the export mapping, the workflow id and the resume state, one rule each.

Each wraps the engine's own function and damages its answer in one place, so exactly the rule it names
is broken; the vector suites (and the transcripts that export or resume) must catch it.  They are the
pattern of ``broken.py``'s pure breaks, in bulk: every clause a vector checks gets a break of its own.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import REFERENCE_PURE, PureFunctions, export_workflow
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage
from relavium_reference._rules.resume import (
    ResumeMessage,
    SessionResumeState,
    TurnSpan,
    reconstruct_session_state,
)
from relavium_reference._rules.workflow_id import workflow_id
from relavium_reference._rules.workflow_yaml import dump_yaml

__all__ = ["PURE_BREAKS"]

Document = dict[str, Any]
Export = Callable[[AgentSessionRecord, Sequence[SessionMessage]], tuple[Document, str]]


def _pure(**functions: Any) -> PureFunctions:
    return replace(REFERENCE_PURE, **functions)


# --- the export mapping ------------------------------------------------------------------------------


def _edited(edit: Callable[[Document], None]) -> Export:
    """The engine's export with ``edit`` applied to the document (and the text written from it)."""

    def export(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> tuple[Document, str]:
        document, _text = export_workflow(record, messages)
        document = copy.deepcopy(document)
        edit(document)
        return document, dump_yaml(document)

    return export


def _agents(document: Document) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = document["workflow"]["nodes"]
    return [node for node in nodes if node.get("type") == "agent"]


def _reverse_prompts(document: Document) -> None:
    agents = _agents(document)
    prompts = [node["prompt_template"] for node in agents][::-1]
    for node, prompt in zip(agents, prompts, strict=True):
        node["prompt_template"] = prompt


def _wrong_agent_ref(document: Document) -> None:
    for node in _agents(document):
        node["agent_ref"] = str(node["agent_ref"]) + "-copy"


def _prompt_not_neutralised(document: Document) -> None:
    for node in _agents(document):
        node["prompt_template"] = str(node["prompt_template"]).replace("{ {", "{{")


def _tools_repeated(document: Document) -> None:
    for node in _agents(document):
        if node.get("tools"):
            node["tools"] = [*node["tools"], node["tools"][0]]


def _node_carries_model(document: Document) -> None:
    for node in _agents(document):
        node["model"] = "gpt-from-the-session"


def _edge_skips_last_turn(document: Document) -> None:
    edges = document["workflow"]["edges"]
    if len(edges) >= 2:
        document["workflow"]["edges"] = [*edges[:-2], {"from": edges[-2]["from"], "to": edges[-1]["to"]}]


def _turn_ids_from_zero(document: Document) -> None:
    agents = _agents(document)
    renamed = {node["id"]: f"turn-{index}" for index, node in enumerate(agents)}
    for node in agents:
        node["id"] = renamed[node["id"]]
    for edge in document["workflow"]["edges"]:
        edge["from"] = renamed.get(edge["from"], edge["from"])
        edge["to"] = renamed.get(edge["to"], edge["to"])


def _metadata_drops_tool_rows(document: Document) -> None:
    export = document["workflow"]["metadata"]["relaviumExport"]
    export["messages"] = [m for m in export["messages"] if m.get("role") not in ("tool",)]


def _metadata_without_session_id(document: Document) -> None:
    document["workflow"]["metadata"]["relaviumExport"].pop("sessionId", None)


def _snapshot_not_exported(document: Document) -> None:
    document["workflow"].pop("agents", None)


def _snapshot_fallbacks_dropped(document: Document) -> None:
    for agent in document["workflow"].get("agents", []):
        if agent.get("fallback_chain"):
            agent["fallback_chain"] = []


def _registry_agent_invented(document: Document) -> None:
    workflow = document["workflow"]
    if "agents" not in workflow:
        slug = workflow["metadata"]["relaviumExport"]["agentSlug"]
        workflow["agents"] = [{"id": slug, "model": "default", "provider": "openai"}]


def _snapshot_duplicated(document: Document) -> None:
    workflow = document["workflow"]
    if workflow.get("agents"):
        workflow["agents"] = [*workflow["agents"], copy.deepcopy(workflow["agents"][0])]


def _parallel_edge(document: Document) -> None:
    agents = _agents(document)
    if agents:
        document["workflow"]["edges"].append({"from": "input", "to": agents[-1]["id"]})


_EXPORT_CALLS = itertools.count(1)


def _nondeterministic(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    document = copy.deepcopy(document)
    document["workflow"]["metadata"]["relaviumExport"]["exportNumber"] = next(_EXPORT_CALLS)
    return document, dump_yaml(document)


def _lookalikes_plain(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> tuple[Document, str]:
    document, text = export_workflow(record, messages)
    for word in ("yes", "no", "on", "off"):  # still strings to YAML 1.2, booleans to a YAML 1.1 reader
        text = text.replace(f": '{word}'\n", f": {word}\n")
    return document, text


def _is_legacy_user(rows: Sequence[SessionMessage], index: int) -> bool:
    later = [m for m in rows[index + 1 :] if m.role != "system"]
    return rows[index].role == "user" and bool(later) and later[0].role == "user"


def _legacy_users_dropped(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    rows = sorted(messages, key=lambda m: m.sequence_number)
    kept = [m for i, m in enumerate(rows) if not _is_legacy_user(rows, i)]
    return export_workflow(record, kept)


def _structural_rows_make_nodes(document: Document) -> None:
    workflow = document["workflow"]
    tool_rows = [m for m in workflow["metadata"]["relaviumExport"]["messages"] if m.get("role") == "tool"]
    if not tool_rows:
        return
    nodes = workflow["nodes"]
    extra = [
        {
            "id": f"tool-{i}",
            "type": "agent",
            "agent_ref": workflow["metadata"]["relaviumExport"]["agentSlug"],
            "prompt_template": "tool result",
        }
        for i, _row in enumerate(tool_rows, 1)
    ]
    chain = [*nodes[:-1], *extra, nodes[-1]]
    workflow["nodes"] = chain
    workflow["edges"] = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(chain)]


# --- the workflow id ---------------------------------------------------------------------------------


def _id_with(edit: Callable[[str | None, str, str], str]) -> Callable[[str | None, str], str]:
    def answer(title: str | None, session_id: str) -> str:
        return edit(title, session_id, workflow_id(title, session_id))

    return answer


def _underscores(_title: str | None, _sid: str, value: str) -> str:
    return value.replace("-", "_")


def _no_decomposition(title: str | None, session_id: str, _value: str) -> str:
    plain = None if title is None else "".join(c if c.isascii() else " " for c in title)
    return workflow_id(plain, session_id)


def _no_length_cap(title: str | None, _sid: str, value: str) -> str:
    return value + "-more" if len(value) >= 120 and title else value


def _fallback_always_hex(title: str | None, session_id: str, value: str) -> str:
    if value == f"exported-session-{session_id}":
        return "exported-session-id-" + "".join(f"{ord(c):04x}" for c in session_id[:24])
    return value


def _hex_of_fewer_units(title: str | None, session_id: str, value: str) -> str:
    prefix = "exported-session-id-"
    if value.startswith(prefix):
        return value[: len(prefix) + 4 * 12]
    return value


# --- the resume state --------------------------------------------------------------------------------

Reconstruct = Callable[[AgentSessionRecord, Sequence[SessionMessage]], SessionResumeState]


def _state_with(
    edit: Callable[[SessionResumeState, Sequence[SessionMessage]], SessionResumeState],
) -> Reconstruct:
    def answer(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> SessionResumeState:
        return edit(reconstruct_session_state(record, messages), messages)

    return answer


def _spans_overlap(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = state.completed_turn_spans
    if not spans:
        return state
    return state.model_copy(update={"completed_turn_spans": (*spans, spans[-1])})


def _span_swallows_next(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = list(state.completed_turn_spans)
    if not spans:
        return state
    last = spans[-1]
    spans[-1] = TurnSpan(start=last.start, end=min(len(state.messages), last.end + 1))
    if spans[-1] == last and last.end - last.start == 2:
        spans[-1] = TurnSpan(start=last.start, end=last.start + 1)
    return state.model_copy(update={"completed_turn_spans": tuple(spans)})


def _tool_rows_kept(state: SessionResumeState, rows: Sequence[SessionMessage]) -> SessionResumeState:
    tool_rows = [m for m in rows if m.role == "tool"]
    if not tool_rows:
        return state
    extra = tuple(ResumeMessage(role="assistant", text=f"[tool row {m.sequence_number}]") for m in tool_rows)
    return state.model_copy(update={"messages": (*state.messages, *extra)})


def _legacy_text_in_a_span(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    spans = state.completed_turn_spans
    covered = {i for span in spans for i in range(span.start, span.end)}
    loose = [i for i in range(len(state.messages)) if i not in covered]
    if not loose or not spans:
        return state
    first = spans[0]
    widened = TurnSpan(start=min(first.start, loose[0]), end=first.end)
    return state.model_copy(update={"completed_turn_spans": (widened, *spans[1:])})


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


def _empty_final_not_counted(
    state: SessionResumeState, _rows: Sequence[SessionMessage]
) -> SessionResumeState:
    alone = [s for s in state.completed_turn_spans if s.end - s.start == 1]
    if not alone:
        return state
    return state.model_copy(update={"turn_count": max(0, state.turn_count - len(alone))})


def _legacy_slot_merged(state: SessionResumeState, _rows: Sequence[SessionMessage]) -> SessionResumeState:
    slots = state.turn_boundary_sequences
    if len(slots) <= len(state.completed_turn_spans):
        return state
    spans = len(state.completed_turn_spans)
    return state.model_copy(update={"turn_boundary_sequences": slots[-spans:] if spans else ()})


def _export(name: str, rule: str, clauses: tuple[str, ...], export: Export) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, pure=_pure(export_workflow=export))


def _wfid(
    name: str, rule: str, clauses: tuple[str, ...], edit: Callable[[str | None, str, str], str]
) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, pure=_pure(workflow_id=_id_with(edit)))


def _resume(
    name: str,
    rule: str,
    clauses: tuple[str, ...],
    edit: Callable[[SessionResumeState, Sequence[SessionMessage]], SessionResumeState],
) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, pure=_pure(reconstruct_session_state=_state_with(edit)))


PURE_BREAKS: tuple[BrokenImplementation, ...] = (
    _export(
        "export-turns-out-of-order",
        "agent nodes hold the turns' prompts in reverse order",
        ("AS-EXP-002",),
        _edited(_reverse_prompts),
    ),
    _export(
        "export-wrong-agent-ref",
        "an agent node's agent_ref is not the session's agentSlug",
        ("AS-EXP-025",),
        _edited(_wrong_agent_ref),
    ),
    _export(
        "export-prompt-not-neutralised",
        "prompt_template keeps the interpolation openers",
        ("AS-EXP-026",),
        _edited(_prompt_not_neutralised),
    ),
    _export(
        "export-tools-not-deduplicated",
        "an agent node's tools name a tool twice",
        ("AS-EXP-027",),
        _edited(_tools_repeated),
    ),
    _export(
        "export-node-carries-model",
        "agent nodes carry the session's model",
        ("AS-EXP-029",),
        _edited(_node_carries_model),
    ),
    _export(
        "export-edges-skip-a-turn",
        "the edges skip the last turn",
        ("AS-EXP-030",),
        _edited(_edge_skips_last_turn),
    ),
    _export(
        "export-turn-ids-from-zero",
        "agent node ids count from turn-0",
        ("AS-EXP-020",),
        _edited(_turn_ids_from_zero),
    ),
    _export(
        "export-metadata-drops-tool-rows",
        "the metadata transcript leaves out the tool rows",
        ("AS-EXP-004",),
        _edited(_metadata_drops_tool_rows),
    ),
    _export(
        "export-metadata-without-session-id",
        "the metadata does not name the session id",
        ("AS-EXP-039", "AS-EXP-045"),
        _edited(_metadata_without_session_id),
    ),
    _export(
        "export-snapshot-left-out",
        "the frozen agent snapshot is not exported as the agents entry",
        ("AS-EXP-041",),
        _edited(_snapshot_not_exported),
    ),
    _export(
        "export-snapshot-fallbacks-dropped",
        "the exported snapshot loses its fallback entries",
        ("AS-EXP-042",),
        _edited(_snapshot_fallbacks_dropped),
    ),
    _export(
        "export-snapshot-duplicated",
        "the frozen agent appears twice in agents",
        ("AS-EXP-043",),
        _edited(_snapshot_duplicated),
    ),
    _export(
        "export-invents-registry-agent",
        "without a snapshot an agents entry is invented",
        ("AS-EXP-044",),
        _edited(_registry_agent_invented),
    ),
    _export(
        "export-parallel-edge",
        "an edge from input to the last turn (parallel structure)",
        ("AS-EXP-008", "AS-EXP-031"),
        _edited(_parallel_edge),
    ),
    _export(
        "export-nondeterministic",
        "each export numbers itself: the same input gives another document",
        ("AS-EXP-019",),
        _nondeterministic,
    ),
    _export(
        "export-lookalikes-unquoted",
        "strings a YAML 1.1 reader takes for booleans (yes, no, on, off) are written plain",
        ("AS-EXP-047",),
        _lookalikes_plain,
    ),
    _export(
        "export-legacy-users-dropped",
        "legacy bare-user text is neither prefixed nor kept",
        ("AS-EXP-022", "AS-LEG-004"),
        _legacy_users_dropped,
    ),
    _export(
        "export-tool-rows-make-nodes",
        "each structural tool row becomes an agent node",
        ("AS-EXP-023",),
        _edited(_structural_rows_make_nodes),
    ),
    _wfid(
        "workflow-id-underscores",
        "the workflow id separates words with underscores",
        ("AS-EXP-032",),
        _underscores,
    ),
    _wfid(
        "workflow-id-no-decomposition",
        "the title slug skips NFKD: accented letters become separators",
        ("AS-EXP-033",),
        _no_decomposition,
    ),
    _wfid(
        "workflow-id-no-length-cap",
        "a long title slug runs past 128 characters",
        ("AS-EXP-034",),
        _no_length_cap,
    ),
    _wfid(
        "workflow-id-fallback-always-hex",
        "a kebab-case session id is hex-encoded anyway",
        ("AS-EXP-036",),
        _fallback_always_hex,
    ),
    _wfid(
        "workflow-id-hex-of-12-units",
        "the hex fallback encodes only the first 12 UTF-16 units",
        ("AS-EXP-037",),
        _hex_of_fewer_units,
    ),
    _resume(
        "resume-spans-overlap",
        "the last completed turn span is listed twice (spans overlap)",
        ("AS-PROJ-016",),
        _spans_overlap,
    ),
    _resume(
        "resume-span-bounds-wrong",
        "the last span's bounds are off by one",
        ("AS-PROJ-017",),
        _span_swallows_next,
    ),
    _resume(
        "resume-keeps-tool-rows",
        "structural tool rows reach the resume state as text",
        ("AS-PROJ-018", "AS-PROJ-015"),
        _tool_rows_kept,
    ),
    _resume(
        "resume-legacy-inside-a-span",
        "legacy bare-user text is folded into the first span",
        ("AS-PROJ-019",),
        _legacy_text_in_a_span,
    ),
    _resume(
        "resume-legacy-text-dropped",
        "legacy bare-user text is left out of the resumed context",
        ("AS-LEG-003", "AS-LEG-008"),
        _legacy_text_dropped,
    ),
    _resume(
        "resume-empty-final-not-counted",
        "an empty-final turn does not count as completed",
        ("AS-MSG-026",),
        _empty_final_not_counted,
    ),
    _resume(
        "resume-legacy-slot-merged",
        "legacy text gets no boundary slot of its own",
        ("AS-LEG-005",),
        _legacy_slot_merged,
    ),
)
