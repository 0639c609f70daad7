"""Breaks of export to a workflow (clauses AS-EXP-*).  Most replace the engine's export with one that
edits the exported document in one place; a few change the workflow id.
"""

from __future__ import annotations

import copy
import io
import itertools
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from relavium_conformance._reference.impl import export_workflow
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import (
    Answers,
    Document,
    answer_rows,
    by_sequence,
    strip_calls,
)
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_reference._model.messages import UNKNOWN_TOOL, AgentSessionRecord, SessionMessage
from relavium_reference._model.records import is_terminal_row
from relavium_reference._rules.export_mapping import completed_export_turns, neutralise_interpolation
from relavium_reference._rules.workflow_id import workflow_id
from relavium_reference._rules.workflow_yaml import _yaml, dump_yaml

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in sorted(value, reverse=True)}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


@break_of(
    name="export-yaml-keys-unsorted",
    summary="the exported YAML writes mapping keys in reverse order instead of sorted",
    clauses=("AS-EXP-046",),
    replaces="export_workflow",
)
def _export_unsorted_keys(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    stream = io.StringIO()
    _yaml().dump(_reversed_keys(document), stream)  # the engine's writer keeps the order it is given
    return document, stream.getvalue()


def _interrupted_users(messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    """The user rows of exchanges that have tool structure but never reached a terminal row."""
    found: list[SessionMessage] = []
    open_user: SessionMessage | None = None
    structured = False
    for row in by_sequence([m for m in messages if m.role != "system"]):
        if row.role == "user":
            if open_user is not None and structured:
                found.append(open_user)
            open_user, structured = row, False
        elif is_terminal_row(row.role, row.content):
            open_user, structured = None, False
        elif open_user is not None:
            structured = True
    if open_user is not None and structured:
        found.append(open_user)
    return found


@break_of(
    name="export-interrupted-turn-is-a-node",
    summary="an exchange interrupted after its tool rows becomes an agent node",
    clauses=("AS-EXP-024",),
    replaces="export_workflow",
)
def _export_interrupted_as_node(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    workflow = document["workflow"]
    nodes = workflow["nodes"]
    extra = [
        {
            "type": "agent",
            "agent_ref": record.agent_slug,
            "prompt_template": neutralise_interpolation(row.text),
        }
        for row in _interrupted_users(messages)
    ]
    agents = [{**node, "id": f"turn-{index}"} for index, node in enumerate([*nodes[1:-1], *extra], 1)]
    chain = [nodes[0], *agents, nodes[-1]]
    workflow["nodes"] = chain
    workflow["edges"] = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(chain)]
    return document, dump_yaml(document)


@break_of(
    name="export-grants-unknown-tool",
    summary="a turn that called the unknown_tool marker is granted unknown_tool",
    clauses=("AS-EXP-028",),
    replaces="export_workflow",
)
def _export_grants_unknown_tool(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    ordered = by_sequence(messages)
    agents = document["workflow"]["nodes"][1:-1]
    for node, turn in zip(agents, completed_export_turns(ordered), strict=True):
        inside = [m for m in ordered if turn.user_sequence < m.sequence_number < turn.terminal_sequence]
        if any(call.name == UNKNOWN_TOOL for row in inside for call in row.tool_calls):
            node["tools"] = [*node.get("tools", []), UNKNOWN_TOOL]
    return document, dump_yaml(document)


@break_of(
    name="export-drops-empty-final-turn",
    summary="a turn whose terminal text is empty is not exported as a node",
    clauses=("AS-EXP-003",),
    replaces="export_workflow",
)
def _export_drops_empty_finals(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    kept = [m for m in messages if not (is_terminal_row(m.role, m.content) and not m.text)]
    return export_workflow(record, kept)


@break_of(
    name="export-leaks-tool-arguments",
    summary="tool-call parts in the export metadata carry the call's arguments",
    clauses=("AS-EXP-006", "AS-EXP-048"),
    replaces="export_workflow",
)
def _export_leaks_tool_arguments(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    for message in document["workflow"]["metadata"]["relaviumExport"]["messages"]:
        for part in message["content"]:
            if part.get("type") == "tool_call":
                part["arguments"] = {"path": "notes/private.txt"}
    return document, dump_yaml(document)


@break_of(
    name="export-normalises-next-line",
    summary="the export writer turns U+0085 into a line feed, so the text reads back differently",
    clauses=("AS-EXP-005",),
)
class _ExportNormalisesNextLine(WireVariant):
    """The export's writer turns U+0085 into a plain line feed (a line-break normalisation)."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        result = await super().operation(method, params)
        path = result.get("workflowPath") if isinstance(result, dict) else None
        if method == "session.export" and isinstance(path, str) and os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text.replace("\\N", "\\n").replace("\u0085", "\n"))
        return result


Export = Callable[[AgentSessionRecord, Sequence[SessionMessage]], tuple[Document, str]]


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


@break_of(
    name="export-turns-out-of-order",
    summary="agent nodes hold the turns' prompts in reverse order",
    clauses=("AS-EXP-002",),
    replaces="export_workflow",
    through=_edited,
)
def _reverse_prompts(document: Document) -> None:
    agents = _agents(document)
    prompts = [node["prompt_template"] for node in agents][::-1]
    for node, prompt in zip(agents, prompts, strict=True):
        node["prompt_template"] = prompt


@break_of(
    name="export-wrong-agent-ref",
    summary="an agent node's agent_ref is not the session's agentSlug",
    clauses=("AS-EXP-025",),
    replaces="export_workflow",
    through=_edited,
)
def _wrong_agent_ref(document: Document) -> None:
    for node in _agents(document):
        node["agent_ref"] = str(node["agent_ref"]) + "-copy"


@break_of(
    name="export-prompt-not-neutralised",
    summary="prompt_template keeps the interpolation openers",
    clauses=("AS-EXP-026",),
    replaces="export_workflow",
    through=_edited,
)
def _prompt_not_neutralised(document: Document) -> None:
    for node in _agents(document):
        node["prompt_template"] = str(node["prompt_template"]).replace("{ {", "{{")


@break_of(
    name="export-tools-not-deduplicated",
    summary="an agent node's tools name a tool twice",
    clauses=("AS-EXP-027",),
    replaces="export_workflow",
    through=_edited,
)
def _tools_repeated(document: Document) -> None:
    for node in _agents(document):
        if node.get("tools"):
            node["tools"] = [*node["tools"], node["tools"][0]]


@break_of(
    name="export-node-carries-model",
    summary="agent nodes carry the session's model",
    clauses=("AS-EXP-029",),
    replaces="export_workflow",
    through=_edited,
)
def _node_carries_model(document: Document) -> None:
    for node in _agents(document):
        node["model"] = "gpt-from-the-session"


@break_of(
    name="export-edges-skip-a-turn",
    summary="the edges skip the last turn",
    clauses=("AS-EXP-030",),
    replaces="export_workflow",
    through=_edited,
)
def _edge_skips_last_turn(document: Document) -> None:
    edges = document["workflow"]["edges"]
    if len(edges) >= 2:
        document["workflow"]["edges"] = [*edges[:-2], {"from": edges[-2]["from"], "to": edges[-1]["to"]}]


@break_of(
    name="export-turn-ids-from-zero",
    summary="agent node ids count from turn-0",
    clauses=("AS-EXP-020",),
    replaces="export_workflow",
    through=_edited,
)
def _turn_ids_from_zero(document: Document) -> None:
    agents = _agents(document)
    renamed = {node["id"]: f"turn-{index}" for index, node in enumerate(agents)}
    for node in agents:
        node["id"] = renamed[node["id"]]
    for edge in document["workflow"]["edges"]:
        edge["from"] = renamed.get(edge["from"], edge["from"])
        edge["to"] = renamed.get(edge["to"], edge["to"])


@break_of(
    name="export-metadata-drops-tool-rows",
    summary="the metadata transcript leaves out the tool rows",
    clauses=("AS-EXP-004",),
    replaces="export_workflow",
    through=_edited,
)
def _metadata_drops_tool_rows(document: Document) -> None:
    export = document["workflow"]["metadata"]["relaviumExport"]
    export["messages"] = [m for m in export["messages"] if m.get("role") not in ("tool",)]


@break_of(
    name="export-metadata-without-session-id",
    summary="the metadata does not name the session id",
    clauses=("AS-EXP-039", "AS-EXP-045"),
    replaces="export_workflow",
    through=_edited,
)
def _metadata_without_session_id(document: Document) -> None:
    document["workflow"]["metadata"]["relaviumExport"].pop("sessionId", None)


@break_of(
    name="export-snapshot-left-out",
    summary="the frozen agent snapshot is not exported as the agents entry",
    clauses=("AS-EXP-041",),
    replaces="export_workflow",
    through=_edited,
)
def _snapshot_not_exported(document: Document) -> None:
    document["workflow"].pop("agents", None)


@break_of(
    name="export-snapshot-fallbacks-dropped",
    summary="the exported snapshot loses its fallback entries",
    clauses=("AS-EXP-042",),
    replaces="export_workflow",
    through=_edited,
)
def _snapshot_fallbacks_dropped(document: Document) -> None:
    for agent in document["workflow"].get("agents", []):
        if agent.get("fallback_chain"):
            agent["fallback_chain"] = []


@break_of(
    name="export-invents-registry-agent",
    summary="without a snapshot an agents entry is invented",
    clauses=("AS-EXP-044",),
    replaces="export_workflow",
    through=_edited,
)
def _registry_agent_invented(document: Document) -> None:
    workflow = document["workflow"]
    if "agents" not in workflow:
        slug = workflow["metadata"]["relaviumExport"]["agentSlug"]
        workflow["agents"] = [{"id": slug, "model": "default", "provider": "openai"}]


@break_of(
    name="export-snapshot-duplicated",
    summary="the frozen agent appears twice in agents",
    clauses=("AS-EXP-043",),
    replaces="export_workflow",
    through=_edited,
)
def _snapshot_duplicated(document: Document) -> None:
    workflow = document["workflow"]
    if workflow.get("agents"):
        workflow["agents"] = [*workflow["agents"], copy.deepcopy(workflow["agents"][0])]


@break_of(
    name="export-parallel-edge",
    summary="an edge from input to the last turn (parallel structure)",
    clauses=("AS-EXP-008", "AS-EXP-031"),
    replaces="export_workflow",
    through=_edited,
)
def _parallel_edge(document: Document) -> None:
    agents = _agents(document)
    if agents:
        document["workflow"]["edges"].append({"from": "input", "to": agents[-1]["id"]})


_EXPORT_CALLS = itertools.count(1)


@break_of(
    name="export-nondeterministic",
    summary="each export numbers itself: the same input gives another document",
    clauses=("AS-EXP-019",),
    replaces="export_workflow",
)
def _nondeterministic(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    document = copy.deepcopy(document)
    document["workflow"]["metadata"]["relaviumExport"]["exportNumber"] = next(_EXPORT_CALLS)
    return document, dump_yaml(document)


@break_of(
    name="export-lookalikes-unquoted",
    summary="strings a YAML 1.1 reader takes for booleans (yes, no, on, off) are written plain",
    clauses=("AS-EXP-047",),
    replaces="export_workflow",
)
def _lookalikes_plain(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> tuple[Document, str]:
    document, text = export_workflow(record, messages)
    for word in ("yes", "no", "on", "off"):  # still strings to YAML 1.2, booleans to a YAML 1.1 reader
        text = text.replace(f": '{word}'\n", f": {word}\n")
    return document, text


def _is_legacy_user(rows: Sequence[SessionMessage], index: int) -> bool:
    later = [m for m in rows[index + 1 :] if m.role != "system"]
    return rows[index].role == "user" and bool(later) and later[0].role == "user"


@break_of(
    name="export-legacy-users-dropped",
    summary="legacy bare-user text is neither prefixed nor kept",
    clauses=("AS-EXP-022", "AS-LEG-004"),
    replaces="export_workflow",
)
def _legacy_users_dropped(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    rows = sorted(messages, key=lambda m: m.sequence_number)
    kept = [m for i, m in enumerate(rows) if not _is_legacy_user(rows, i)]
    return export_workflow(record, kept)


@break_of(
    name="export-tool-rows-make-nodes",
    summary="each structural tool row becomes an agent node",
    clauses=("AS-EXP-023",),
    replaces="export_workflow",
    through=_edited,
)
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


def _id_with(edit: Callable[[str | None, str, str], str]) -> Callable[[str | None, str], str]:
    def answer(title: str | None, session_id: str) -> str:
        return edit(title, session_id, workflow_id(title, session_id))

    return answer


@break_of(
    name="workflow-id-underscores",
    summary="the workflow id separates words with underscores",
    clauses=("AS-EXP-032",),
    replaces="workflow_id",
    through=_id_with,
)
def _underscores(_title: str | None, _sid: str, value: str) -> str:
    return value.replace("-", "_")


@break_of(
    name="workflow-id-no-decomposition",
    summary="the title slug skips NFKD: accented letters become separators",
    clauses=("AS-EXP-033",),
    replaces="workflow_id",
    through=_id_with,
)
def _no_decomposition(title: str | None, session_id: str, _value: str) -> str:
    plain = None if title is None else "".join(c if c.isascii() else " " for c in title)
    return workflow_id(plain, session_id)


@break_of(
    name="workflow-id-no-length-cap",
    summary="a long title slug runs past 128 characters",
    clauses=("AS-EXP-034",),
    replaces="workflow_id",
    through=_id_with,
)
def _no_length_cap(title: str | None, _sid: str, value: str) -> str:
    return value + "-more" if len(value) >= 120 and title else value


@break_of(
    name="workflow-id-fallback-always-hex",
    summary="a kebab-case session id is hex-encoded anyway",
    clauses=("AS-EXP-036",),
    replaces="workflow_id",
    through=_id_with,
)
def _fallback_always_hex(title: str | None, session_id: str, value: str) -> str:
    if value == f"exported-session-{session_id}":
        return "exported-session-id-" + "".join(f"{ord(c):04x}" for c in session_id[:24])
    return value


@break_of(
    name="workflow-id-hex-of-12-units",
    summary="the hex fallback encodes only the first 12 UTF-16 units",
    clauses=("AS-EXP-037",),
    replaces="workflow_id",
    through=_id_with,
)
def _hex_of_fewer_units(title: str | None, session_id: str, value: str) -> str:
    prefix = "exported-session-id-"
    if value.startswith(prefix):
        return value[: len(prefix) + 4 * 12]
    return value


@break_of(
    name="export-preamble-ends-the-turn",
    summary="the export ends a turn at the first assistant text, a tool-call row's preamble included",
    clauses=("AS-EXP-021",),
    replaces="export_workflow",
)
def _export_preamble_ends_the_turn(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    read = [
        m if m.role != "assistant" or not m.text or not m.tool_calls else strip_calls(m) for m in messages
    ]
    turns, _ = export_workflow(record, read)
    workflow = document["workflow"]
    workflow["nodes"], workflow["edges"] = turns["workflow"]["nodes"], turns["workflow"]["edges"]
    return document, dump_yaml(document)


@break_of(
    name="export-text-forgets-markers",
    summary="the export's YAML text loses the boundary markers' compaction field from the metadata",
    clauses=("AS-EXP-005",),
    replaces="export_workflow",
)
def _export_text_forgets_markers(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    """The document is right, but its YAML text leaves out the metadata messages' compaction field:
    the metadata does not survive a parse of the text."""
    document, _text = export_workflow(record, messages)
    written = copy.deepcopy(document)
    for message in written["workflow"]["metadata"]["relaviumExport"]["messages"]:
        message.pop("compaction", None)
    return document, dump_yaml(written)


_SECRET = re.compile(r"sk-[A-Za-z0-9-]+")


@break_of(
    name="export-redacts-keys",
    summary="the session's export redacts key-like text in prompts",
    clauses=("AS-EXP-007",),
)
class _ExportRedactsKeys(Answers):
    """The export redacts what looks like an API key in the user's text."""

    def answer(self, handle: str, method: str, answer: Any) -> Any:
        if method == "host.loadSession":
            for row in answer_rows(answer):
                for part in row.get("content") or ():
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        part["text"] = _SECRET.sub("[redacted]", part["text"])
        return answer
