"""The fast export path gives what the export path before it gave: the same document, data and bytes.

The oracle is that earlier path, kept whole in ``export_oracle.py``; ruamel.yaml stays the definition
of the text (test_workflow_yaml.py).  Strings are adversarial (YAML indicators, type lookalikes,
numbers and booleans as strings, ``-_`` and ``._``, controls, line breaks, unicode, long text) and
transcripts mix every reading the export knows (complete turns with tool rounds, legacy bare users,
interrupted exchanges, boundary markers).  No test here measures a time.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference.export_oracle import (
    old_completed_export_turns,
    old_document_to_data,
    old_dump_yaml,
    old_export,
    old_fast_dump,
    old_session_to_workflow,
)

from relavium_conformance import fixtures_dir
from relavium_reference import InvalidInputError
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules import yaml_fast
from relavium_reference._rules.export_mapping import completed_export_turns
from relavium_reference._rules.workflow_yaml import dump_yaml, load_yaml, ruamel_dump
from relavium_reference._rules.yaml_fast import fast_dump
from relavium_reference.export import parse_workflow, serialize_workflow, session_to_workflow

NASTY = [
    "", " ", "  ", " lead", "trail ", "-", "-_", "._", "_", ".", "..", "...", "---", "- x", "-x", "--x",
    "?", "? x", "?x", ":", ": x", "x:", "x: y", "x:y", "a #b", "a#b", "#", "#c", "{{ inputs.x }}", "{{",
    "}}", "{", "}", "[", "]", "[]", "{}", ",", "&a", "*a", "!tag", "!", "|", ">", "%", "@", "`", "'", '"',
    "''", "it's", 'say "hi"', "back\\slash", "'quoted'", "<<", "=", "~", "null", "Null", "NULL", "None",
    "true", "True", "TRUE", "false", "False", "yes", "Yes", "no", "No", "NO", "on", "On", "off", "OFF",
    "y", "Y", "n", "N", "o", "0", "1", "-1", "+1", "01", "007", "0x1f", "0o17", "0b101", "1_000", "1e3",
    "1.0", "-1.5", ".5", "5.", "1.5e-3", ".inf", "-.inf", "+.Inf", ".nan", ".NaN", "1:30", "12:30:45",
    "190:20:30.15", "2024-01-01", "2024-1-1", "2024-01-01T00:00:00Z", "2024-01-01 10:00",
    "2026-01-01T00:00:00.000Z", "00000000-0000-0000-0000-000000000000", "turn-1", "t", "tr", "f",
    "a\nb", "a\n", "\n", "\n\n", " \n ", "\t", "a\tb", "\r", "a\r\nb", "\x85", "\u2028", "\u2029",
    "\ufeff", "a\ufeffb", "\x00", "\x07", "\x1b[0m", "\x7f", "\x9f", "\xa0", "a\xa0", "\u00e9",
    "\u200b", "\u202e", "\U0001f600", "\ud7ff", "\ue000", "\uf8ff", "\ufffd", "\uffff",
    "x" * 300, "word " * 60, "w" * 5000,
]  # fmt: skip
STRING = (
    st.sampled_from(NASTY)
    | st.text()
    | st.lists(st.sampled_from(NASTY), min_size=1, max_size=4).map("".join)
    | st.lists(st.sampled_from(NASTY) | st.text(max_size=4), min_size=1, max_size=3).map(" ".join)
)
SCALAR = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | STRING
DATA = st.dictionaries(
    STRING,
    st.recursive(
        SCALAR,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRING, inner, max_size=4),
        max_leaves=30,
    ),
    min_size=1,
    max_size=5,
)


# -- the emitter ---------------------------------------------------------------------------------------


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(DATA)
def test_the_emitter_answers_as_the_earlier_one_did(data: dict[str, Any]) -> None:
    assert fast_dump(data) == old_fast_dump(data)
    assert dump_yaml(data) == old_dump_yaml(data)


@pytest.mark.parametrize("value", NASTY)
def test_each_nasty_string_is_written_as_before_and_as_ruamel_writes_it(value: str) -> None:
    for data in (
        {"k": value},
        {"k": [value, {"x": value, "y": [value]}]},
        {value or "v": [[value], [], {}], "z": {"a": value}},
    ):
        assert fast_dump(data) == old_fast_dump(data)
        text = dump_yaml(data)
        assert text == old_dump_yaml(data) == ruamel_dump(data)
        assert load_yaml(text) == data


def test_a_string_the_unicode_database_calls_printable_is_one_the_emitter_prints_as_it_is() -> None:
    """``_string`` asks ``str.isprintable`` before the pattern: it must never accept more than it."""
    printable = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isprintable()]
    assert printable, unicodedata.unidata_version
    outside = [c for c in printable if not yaml_fast._PRINTABLE_LINE.fullmatch(c)]
    assert outside == []


@pytest.mark.parametrize("first", sorted(yaml_fast._SUSPECT))
def test_the_one_pattern_per_first_character_decides_as_the_separate_checks(first: str) -> None:
    """Each alternation matches exactly when one of the checks it joins matches."""
    implicit = [pattern for _is_str, pattern in yaml_fast._IMPLICIT.get(first, ())]
    checks = [yaml_fast._NOT_PLAIN_START, yaml_fast.YAML11_LOOKALIKE, *implicit]
    tails = ["", " ", "_", "0", "1", ".", ":", "-", "e3", "x", "rue", "ull", "es", "n", "ff", "inf", "nan"]
    for text in [first + a + b for a, b in itertools.product(tails, repeat=2)]:
        expected = any(check.match(text) for check in checks)
        assert bool(yaml_fast._SUSPECT[first](text)) == expected, repr(text)


# -- the whole export ----------------------------------------------------------------------------------

TOOL = st.sampled_from(["read_file", "grep", "run_command", "mcp:gh:search", "unknown_tool", "a.b-c_d"])


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[AgentSessionRecord, list[SessionMessage]]:
    """A session and rows mixing every reading (complete, bare, interrupted, marker)."""
    rows: list[dict[str, Any]] = []
    calls = itertools.count()

    def tool_round(tools: list[str]) -> None:
        ids = [f"call-{next(calls)}" for _ in tools]
        if tools:
            rows.append(
                {
                    "role": "assistant",
                    "content": [
                        *([{"type": "text", "text": draw(STRING)}] if draw(st.booleans()) else []),
                        *({"type": "tool_call", "id": i, "name": n} for i, n in zip(ids, tools, strict=True)),
                    ],
                    "modelId": draw(st.sampled_from(["m-1", "gpt-4o", "1.0", "true"])),
                }
            )
        for call_id, name in zip(ids, tools, strict=True):
            failed = draw(st.booleans())
            result = {"type": "tool_result", "toolCallId": call_id, "name": name, "isError": failed}
            rows.append({"role": "tool", "content": [result]})

    for kind in draw(st.lists(st.sampled_from(["complete", "bare", "interrupted", "marker"]), max_size=10)):
        if kind == "marker":
            marker = {"droppedThroughSequence": len(rows)}
            rows.append({"role": "system", "content": [], "compaction": marker})
            continue
        texts = draw(st.lists(STRING, min_size=1, max_size=2))
        rows.append({"role": "user", "content": [{"type": "text", "text": text} for text in texts]})
        if kind != "bare":
            tool_round(draw(st.lists(TOOL, min_size=kind == "interrupted", max_size=3)))
        if kind == "complete":
            rows.append({"role": "assistant", "content": [{"type": "text", "text": draw(STRING)}]})
    session = draw(st.sampled_from(["sess-gen", "00000000-0000-0000-0000-000000000000", "1.0", "x: y"]))
    record: dict[str, Any] = {
        "id": session,
        "agentSlug": draw(st.sampled_from(["helper", "a-1", "1"])),
        "context": {"workingDir": "/w"},
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-02T10:00:00.123+02:00"])),
    }
    title = draw(st.none() | STRING.filter(bool))
    if title is not None:
        record["title"] = title
    stamps = st.sampled_from(["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00Z", "2026-03-04T05:06:07.890Z"])
    gaps = draw(st.lists(st.sampled_from([1, 1, 2, 7]), min_size=len(rows), max_size=len(rows)))
    messages = [
        parse_session_message(
            {
                "id": draw(st.sampled_from([f"m{index}", f"{index:08x}-0000-0000-0000-000000000000"])),
                "sessionId": session,
                "sequenceNumber": sequence,
                "timestamp": draw(stamps),
                **row,
            }
        )
        for index, (row, sequence) in enumerate(zip(rows, itertools.accumulate(gaps), strict=True))
    ]
    order = draw(st.permutations(range(len(messages))))
    return parse_agent_session_record(record), [messages[i] for i in order]


def _same_export(record: AgentSessionRecord, messages: list[SessionMessage]) -> str:
    document = session_to_workflow(record, messages)
    old = old_session_to_workflow(record, messages)
    assert document == old
    assert document.model_dump(exclude_unset=True) == old.model_dump(exclude_unset=True)
    data = document_to_data(document)
    assert data == old_document_to_data(old)
    assert json.dumps(data) == json.dumps(old_document_to_data(old))  # the same keys in the same order
    text = dump_yaml(data)
    assert text == old_export(record, messages) == serialize_workflow(document)
    return text


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts())
def test_an_export_gives_the_document_data_and_bytes_the_earlier_path_gave(
    session: tuple[AgentSessionRecord, list[SessionMessage]],
) -> None:
    record, messages = session
    text = _same_export(record, messages)
    ordered = sorted(messages, key=lambda m: m.sequence_number)
    assert [dataclasses.astuple(turn) for turn in completed_export_turns(ordered)] == [
        dataclasses.astuple(turn) for turn in old_completed_export_turns(ordered)
    ]
    reparsed = parse_workflow(text)
    assert reparsed == session_to_workflow(record, messages)
    assert serialize_workflow(reparsed) == text


@settings(max_examples=100)
@given(transcripts(), st.sampled_from(["other-session", "duplicate"]))
def test_a_refused_transcript_is_refused_as_before(
    session: tuple[AgentSessionRecord, list[SessionMessage]], fault: str
) -> None:
    record, messages = session
    extra = {"id": "x", "role": "user", "content": [], "timestamp": "2026-01-01T00:00:00Z"}
    if fault == "other-session":
        extra |= {"sessionId": "someone-else", "sequenceNumber": 10**6}
    else:
        if not messages:
            return
        extra |= {"sessionId": record.id, "sequenceNumber": messages[0].sequence_number}
    broken = [*messages, parse_session_message(extra)]
    with pytest.raises(InvalidInputError) as new:
        session_to_workflow(record, broken)
    with pytest.raises(InvalidInputError) as old:
        old_session_to_workflow(record, broken)
    assert (str(new.value), new.value.location) == (str(old.value), old.value.location)


def test_messages_of_a_subclass_go_through_validation_as_given() -> None:
    class Tagged(SessionMessage):
        pass

    record = parse_agent_session_record(
        {
            "id": "s",
            "agentSlug": "helper",
            "context": {"workingDir": "/w"},
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
        }
    )
    rows = [("user", "hi"), ("assistant", "hello")]
    messages = [
        Tagged.model_validate(
            {
                "id": f"m{i}",
                "sessionId": "s",
                "sequenceNumber": i,
                "role": role,
                "content": [{"type": "text", "text": text}],
                "timestamp": "2026-01-01T00:00:00Z",
            }
        )
        for i, (role, text) in enumerate(rows)
    ]
    _same_export(record, list(messages))
    export = session_to_workflow(record, messages).workflow.metadata
    assert export is not None
    assert export.relavium_export is not None
    assert all(type(message) is Tagged for message in export.relavium_export.messages)


def test_the_export_vectors_give_what_the_earlier_path_gave() -> None:
    from ruamel.yaml import YAML

    loader = YAML(typ="safe", pure=True)
    seen = 0
    for path in sorted((fixtures_dir() / "vectors" / "export").glob("*.yaml")):
        for vector in json.loads(json.dumps(loader.load(path.read_text(encoding="utf-8")))):
            record = parse_agent_session_record(vector["record"])
            messages = [parse_session_message(message) for message in vector["messages"]]
            if "expected_error" in vector:
                with pytest.raises(InvalidInputError):
                    session_to_workflow(record, messages)
                continue
            _same_export(record, messages)
            seen += 1
    assert seen >= 10


def test_a_long_ordinary_session_gives_the_same_bytes() -> None:
    """The benchmark's shape (store ids and timestamps, chat text with ``: `` and apostrophes), 2,000 rows."""
    record = parse_agent_session_record(
        {
            "id": "bench",
            "agentSlug": "bench-agent",
            "context": {"workingDir": "/w"},
            "title": "A long benchmark session",
            "createdAt": "2026-01-01T00:00:00.000Z",
            "updatedAt": "2026-01-01T00:00:00.000Z",
        }
    )
    messages = [
        parse_session_message(
            {
                "id": f"00000000-0000-0000-0000-{seq:012x}",
                "sessionId": "bench",
                "sequenceNumber": seq,
                "role": "user" if seq % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": f"Item {seq}: it's {{{{x}}}} #{seq} - what?"}],
                **({} if seq % 2 == 0 else {"modelId": "bench-model"}),
                "timestamp": f"2026-01-01T00:00:{seq % 60:02d}.{seq % 1000:03d}Z",
            }
        )
        for seq in range(2000)
    ]
    text = _same_export(record, messages)
    assert fast_dump(document_to_data(session_to_workflow(record, messages))) == text  # no fallback
