"""Fuzzing: every public parser and every engine function behind a ``pure.*`` operation raises only the
package's documented errors (``RelaviumError`` and its branches), whatever it is given.

One target per parser and per ``pure.*`` operation the kit serves (see
``conformance/_reference/impl.py``): ``pure.reconstructSessionState``, ``pure.workflowId``,
``pure.exportWorkflow``, ``pure.storedRowColumns``, ``pure.readStoredRow``.  Each runs
:data:`fuzzkit.FUZZ` (2,000 examples, no per-example deadline, no timed assertion).  The inputs are
hostile values and near-valid wire data (see ``fuzzkit.py``), so most examples reach past the first check.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.reference.fuzzkit import (
    FUZZ,
    HOSTILE,
    ROUND_TRIP,
    SQLITE_VALUES,
    mutated,
    only_documented,
    quick_record,
    quick_transcript,
    quick_turn,
    ready_part,
    timestamps,
)

from relavium_reference import (
    AgentSnapshot,
    InvalidInputError,
    SessionContext,
    parse_agent_session_record,
    parse_session_message,
    parse_strict,
    reconstruct_session_state,
    resume_state_problem,
)
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage, parse_content_part
from relavium_reference._model.records import parse_completed_turn
from relavium_reference._rules.history_rows import (
    StoreError,
    derive_columns,
    message_from_row,
    message_row,
    session_from_row,
    session_row,
)
from relavium_reference.export import parse_workflow, serialize_workflow, session_to_workflow, workflow_id

_FALLBACK_RECORD = parse_agent_session_record(
    {
        "id": "s-1",
        "agentSlug": "coder",
        "context": {"workingDir": "/w"},
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
    }
)


def _record(data: Any) -> AgentSessionRecord:
    try:
        return parse_agent_session_record(data)
    except InvalidInputError:
        return _FALLBACK_RECORD


def _messages(rows: list[Any]) -> list[SessionMessage]:
    kept = []
    for row in rows:
        try:
            kept.append(parse_session_message(row))
        except InvalidInputError:
            continue
    return kept


# -- parsers ---------------------------------------------------------------------------------------

#: An edit puts a bad value, or a timestamp of any form (the values that once broke the store).
_BAD_OR_TIME = st.sampled_from([None, 1, "", [], {}, {"type": []}, 2**63, -(10**14), b"\x00"]) | timestamps
_CONTEXT_OR_SNAPSHOT = quick_record().map(lambda record: record["context"]) | quick_record().filter(
    lambda record: "agentSnapshot" in record
).map(lambda record: record["agentSnapshot"])


@FUZZ
@given(mutated(quick_transcript(min_size=1, max_size=1).map(lambda rows: rows[0]), _BAD_OR_TIME) | HOSTILE)
def test_parse_session_message_raises_only_documented_errors(data: Any) -> None:
    only_documented(lambda: parse_session_message(data))


@FUZZ
@given(mutated(ready_part) | HOSTILE)
def test_parse_content_part_raises_only_documented_errors(data: Any) -> None:
    only_documented(lambda: parse_content_part(data))


@FUZZ
@given(mutated(quick_record(), _BAD_OR_TIME) | HOSTILE)
def test_parse_agent_session_record_raises_only_documented_errors(data: Any) -> None:
    only_documented(lambda: parse_agent_session_record(data))


@FUZZ
@given(mutated(quick_turn(), _BAD_OR_TIME) | HOSTILE)
def test_parse_completed_turn_raises_only_documented_errors(data: Any) -> None:
    only_documented(lambda: parse_completed_turn(data))


@FUZZ
@given(st.sampled_from([SessionContext, AgentSnapshot]), mutated(_CONTEXT_OR_SNAPSHOT) | HOSTILE)
def test_parse_strict_raises_only_documented_errors(model: Any, data: Any) -> None:
    only_documented(lambda: parse_strict(model, data))


_YAML_PIECES = st.sampled_from(
    [
        "schema_version: '1.0'\n",
        "workflow:\n  id: x\n  nodes:\n  - {id: a, type: input}\n  edges: []\n",
        "[",
        "]",
        "{",
        "}",
        "&a [*a]\n",
        "!!python/object:os.system\n",
        "- ",
        ": ",
        "? ",
        "\t",
        "\x00",
        "\ufeff",
        "2024-01-01\n",
        "!!binary aGk=\n",
        "!!set {a: null}\n",
        "{[1]: 2}\n",
        "metadata: {relaviumExport: {source: session, messages: [{content: 1}]}}\n",
    ]
)


@st.composite
def _yaml_texts(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(min_value=0, max_value=3))
    if kind == 0:
        return draw(st.text(max_size=60))
    if kind == 1:
        return "".join(draw(st.lists(_YAML_PIECES | st.text(max_size=4), max_size=12)))
    if kind == 2:
        depth = draw(st.integers(min_value=1, max_value=80))
        return "[" * depth + "]" * draw(st.integers(min_value=0, max_value=depth))
    return draw(HOSTILE)


@FUZZ
@given(_yaml_texts())
def test_parse_workflow_raises_only_documented_errors(text: Any) -> None:
    only_documented(lambda: parse_workflow(text))


@pytest.mark.parametrize("depth", [65, 493, 700])
def test_deep_nesting_is_refused_not_a_recursion_error(depth: int) -> None:
    # Outside the fuzz: the pure-Python YAML scanner is quadratic in flow depth (700 takes ~1 s).
    with pytest.raises(InvalidInputError, match="nested too deeply"):
        parse_workflow("[" * depth + "]" * depth)


# -- the engine behind each pure.* operation -------------------------------------------------------


@FUZZ
@given(st.none() | st.text(max_size=40) | HOSTILE, st.text(max_size=30) | HOSTILE)
def test_pure_workflow_id_raises_only_documented_errors(title: Any, session_id: Any) -> None:
    only_documented(lambda: workflow_id(title, session_id))


@FUZZ
@given(quick_record(), quick_transcript())
def test_pure_reconstruct_session_state_raises_only_documented_errors(record: Any, rows: list[Any]) -> None:
    state = only_documented(lambda: reconstruct_session_state(_record(record), _messages(rows)))
    if state is not None:
        assert resume_state_problem(state) is None  # what reconstruction builds is a sound state


@FUZZ
@given(quick_record(), quick_transcript(max_size=4))
def test_pure_export_workflow_raises_only_documented_errors(record: Any, rows: list[Any]) -> None:
    def export() -> str:
        return serialize_workflow(session_to_workflow(_record(record), _messages(rows)))

    only_documented(export)


@FUZZ
@given(
    quick_transcript(max_size=1),
    st.none() | st.sampled_from(["stop", "length", "content_filter", "tool_use"]) | st.text(max_size=5),
)
def test_pure_stored_row_columns_raises_only_documented_errors(data: list[Any], reason: Any) -> None:
    messages = _messages(data)
    if not messages:
        return
    message = messages[0]
    only_documented(lambda: derive_columns(message, reason))
    row = only_documented(lambda: message_row(message, reason))
    if row is not None:  # what the write side produces the read side accepts
        assert message_from_row(row).content == message.content


_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "sequence_number",
    "role",
    "content",
    "content_parts",
    "tool_calls",
    "tool_call_id",
    "name",
    "finish_reason",
    "model_id",
    "compaction_dropped_through_sequence",
    "created_at",
)


@st.composite
def _stored_message_rows(draw: st.DrawFn) -> dict[str, Any]:
    """A row the write side produced, then up to three columns overwritten with any SQLite value."""
    row: dict[str, Any] | None = None
    messages = _messages(draw(quick_transcript(max_size=1)))
    if messages:
        row = only_documented(lambda: message_row(messages[0]))
    if row is None:
        row = dict.fromkeys(_MESSAGE_COLUMNS)
    for column in draw(st.lists(st.sampled_from(_MESSAGE_COLUMNS), max_size=3)):
        row[column] = draw(SQLITE_VALUES | st.sampled_from(["1", "[1]", "[{}]", '[{"type":[]}]', "[" * 5000]))
    return row


@FUZZ
@given(_stored_message_rows())
def test_pure_read_stored_row_raises_only_store_errors(row: dict[str, Any]) -> None:
    with contextlib.suppress(StoreError):
        message_from_row(row)


_SESSION_COLUMNS = (
    "id",
    "agent_id",
    "agent_slug",
    "agent_snapshot",
    "title",
    "model_id",
    "working_dir",
    "git_ref",
    "fs_scope_tier",
    "status",
    "context_json",
    "total_input_tokens",
    "total_output_tokens",
    "total_cost_microcents",
    "exported_workflow_path",
    "deleted_at",
    "created_at",
    "updated_at",
)


@st.composite
def _stored_session_rows(draw: st.DrawFn) -> dict[str, Any]:
    row = only_documented(lambda: session_row(_record(draw(quick_record()))))
    if row is None:
        row = session_row(_FALLBACK_RECORD)
    for column in draw(st.lists(st.sampled_from(_SESSION_COLUMNS), max_size=3)):
        row[column] = draw(SQLITE_VALUES | st.sampled_from(["1", "{}", '{"workingDir": 1}', "{" * 5000]))
    return row


@ROUND_TRIP
@given(_stored_session_rows())
def test_session_row_reader_raises_only_store_errors(row: dict[str, Any]) -> None:
    with contextlib.suppress(StoreError):
        session_from_row(row)


@ROUND_TRIP
@given(quick_record())
def test_a_session_row_the_codec_writes_always_reads_back(data: Any) -> None:
    record = _record(data)
    row = only_documented(lambda: session_row(record))
    if row is not None:
        assert session_from_row(row).id == record.id


@ROUND_TRIP
@given(HOSTILE, HOSTILE | st.lists(HOSTILE, max_size=2))
def test_export_functions_refuse_wrong_typed_arguments_as_invalid_input(first: Any, second: Any) -> None:
    # a value that is not a record, a message sequence or a document is InvalidInputError, never an
    # AttributeError from inside the mapping
    only_documented(lambda: session_to_workflow(first, second))
    only_documented(lambda: session_to_workflow(_FALLBACK_RECORD, second))
    only_documented(lambda: serialize_workflow(first))
