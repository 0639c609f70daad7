"""The workflow YAML: a deterministic emitter, a strict parser, and the committed JSON Schema."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from relavium_conformance import schemas_dir
from relavium_reference import InvalidInputError
from relavium_reference._model.workflow import document_to_data, parse_workflow_data, render_schema
from relavium_reference._rules.workflow_yaml import (
    MAX_DEPTH,
    dump_yaml,
    ensure_json_data,
    load_yaml,
    ruamel_dump,
)
from relavium_reference._rules.yaml_fast import fast_dump
from relavium_reference.export import parse_workflow, serialize_workflow

# Strings a plain scalar would turn into something else, or that YAML treats specially.
NASTY = [
    "1.0", "1", "-1", "0x1f", "0o17", "1e3", "1_000", ".inf", "-.inf", ".nan", "true", "False", "yes",
    "no", "on", "off", "null", "Null", "~", "", " ", " lead", "trail ", "2024-01-01", "2024-01-01T00:00:00Z",
    "12:30", "{{ inputs.x }}", "{", "}", "[", "]", "- item", "? key", ": v", "a: b", "a #b", "#c", "&a", "*a",
    "!tag", "|", ">", "%", "@", "`", "'", '"', "---", "...", "<<", "a\nb", "a\n", "\n", "\n\n", " \n ",
    "\t", "a\tb", "\r", "a\r\nb", "\x85", "\u2028", "\u2029", "\ufeff", "\x00", "\x07", "\x7f", "\u00e9",
    "\U0001f600", "\ud7ff", "\ue000", "\uffff", "x" * 300, "word " * 60,
    "0000-0-0T'", "2024-01-01 it's", "2024-1-1T'a'b: c", "2024-01-01T00:00:00Z o'clock #x",
]  # fmt: skip
STRING = st.sampled_from(NASTY) | st.text() | st.lists(st.sampled_from(NASTY), max_size=3).map("".join)
SCALAR = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | STRING
JSON_DATA = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRING, inner, max_size=4),
    max_leaves=25,
)


@pytest.mark.clauses("AS-EXP-046")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_DATA)
def test_dump_then_load_gives_the_same_data_and_the_same_bytes(data: Any) -> None:
    text = dump_yaml(data)
    assert load_yaml(text) == data
    assert dump_yaml(load_yaml(text)) == text
    assert text.endswith("\n")


@pytest.mark.parametrize("value", NASTY)
def test_nasty_string_survives_as_a_string(value: str) -> None:
    text = dump_yaml({"k": value})
    assert load_yaml(text) == {"k": value}


@pytest.mark.clauses("AS-EXP-046")
def test_keys_are_sorted_by_utf16_code_units_at_every_level() -> None:
    data = {"b": {"z": 1, "\U0001f600": 2, "\uffff": 3, "A": 4}, "a": [{"w2": 1, "w1": 2}]}
    text = dump_yaml(data)
    assert text.index("a:") < text.index("b:")
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+FFFF (code-point order would swap them).
    assert text.index("A:") < text.index("z:") < text.index("\U0001f600") < text.index("uFFFF")
    assert text.index("w1:") < text.index("w2:")


@pytest.mark.clauses("AS-EXP-046")
def test_sequences_keep_their_order() -> None:
    assert load_yaml(dump_yaml({"k": [3, 1, 2]})) == {"k": [3, 1, 2]}
    assert dump_yaml({"k": ["b", "a"]}) == "k:\n  - b\n  - a\n"


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "y", "N", "1:20", "0o17", "012", ".inf", "~"])
def test_yaml_1_1_lookalikes_are_quoted(value: str) -> None:
    text = dump_yaml({"k": value, value: 1})
    assert f"k: {value}\n" not in text
    assert f"\n{value}: 1" not in text
    assert not text.startswith(f"{value}: 1")
    assert load_yaml(text) == {"k": value, value: 1}


def test_long_lines_are_not_folded_and_unicode_is_kept() -> None:
    long_text = "word " * 100 + "end \u00e9\u4e16"
    text = dump_yaml({"k": long_text})
    assert text == f"k: {long_text}\n"


def test_type_lookalikes_are_quoted() -> None:
    text = dump_yaml({"a": "1.0", "b": "true", "c": "null", "d": "2024-01-01", "e": " x", "f": "{{ y }}"})
    assert text == "a: '1.0'\nb: 'true'\nc: 'null'\nd: '2024-01-01'\ne: ' x'\nf: '{{ y }}'\n"


def test_line_break_characters_are_escaped_in_double_quotes() -> None:
    text = dump_yaml({"k": "a\x85b\u2028c\rd"})
    assert text.startswith('k: "')
    assert load_yaml(text) == {"k": "a\x85b\u2028c\rd"}


@pytest.mark.parametrize("text", ["-_", "._", "k: -_", "- ._"])
def test_a_scalar_ruamel_cannot_convert_is_malformed_yaml(text: str) -> None:
    # ruamel resolves these plain scalars as floats and then raises a bare ValueError converting them
    with pytest.raises(InvalidInputError, match="not well-formed"):
        load_yaml(text)


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), {1: "x"}, {"k": {1, 2}}, b"bytes", ("tuple-in-a-mapping", object())],
)
def test_dump_refuses_what_is_not_json_data(value: Any) -> None:
    with pytest.raises(InvalidInputError):
        dump_yaml({"k": value})


@pytest.mark.parametrize(
    "text",
    [
        "k: [unclosed\n",
        "k: 1\nk: 2\n",
        "k: 2024-01-01\n",
        "k: !!binary aGVsbG8=\n",
        "k: !!set {a: null}\n",
        "1: one\n",
        "k: .nan\n",
        "k: !custom x\n",
        "a: &x [1]\nb: *x\n",
        "a: 1\n---\nb: 2\n",
    ],
)
def test_load_refuses_malformed_or_non_json_yaml(text: str) -> None:
    with pytest.raises(InvalidInputError):
        load_yaml(text)


# --- the strict parser -----------------------------------------------------------------------------

MESSAGE = {
    "id": "m0",
    "sessionId": "s-1",
    "sequenceNumber": 0,
    "role": "user",
    "content": [{"type": "text", "text": "hi"}],
    "timestamp": "2026-01-01T00:00:00Z",
}
DOCUMENT: dict[str, Any] = {
    "schema_version": "1.0",
    "workflow": {
        "id": "w",
        "name": "W",
        "metadata": {
            "owner": None,
            "tags": ["a", 1, 2.5, True],
            "relaviumExport": {
                "source": "session",
                "sessionId": "s-1",
                "agentSlug": "helper",
                "createdAt": "2026-01-01T00:00:00Z",
                "updatedAt": "2026-01-01T00:00:00Z",
                "messages": [MESSAGE],
            },
        },
        "agents": [
            {
                "id": "helper",
                "model": "m",
                "provider": "openai",
                "system_prompt": "p",
                "tools": [],
                "fallback_chain": [{"model": "n", "provider": "openai", "max_attempts": 2}],
            }
        ],
        "nodes": [
            {"id": "input", "type": "input", "label": "Start"},
            {"id": "turn-1", "type": "agent", "agent_ref": "helper", "prompt_template": "hi", "tools": []},
            {"id": "output", "type": "output"},
        ],
        "edges": [{"from": "input", "to": "turn-1"}, {"from": "turn-1", "to": "output"}],
    },
}
RAW_CALL = {"type": "tool_call", "id": "c", "name": "x", "args": {}}


def _with(path: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    *parents, last = path.split(".")
    target: Any = document
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is _DELETE:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return document


_DELETE = object()


def test_a_valid_document_parses_and_keeps_every_field() -> None:
    document = parse_workflow(dump_yaml(DOCUMENT))
    assert document_to_data(document) == DOCUMENT
    assert serialize_workflow(document) == dump_yaml(DOCUMENT)


@pytest.mark.clauses("AS-EXP-048")
@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("schema_version", "2.0"),
        ("schema_version", 1.0),
        ("surprise", 1),
        ("workflow.surprise", 1),
        ("workflow.id", "Not_Kebab"),
        ("workflow.id", _DELETE),
        ("workflow.nodes", []),
        ("workflow.nodes.1.type", "loop"),
        ("workflow.nodes.1.model", "gpt"),
        ("workflow.nodes.1.agent_ref", "Bad Ref"),
        ("workflow.nodes.1.id", "input"),
        ("workflow.edges.0.condition", "x"),
        ("workflow.edges.0.from", _DELETE),
        ("workflow.agents", []),
        ("workflow.agents.0.temperature", 0.5),
        ("workflow.metadata.relaviumExport.source", "run"),
        ("workflow.metadata.relaviumExport.extra", 1),
        ("workflow.metadata.relaviumExport.messages.0.content.0", RAW_CALL),
        ("workflow.metadata.relaviumExport.messages.0.sessionId", "other"),
        ("workflow.metadata.relaviumExport.messages", [MESSAGE, MESSAGE]),
        ("workflow.agents.0.fallback_chain.0.model", "m"),
    ],
)  # fmt: skip
def test_parser_refuses(path: str, value: Any) -> None:
    with pytest.raises(InvalidInputError):
        parse_workflow(dump_yaml(_with(path, value)))


def test_only_the_camel_case_key_is_the_reserved_export_key() -> None:
    document = _with("workflow.metadata.relavium_export", {"free": "form"})
    parsed = parse_workflow_data(document)
    assert document_to_data(parsed) == document


def test_duplicate_agent_ids_are_refused() -> None:
    document = copy.deepcopy(DOCUMENT)
    document["workflow"]["agents"].append(document["workflow"]["agents"][0])
    with pytest.raises(InvalidInputError):
        parse_workflow_data(document)


def test_repeated_pair_between_fallback_entries_is_refused_at_the_right_place() -> None:
    document = copy.deepcopy(DOCUMENT)
    chain = document["workflow"]["agents"][0]["fallback_chain"]
    chain.append({"model": "n", "provider": "openai", "max_attempts": 1})
    with pytest.raises(InvalidInputError) as caught:
        parse_workflow_data(document)
    assert caught.value.location == "workflow.agents.0.fallback_chain.1"


def test_same_model_under_another_provider_is_not_a_repeat() -> None:
    document = _with("workflow.agents.0.fallback_chain.0.provider", "anthropic")
    document["workflow"]["agents"][0]["fallback_chain"][0]["model"] = "m"
    assert parse_workflow_data(document).workflow.agents is not None


def test_agent_ref_need_not_resolve_and_metadata_may_be_absent() -> None:
    document = _with("workflow.agents", _DELETE)
    del document["workflow"]["metadata"]
    document["workflow"]["nodes"][1]["agent_ref"] = "workspace-agent"
    assert parse_workflow_data(document).workflow.metadata is None


def test_parser_error_never_echoes_the_value() -> None:
    secret = "sk-this-must-not-appear"
    with pytest.raises(InvalidInputError) as caught:
        parse_workflow(dump_yaml(_with("workflow.id", secret + " X")))
    assert secret not in str(caught.value)


# --- generated documents with nasty strings -------------------------------------------------------

PROMPT = st.sampled_from([s for s in NASTY if s]) | st.text(min_size=1)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    prompts = draw(st.lists(st.none() | PROMPT, max_size=4))
    ids = ["input", *(f"turn-{i}" for i in range(1, len(prompts) + 1)), "output"]
    agent_nodes: list[dict[str, Any]] = []
    for node_id, prompt in zip(ids[1:-1], prompts, strict=True):
        node: dict[str, Any] = {"id": node_id, "type": "agent", "agent_ref": "helper"}
        if prompt is not None:
            node["prompt_template"] = prompt
        tools = draw(st.lists(PROMPT, max_size=3))
        if tools:
            node["tools"] = tools
        agent_nodes.append(node)
    workflow: dict[str, Any] = {
        "id": "w",
        "nodes": [{"id": "input", "type": "input"}, *agent_nodes, {"id": "output", "type": "output"}],
        "edges": [{"from": a, "to": b} for a, b in itertools.pairwise(ids)],
    }
    if draw(st.booleans()):
        workflow["name"] = draw(PROMPT)
    extras = draw(st.dictionaries(STRING.filter(lambda k: k != "relaviumExport"), JSON_DATA, max_size=3))
    texts = draw(st.lists(st.sampled_from(NASTY) | st.text(), max_size=3))
    messages = [
        {**MESSAGE, "id": f"m{i}", "sequenceNumber": i, "content": [{"type": "text", "text": text}]}
        for i, text in enumerate(texts)
    ]
    export = {**DOCUMENT["workflow"]["metadata"]["relaviumExport"], "messages": messages}
    if draw(st.booleans()):
        export["title"] = draw(PROMPT)
    workflow["metadata"] = {**extras, "relaviumExport": export}
    return {"schema_version": "1.0", "workflow": workflow}


@pytest.mark.clauses("AS-EXP-005", "AS-EXP-046")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_documents_round_trip_byte_for_byte(data: dict[str, Any]) -> None:
    document = parse_workflow_data(data)
    text = serialize_workflow(document)
    reparsed = parse_workflow(text)
    assert document_to_data(reparsed) == data
    assert serialize_workflow(reparsed) == text


# --- the committed JSON Schema ---------------------------------------------------------------------


def _committed_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((schemas_dir() / "workflow.schema.json").read_text(encoding="utf-8"))
    return schema


def test_committed_schema_matches_the_models() -> None:
    committed = (schemas_dir() / "workflow.schema.json").read_text(encoding="utf-8")
    assert committed == render_schema(), "regenerate: python -m relavium_reference._model.workflow"


def test_schema_is_valid_2020_12_and_agrees_with_the_parser_on_samples() -> None:
    schema = _committed_schema()
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    validator.validate(DOCUMENT)
    for path, value in [
        ("workflow.surprise", 1),
        ("workflow.nodes.1.type", "loop"),
        ("workflow.metadata.relaviumExport.messages.0.content.0.surprise", 1),
        ("workflow.edges.0.label", "x"),
    ]:
        assert not validator.is_valid(_with(path, value)), path


# The fast emitter must write exactly what the ruamel.yaml emitter writes, whenever it writes at all.
FAST_SCALAR = st.none() | st.booleans() | st.integers() | STRING
FAST_DATA = st.dictionaries(
    STRING,
    st.recursive(
        FAST_SCALAR,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRING, inner, max_size=4),
        max_leaves=25,
    ),
    min_size=1,
    max_size=4,
)


@pytest.mark.clauses("AS-EXP-046")
@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(FAST_DATA)
def test_the_fast_emitter_writes_the_ruamel_bytes_or_nothing(data: dict[str, Any]) -> None:
    fast = fast_dump(data)
    if fast is not None:
        assert fast == ruamel_dump(data)


@pytest.mark.parametrize("value", NASTY)
def test_the_fast_emitter_matches_ruamel_on_each_nasty_string(value: str) -> None:
    for data in ({"k": value}, {"k": [value, {"x": value}]}, {value or "v": [[value], []]}):
        fast = fast_dump(data)
        if fast is not None:
            assert fast == ruamel_dump(data)


def test_the_fast_emitter_takes_ordinary_export_text() -> None:
    """The fast path is not vacuous: ordinary chat text, ids and timestamps go through it."""
    data = {"t": "It's 3 o'clock: time", "u": "2026-01-01T00:00:00.000Z", "v": ["plain words", 7, None]}
    fast = fast_dump(data)
    assert fast is not None
    assert fast == ruamel_dump(data)


_HEX = st.text("0123456789abcdef", min_size=1, max_size=1) | st.sampled_from(["0", "1", "e", "f", "7"])
UUID_LIKE = st.tuples(*(st.lists(_HEX, min_size=n, max_size=n).map("".join) for n in (8, 4, 4, 4, 12))).map(
    "-".join
)
_DIGITS = st.text("0123456789", min_size=1, max_size=1)
STAMP_LIKE = st.lists(_DIGITS, min_size=17, max_size=17).map(
    lambda d: "{}{}{}{}-{}{}-{}{}T{}{}:{}{}:{}{}.{}{}{}Z".format(*d)
)


@settings(max_examples=400)
@given(UUID_LIKE | STAMP_LIKE | st.uuids().map(str))
def test_the_uuid_and_timestamp_shortcuts_write_the_ruamel_bytes(value: str) -> None:
    """Ids and timestamps skip the general checks (``yaml_fast._UUID``/``_STAMP``): same text as ruamel."""
    for data in ({"k": value}, {"k": [value, {"x": value}]}):
        assert fast_dump(data) == ruamel_dump(data)


ANY_DATA = st.recursive(
    FAST_SCALAR | st.floats() | st.binary(max_size=3) | st.just(()),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(STRING | st.integers(), inner, max_size=3)
    ),
    max_leaves=20,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(STRING, ANY_DATA, min_size=1, max_size=3))
def test_a_fast_answer_means_json_data(data: dict[str, Any]) -> None:
    """dump_yaml skips ensure_json_data when the fast emitter answers: it must answer only for JSON data."""
    if fast_dump(data) is not None:
        ensure_json_data(data)


def test_the_fast_emitter_leaves_too_deep_data_to_the_check() -> None:
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH):
        deep = {"k": deep}
    assert fast_dump(deep) is not None  # exactly MAX_DEPTH levels: accepted by both
    ensure_json_data(deep)
    assert fast_dump({"k": deep}) is None
    with pytest.raises(InvalidInputError, match="too deeply"):
        dump_yaml({"k": deep})
    for odd in ({1: "int key"}, {"k": (1,)}, {"k": 1.5}, {"k": b"x"}, {"k": True, "j": [{2: None}]}):
        assert fast_dump(odd) is None
