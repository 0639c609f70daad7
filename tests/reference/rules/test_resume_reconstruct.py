"""reconstructSessionState: the language-neutral vectors, its properties, and the resume-state checks."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from relavium_conformance._data import fixtures_dir, schemas_dir
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._rules.resume import (
    ResumeMessage,
    SessionResumeState,
    TurnSpan,
    dropped_through_for_kept,
    reconstruct_session_state,
    resume_state_problem,
)

VECTOR_DIR = fixtures_dir() / "vectors" / "reconstruct"


def _vector_files() -> list[Path]:
    return sorted(VECTOR_DIR.glob("*.yaml"))


def _load(path: Path) -> dict[str, Any]:
    loaded = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_reconstruct_vectors_are_found() -> None:
    assert len(_vector_files()) >= 10, f"expected the reconstruct vectors under {VECTOR_DIR}"


@pytest.mark.parametrize("path", _vector_files(), ids=lambda p: p.stem)
def test_reconstruct_vector(path: Path) -> None:
    vector = _load(path)
    assert set(vector) == {"id", "title", "clauses", "kitDefined", "record", "messages", "expected"} | (
        {"notes"} & set(vector)
    )
    record = parse_agent_session_record(vector["record"])
    messages = [parse_session_message(m) for m in vector["messages"]]
    state = reconstruct_session_state(record, messages)
    assert state.to_wire() == vector["expected"]
    # Row order does not matter; the result is a sound resume state.
    assert reconstruct_session_state(record, list(reversed(messages))) == state
    assert resume_state_problem(state) is None


@pytest.mark.parametrize("path", _vector_files(), ids=lambda p: p.stem)
def test_reconstruct_vector_inputs_match_the_committed_schemas(path: Path) -> None:
    vector = _load(path)
    schemas = {
        name: Draft202012Validator(json.loads((schemas_dir() / name).read_text(encoding="utf-8")))
        for name in ("session-message.schema.json", "agent-session-record.schema.json")
    }
    schemas["agent-session-record.schema.json"].validate(vector["record"])
    for message in vector["messages"]:
        schemas["session-message.schema.json"].validate(message)


def test_reconstruct_vectors_cover_every_named_rule() -> None:
    stems = {path.stem for path in _vector_files()}
    assert {
        "empty-final-only",
        "explicit-empty-terminal-between-turns",
        "tool-rows-with-preamble",
        "interrupted-exchange",
        "legacy-bare-user-followed-by-user",
        "final-bare-user-rolls-back",
        "marker-dropped-through-zero",
        "later-marker-wins",
        "trim-marker-keeps-earlier-preamble",
    } <= stems


# -- small builders ------------------------------------------------------------------------------

SID = "sess-1"


def _record(**totals: int) -> AgentSessionRecord:
    return parse_agent_session_record(
        {
            "id": SID,
            "agentSlug": "coder",
            "context": {"workingDir": "/w"},
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
            **totals,
        }
    )


def _row(seq: int, role: str, content: list[dict[str, Any]], **extra: Any) -> SessionMessage:
    return parse_session_message(
        {
            "id": f"m{seq}",
            "sessionId": extra.pop("session_id", SID),
            "sequenceNumber": seq,
            "role": role,
            "content": content,
            "timestamp": "2026-01-01T00:00:00Z",
            **extra,
        }
    )


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def test_costs_come_from_the_record() -> None:
    state = reconstruct_session_state(
        _record(totalCostMicrocents=77, totalInputTokens=5, totalOutputTokens=6), []
    )
    assert (
        state.cumulative_cost_microcents,
        state.cumulative_input_tokens,
        state.cumulative_output_tokens,
    ) == (
        77,
        5,
        6,
    )


def test_messages_of_another_session_are_refused() -> None:
    rows = [_row(0, "user", _text("hi"), session_id="other")]
    with pytest.raises(InvalidInputError, match="belongs to another session"):
        reconstruct_session_state(_record(), rows)


def test_duplicate_sequence_numbers_are_refused() -> None:
    rows = [_row(0, "user", _text("a")), _row(0, "assistant", _text("b"))]
    with pytest.raises(InvalidInputError, match="share a sequence number"):
        reconstruct_session_state(_record(), rows)


def test_media_and_reasoning_do_not_reach_the_text_only_state() -> None:
    handle = "media://sha256-" + "a" * 64
    rows = [
        _row(
            0,
            "user",
            [
                *_text("look"),
                {"type": "media", "mimeType": "image/png", "source": {"kind": "handle", "ref": handle}},
            ],
        ),
        _row(
            1, "assistant", [{"type": "reasoning", "text": "thinking"}, *_text("a cat"), *_text("on a mat")]
        ),
    ]
    state = reconstruct_session_state(_record(), rows)
    assert state.messages == (
        ResumeMessage(role="user", text="look"),
        ResumeMessage(role="assistant", text="a cat\n\non a mat"),
    )


def test_assistant_row_without_text_is_never_a_terminal() -> None:
    rows = [
        _row(0, "user", _text("q")),
        _row(1, "assistant", [{"type": "reasoning", "text": "hmm"}]),
    ]
    state = reconstruct_session_state(_record(), rows)
    assert state.messages == ()
    assert state.turn_count == 0


def test_system_rows_without_a_boundary_are_ignored() -> None:
    rows = [_row(0, "system", _text("note")), _row(1, "user", _text("q")), _row(2, "assistant", _text("a"))]
    state = reconstruct_session_state(_record(), rows)
    assert state.context_preamble is None
    assert state.completed_turn_spans == (TurnSpan(start=0, end=2),)


# -- boundary seeds ------------------------------------------------------------------------------


def test_dropped_through_for_kept_maps_slots_to_their_last_row() -> None:
    state = SessionResumeState(
        messages=(), completed_turn_spans=(), turn_count=0, cumulative_cost_microcents=0,
        turn_boundary_sequences=(0, 4, 7),
    )  # fmt: skip
    assert dropped_through_for_kept(state, 3) is None
    assert dropped_through_for_kept(state, 5) is None
    assert dropped_through_for_kept(state, 2) == 0
    assert dropped_through_for_kept(state, 1) == 4
    assert dropped_through_for_kept(state, 0) == 7
    with pytest.raises(InvalidInputError):
        dropped_through_for_kept(state, -1)


def test_an_empty_final_slot_boundary_covers_its_terminal_row() -> None:
    rows = [
        _row(0, "user", _text("q1")),
        _row(1, "assistant", _text("")),
        _row(2, "user", _text("q2")),
        _row(3, "assistant", _text("a2")),
    ]
    state = reconstruct_session_state(_record(), rows)
    through = dropped_through_for_kept(state, 1)
    assert through == 1  # the empty terminal row, not the user row the messages show
    marker = _row(4, "system", [], compaction={"droppedThroughSequence": through})
    after = reconstruct_session_state(_record(), [*rows, marker])
    assert after.messages == (
        ResumeMessage(role="user", text="q2"),
        ResumeMessage(role="assistant", text="a2"),
    )
    assert after.turn_count == 2


# -- resume_state_problem ------------------------------------------------------------------------


def _state(
    messages: list[tuple[str, str]], spans: list[tuple[int, int]], seqs: tuple[int, ...] = ()
) -> SessionResumeState:
    return SessionResumeState(
        messages=tuple(ResumeMessage(role=r, text=t) for r, t in messages),  # type: ignore[arg-type]
        completed_turn_spans=tuple(TurnSpan(start=a, end=b) for a, b in spans),
        turn_count=len(spans),
        cumulative_cost_microcents=0,
        message_sequences=seqs,
    )


@pytest.mark.parametrize(
    ("messages", "spans", "seqs", "problem"),
    [
        ([("user", "a"), ("assistant", "b")], [(0, 3)], (), "out of bounds"),
        ([("user", "a"), ("assistant", "b")], [(1, 1)], (), "out of bounds"),
        ([("user", "a"), ("user", "b")], [(1, 2), (0, 1)], (), "overlap"),
        ([("user", "a"), ("assistant", "b")], [(0, 2), (1, 2)], (), "overlap"),
        ([("assistant", "a"), ("user", "b")], [(0, 1)], (), "does not start at a user"),
        ([("user", "a"), ("user", "b")], [(0, 2)], (), "neither a user alone"),
        ([("user", "a"), ("assistant", "b"), ("assistant", "c")], [(0, 3)], (), "neither a user alone"),
        ([("user", "a")], [(0, 1)], (0, 1), "do not match"),
        ([("user", "a"), ("user", "b")], [], (3, 3), "not increasing"),
    ],
)
def test_resume_state_problem_names_each_defect(
    messages: list[tuple[str, str]], spans: list[tuple[int, int]], seqs: tuple[int, ...], problem: str
) -> None:
    reason = resume_state_problem(_state(messages, spans, seqs))
    assert reason is not None
    assert problem in reason


def test_resume_state_problem_accepts_a_sound_state() -> None:
    assert (
        resume_state_problem(_state([("user", "legacy"), ("user", "a"), ("assistant", "b")], [(1, 3)]))
        is None
    )


# -- properties over random transcripts ----------------------------------------------------------


@dataclass
class _Built:
    rows: list[SessionMessage]
    completed_user_seqs: list[int]  # user row of every completed turn
    empty_final_user_seqs: set[int]
    retained_legacy_seqs: list[int]  # bare users followed by a user (before the boundary filter)
    boundary: int


_BLOCK = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 2), st.booleans(), st.booleans()),
    st.tuples(st.just("bare"), st.just(0), st.just(False), st.just(False)),
    st.tuples(st.just("interrupted"), st.integers(1, 2), st.just(False), st.just(False)),
    st.tuples(st.just("marker"), st.integers(0, 10_000), st.booleans(), st.just(False)),
)


def _build(blocks: list[tuple[str, int, bool, bool]]) -> _Built:
    rows: list[SessionMessage] = []
    completed: list[int] = []
    empty: set[int] = set()
    user_kinds: list[tuple[int, str]] = []  # (seq, block kind) of every user row in order

    def add(role: str, content: list[dict[str, Any]], **extra: Any) -> int:
        rows.append(_row(len(rows), role, content, **extra))
        return len(rows) - 1

    for kind, size, flag, preamble in blocks:
        if kind == "marker":
            if not rows:
                continue
            through = size % len(rows)
            add(
                "system",
                _text(f"summary {len(rows)}") if flag else [],
                compaction={"droppedThroughSequence": through},
            )
            continue
        user_seq = add("user", _text(f"user {len(rows)}"))
        user_kinds.append((user_seq, kind))
        for call in range(size):
            call_id = f"c{len(rows)}-{call}"
            add(
                "assistant",
                [
                    *(_text("preamble") if preamble else []),
                    {"type": "tool_call", "id": call_id, "name": "read_file"},
                ],
            )
            add(
                "tool",
                [{"type": "tool_result", "toolCallId": call_id, "name": "read_file", "isError": False}],
            )
        if kind == "turn":
            add("assistant", _text("" if flag else f"reply {len(rows)}"))
            completed.append(user_seq)
            if flag:
                empty.add(user_seq)
    legacy = [
        seq
        for (seq, kind), (next_seq, _next_kind) in itertools.pairwise(user_kinds)
        if kind == "bare" and all(rows[s].role == "system" for s in range(seq + 1, next_seq))
    ]
    boundary = max((r.compaction.dropped_through_sequence for r in rows if r.compaction), default=-1)
    return _Built(rows, completed, empty, legacy, boundary)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCK, max_size=14))
def test_reconstruct_properties_hold_for_random_transcripts(
    blocks: list[tuple[str, int, bool, bool]],
) -> None:
    built = _build(blocks)
    state = reconstruct_session_state(_record(totalCostMicrocents=9), built.rows)
    messages, spans = state.messages, state.completed_turn_spans

    # Spans: ordered, non-overlapping, in bounds, starting at a user, [user] or [user, assistant].
    assert resume_state_problem(state) is None
    previous = 0
    for span in spans:
        assert previous <= span.start < span.end <= len(messages)
        assert messages[span.start].role == "user"
        previous = span.end

    # The counter counts every completed turn ever run; with no boundary it equals the span count.
    assert state.turn_count == len(built.completed_user_seqs)
    if built.boundary < 0:
        assert state.turn_count == len(spans)

    # Exactly the completed turns whose user row survives the boundary have spans; empty finals are
    # one message long.
    surviving = [seq for seq in built.completed_user_seqs if seq > built.boundary]
    assert [state.message_sequences[span.start] for span in spans] == surviving
    for span in spans:
        user_seq = state.message_sequences[span.start]
        assert (span.end - span.start == 1) == (user_seq in built.empty_final_user_seqs)

    # Messages outside spans are exactly the surviving legacy bare users, in their own slots.
    in_spans = {i for span in spans for i in range(span.start, span.end)}
    outside = [state.message_sequences[i] for i in range(len(messages)) if i not in in_spans]
    assert outside == [seq for seq in built.retained_legacy_seqs if seq > built.boundary]
    assert all(messages[i].role == "user" for i in range(len(messages)) if i not in in_spans)
    assert len(state.turn_boundary_sequences) == len(spans) + len(outside)

    # Seeds increase and lie past the boundary; no assistant message is empty.
    assert list(state.message_sequences) == sorted(set(state.message_sequences))
    assert all(seq > built.boundary for seq in state.message_sequences)
    assert all(m.text for m in messages if m.role == "assistant")
    assert state.cumulative_cost_microcents == 9

    # Keeping every slot needs no marker; keeping fewer drops through a real earlier row.
    assert dropped_through_for_kept(state, len(state.turn_boundary_sequences)) is None
    for kept in range(len(state.turn_boundary_sequences)):
        through = dropped_through_for_kept(state, kept)
        assert through is not None
        assert built.boundary < through < len(built.rows)
