"""The export mapping: the language-neutral vectors, then properties over generated transcripts."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from relavium_conformance import fixtures_dir, schemas_dir
from relavium_reference import InvalidInputError
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules.export_mapping import neutralise_interpolation
from relavium_reference.export import parse_workflow, serialize_workflow, session_to_workflow

VECTOR_DIR = fixtures_dir() / "vectors" / "export"
VECTOR_KEYS = {
    "name",
    "why",
    "record",
    "messages",
    "expected_document",
    "expected_yaml",
    "expected_error",
    "expected_parse_error",
}


def _load_vectors() -> list[tuple[str, dict[str, Any]]]:
    loader = YAML(typ="safe", pure=True)
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(VECTOR_DIR.glob("*.yaml")):
        entries = loader.load(path.read_text(encoding="utf-8"))
        assert isinstance(entries, list), f"{path.name}: a vector file holds a list"
        # Anchors in the files share objects; a JSON round trip makes every vector independent data.
        found.extend((f"{path.stem}/{entry['name']}", json.loads(json.dumps(entry))) for entry in entries)
    return found


VECTORS = _load_vectors()
IDS = [name for name, _ in VECTORS]


def _workflow_validator() -> Draft202012Validator:
    schema = json.loads((schemas_dir() / "workflow.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def _inputs(vector: dict[str, Any]) -> tuple[AgentSessionRecord, list[SessionMessage]]:
    record = parse_agent_session_record(vector["record"])
    return record, [parse_session_message(message) for message in vector["messages"]]


def test_export_module_surface_is_closed() -> None:
    import relavium_reference.export as export

    expected = {
        "WorkflowDocument",
        "parse_workflow",
        "serialize_workflow",
        "session_to_workflow",
        "workflow_id",
    }
    assert set(export.__all__) == expected
    assert all(callable(getattr(export, name)) for name in expected)


def test_vectors_are_found_and_well_formed() -> None:
    assert len(VECTORS) >= 15, "the export vectors are missing"
    assert len(IDS) == len(set(IDS)), "vector names repeat"
    for name, vector in VECTORS:
        assert set(vector) <= VECTOR_KEYS, name
        assert ("expected_document" in vector) != ("expected_error" in vector), name
        assert {"record", "messages"} <= set(vector), name


@pytest.mark.clauses(
    "AS-EXP-002",
    "AS-EXP-003",
    "AS-EXP-004",
    "AS-EXP-020",
    "AS-EXP-021",
    "AS-EXP-022",
    "AS-EXP-023",
    "AS-EXP-024",
    "AS-EXP-025",
    "AS-EXP-026",
    "AS-EXP-027",
    "AS-EXP-028",
    "AS-EXP-029",
    "AS-EXP-030",
    "AS-EXP-039",
    "AS-EXP-041",
    "AS-EXP-042",
    "AS-EXP-043",
    "AS-EXP-044",
    "AS-EXP-045",
    "AS-EXP-046",
    "AS-LEG-004",
    "AS-LEG-007",
    "AS-LEG-009",
)
@pytest.mark.parametrize(("name", "vector"), VECTORS, ids=IDS)
def test_export_vector(name: str, vector: dict[str, Any]) -> None:
    record, messages = _inputs(vector)
    if "expected_error" in vector:
        assert vector["expected_error"] == "invalid_input"
        with pytest.raises(InvalidInputError):
            session_to_workflow(record, messages)
        return
    document = session_to_workflow(record, messages)
    assert document_to_data(document) == vector["expected_document"]
    text = serialize_workflow(document)
    if "expected_yaml" in vector:
        assert text == vector["expected_yaml"]
    if "expected_parse_error" in vector:
        assert vector["expected_parse_error"] == "invalid_input"
        with pytest.raises(InvalidInputError):
            parse_workflow(text)
        return
    reparsed = parse_workflow(text)
    assert document_to_data(reparsed) == vector["expected_document"]
    assert serialize_workflow(reparsed) == text


@pytest.mark.parametrize(("name", "vector"), VECTORS, ids=IDS)
def test_expected_documents_satisfy_the_committed_schema(name: str, vector: dict[str, Any]) -> None:
    if "expected_document" in vector:
        _workflow_validator().validate(vector["expected_document"])


def test_vectors_cover_the_required_readings() -> None:
    names = " ".join(IDS)
    for needed in ("empty-terminal", "legacy", "interrupted", "unknown-tool", "trailing", "boundary"):
        assert needed in names, needed
    assert any("expected_yaml" in vector for _, vector in VECTORS)


@pytest.mark.clauses("AS-EXP-007", "AS-EXP-026")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{", "{ {"),
        ("{{{", "{ { {"),
        ("{{ inputs.x }}", "{ { inputs.x }}"),
        ("{ {", "{ {"),
        ("a { b } c", "a { b } c"),
        ("}}{{", "}}{ {"),
        ("", ""),
    ],
)
def test_neutralise_interpolation_examples(text: str, expected: str) -> None:
    assert neutralise_interpolation(text) == expected


@pytest.mark.clauses("AS-EXP-007", "AS-EXP-026")
@given(st.text(alphabet="{} x\n", max_size=40))
def test_neutralised_text_has_no_opener_and_is_stable(text: str) -> None:
    once = neutralise_interpolation(text)
    assert "{{" not in once
    assert neutralise_interpolation(once) == once
    assert once.replace("{ ", "{") == text.replace("{ ", "{")  # only spaces after "{" were added


# --- properties over generated transcripts -------------------------------------------------------
#
# A transcript is generated from segments whose export reading is known by construction:
#   complete(text, tools, final)  user row, optional tool round, terminal row: one node;
#   bare(text)                    a user row alone: a legacy prefix (or rolled back when last);
#   interrupted(text, tools)      user row and a tool round, no terminal: no node, no prefix;
#   marker()                      a system boundary row: ignored by the reading.

TOOL = st.sampled_from(["read_file", "grep", "run_command", "mcp:gh:search", "unknown_tool"])
TEXT = st.text(alphabet="ab {}\n\u00e9", max_size=8)


@dataclass(frozen=True)
class Segment:
    kind: str
    text: str = ""
    tools: tuple[str, ...] = ()
    final: str = ""


SEGMENT = st.one_of(
    st.builds(
        Segment, kind=st.just("complete"), text=TEXT, tools=st.lists(TOOL, max_size=4).map(tuple), final=TEXT
    ),
    st.builds(Segment, kind=st.just("bare"), text=TEXT),
    st.builds(
        Segment,
        kind=st.just("interrupted"),
        text=TEXT,
        tools=st.lists(TOOL, min_size=1, max_size=3).map(tuple),
    ),
    st.builds(Segment, kind=st.just("marker")),
)


def _rows(segments: list[Segment]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    calls = 0

    def add(role: str, content: list[dict[str, Any]], **extra: Any) -> None:
        rows.append({"role": role, "content": content, **extra})

    def tool_round(tools: tuple[str, ...]) -> None:
        nonlocal calls
        if not tools:
            return
        ids = [f"call-{calls + offset}" for offset in range(len(tools))]
        calls += len(tools)
        add("assistant", [{"type": "tool_call", "id": i, "name": n} for i, n in zip(ids, tools, strict=True)])
        for call_id, name in zip(ids, tools, strict=True):
            add("tool", [{"type": "tool_result", "toolCallId": call_id, "name": name, "isError": False}])

    for segment in segments:
        if segment.kind == "marker":
            add("system", [], compaction={"droppedThroughSequence": max(len(rows) - 1, 0)})
            continue
        add("user", [{"type": "text", "text": segment.text}])
        tool_round(segment.tools)
        if segment.kind == "complete":
            add("assistant", [{"type": "text", "text": segment.final}])
    return rows


def _session(
    segments: list[Segment], title: str | None = "Generated"
) -> tuple[AgentSessionRecord, list[SessionMessage]]:
    record_data: dict[str, Any] = {
        "id": "sess-gen",
        "agentSlug": "helper",
        "context": {"workingDir": "/w"},
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
    }
    if title is not None:
        record_data["title"] = title
    messages = [
        parse_session_message(
            {
                "id": f"m{i}",
                "sessionId": "sess-gen",
                "sequenceNumber": i,
                "timestamp": "2026-01-01T00:00:00Z",
                **row,
            }
        )
        for i, row in enumerate(_rows(segments))
    ]
    return parse_agent_session_record(record_data), messages


def _expected_nodes(segments: list[Segment]) -> list[tuple[str, tuple[str, ...]]]:
    nodes: list[tuple[str, tuple[str, ...]]] = []
    prefix: list[str] = []
    for index, segment in enumerate(segments):
        if segment.kind == "complete":
            prompt = "\n\n".join(t for t in [*prefix, segment.text] if t)
            tools = tuple(dict.fromkeys(t for t in segment.tools if t != "unknown_tool"))
            nodes.append((neutralise_interpolation(prompt), tools))
            prefix = []
        elif segment.kind == "bare":
            following = [s for s in segments[index + 1 :] if s.kind != "marker"]
            if following:  # a bare user is a legacy prefix only when another user row follows it
                prefix.append(segment.text)
    return nodes


@pytest.mark.clauses(
    "AS-EXP-002",
    "AS-EXP-008",
    "AS-EXP-020",
    "AS-EXP-022",
    "AS-EXP-024",
    "AS-EXP-028",
    "AS-EXP-030",
    "AS-EXP-031",
)
@settings(max_examples=200, deadline=None)
@given(st.lists(SEGMENT, max_size=8))
def test_generated_transcripts_export_one_node_per_completed_turn(segments: list[Segment]) -> None:
    record, messages = _session(segments)
    spec = session_to_workflow(record, messages).workflow
    agents = spec.nodes[1:-1]
    assert [(n.prompt_template or "", n.tools or ()) for n in agents] == _expected_nodes(segments)  # type: ignore[union-attr]
    assert [n.id for n in agents] == [f"turn-{i}" for i in range(1, len(agents) + 1)]
    chain = [n.id for n in spec.nodes]
    assert [(e.from_, e.to) for e in spec.edges] == list(itertools.pairwise(chain))
    export = spec.metadata.relavium_export if spec.metadata else None
    assert export is not None
    assert list(export.messages) == messages


@pytest.mark.clauses("AS-EXP-019")
@settings(max_examples=100, deadline=None)
@given(st.lists(SEGMENT, max_size=8), st.randoms(use_true_random=False))
def test_export_is_deterministic_and_ignores_input_order(segments: list[Segment], rnd: random.Random) -> None:
    record, messages = _session(segments)
    shuffled = list(messages)
    rnd.shuffle(shuffled)
    first = serialize_workflow(session_to_workflow(record, messages))
    assert serialize_workflow(session_to_workflow(record, messages)) == first
    assert serialize_workflow(session_to_workflow(record, shuffled)) == first


@pytest.mark.clauses("AS-EXP-005", "AS-EXP-046")
@settings(max_examples=100, deadline=None)
@given(st.lists(SEGMENT, max_size=6), st.none() | st.text(max_size=20).filter(bool))
def test_exported_text_round_trips_byte_for_byte(segments: list[Segment], title: str | None) -> None:
    record, messages = _session(segments, title)
    document = session_to_workflow(record, messages)
    text = serialize_workflow(document)
    reparsed = parse_workflow(text)
    assert reparsed == document
    assert serialize_workflow(reparsed) == text
    _workflow_validator().validate(document_to_data(document))
