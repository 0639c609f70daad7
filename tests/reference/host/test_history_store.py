"""The SQLite history.db: files and pragmas, sessions, atomic turn commits, costs, markers, checked reads."""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relavium_reference._host.history_store import (
    SCHEMA_VERSION,
    STORE_ERRORS,
    HistoryStore,
    StoreError,
    epoch_ms,
    iso_from_ms,
    strict_json,
)
from relavium_reference._model.errors import DependencyError, InvalidInputError, PersistError
from relavium_reference._model.messages import AgentSessionRecord, parse_agent_session_record
from relavium_reference._model.records import CompletedTurn, CostEntry, parse_completed_turn
from relavium_reference._rules.resume import reconstruct_session_state


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "history.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[HistoryStore]:
    with HistoryStore.open(db_path, clock=_Clock()) as opened:
        yield opened


def _record(session_id: str = "s1", **extra: Any) -> AgentSessionRecord:
    return parse_agent_session_record(
        {
            "id": session_id,
            "agentSlug": "coder",
            "context": {"workingDir": "/w", "gitRef": "main", "fsScopeTier": "project"},
            "createdAt": "2026-03-01T10:00:00+02:00",
            "updatedAt": "2026-03-01T10:00:00+02:00",
            **extra,
        }
    )


def _turn(
    user: str = "question",
    final: str = "answer",
    calls: int = 0,
    cost: int = 100,
    call_prefix: str = "call-question",
    **extra: Any,
) -> CompletedTurn:
    structural: list[dict[str, Any]] = []
    for index in range(calls):
        call_id = f"{call_prefix}-{index}"
        structural.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "working"},
                    {"type": "tool_call", "id": call_id, "name": "grep"},
                ],
            }
        )
        structural.append(
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": call_id,
                        "name": "grep",
                        "isError": False,
                        "byteLength": 7,
                    }
                ],
            }
        )
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": user}]},
            "structural": structural,
            "terminal": {
                "role": "assistant",
                "content": [{"type": "text", "text": final}],
                "modelId": "cat-1",
            },
            "costs": [{"model": "claude-x", "inputTokens": 10, "outputTokens": 2, "costMicrocents": cost}],
            **extra,
        }
    )


def _raw(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.row_factory = sqlite3.Row
    return connection


def _tamper(path: Path, sql: str, *params: Any) -> None:
    """Edit the database behind the store's back (the append-only triggers dropped first)."""
    with _raw(path) as connection:
        connection.execute("DROP TRIGGER IF EXISTS session_messages_no_update")
        connection.execute("DROP TRIGGER IF EXISTS session_messages_no_delete")
        connection.execute(sql, params)
    connection.close()


# -- files and pragmas ---------------------------------------------------------------------------


def test_database_file_is_0600_and_its_directory_0700_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "nested" / "history.db"
    previous = os.umask(0)
    try:
        with HistoryStore.open(path) as opened:
            opened.create_session(_record())
            opened.commit_turn("s1", _turn())
            files = [f for f in path.parent.rglob("*") if f.is_file()]
            modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
            leases = path.with_name("history.db-leases")  # the writer leases (KD-DB-9)
            lease_mode = stat.S_IMODE(leases.stat().st_mode)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert lease_mode == 0o700
    assert modes["history.db"] == 0o600
    assert {"history.db-wal", "history.db-shm"} <= set(modes)
    assert len(modes) == 4  # the database, its two side files, one lease file
    assert set(modes.values()) == {0o600}


def test_store_uses_wal_foreign_keys_and_a_schema_version(store: HistoryStore, db_path: Path) -> None:
    with _raw(db_path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        indexes = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    connection.close()
    assert {"agent_sessions", "session_messages", "session_costs"} <= tables
    assert {
        "idx_session_messages_seq",
        "idx_session_costs_session_model",
        "idx_agent_sessions_updated",
    } <= indexes
    assert store._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_reopening_keeps_the_data(db_path: Path) -> None:
    with HistoryStore.open(db_path) as first:
        first.create_session(_record())
        first.commit_turn("s1", _turn())
    with HistoryStore.open(db_path) as second:
        record, messages = second.load_full("s1")
    assert len(messages) == 2
    assert record.total_cost_microcents == 100


def test_an_unknown_schema_version_is_refused(db_path: Path) -> None:
    HistoryStore.open(db_path).close()
    with _raw(db_path) as connection:
        connection.execute("PRAGMA user_version = 99")
    connection.close()
    with pytest.raises(StoreError) as caught:
        HistoryStore.open(db_path)
    assert caught.value.code == "schema_version"


def test_a_closed_store_refuses_work(db_path: Path) -> None:
    opened = HistoryStore.open(db_path)
    opened.close()
    opened.close()
    with pytest.raises(StoreError, match=STORE_ERRORS["closed"]):
        opened.load_session("s1")


# -- sessions ------------------------------------------------------------------------------------


def test_create_then_load_normalises_timestamps_to_utc_milliseconds(store: HistoryStore) -> None:
    created = store.create_session(_record(title="Hello"))
    assert created.created_at == "2026-03-01T08:00:00.000Z"
    assert created.context.git_ref == "main"
    assert store.load_session("s1") == created


def test_a_new_session_starts_from_zero(store: HistoryStore) -> None:
    with pytest.raises(InvalidInputError, match="zero totals"):
        store.create_session(_record(totalCostMicrocents=5))


def test_duplicate_session_is_refused(store: HistoryStore) -> None:
    store.create_session(_record())
    with pytest.raises(StoreError) as caught:
        store.create_session(_record())
    assert caught.value.code == "session_exists"


def test_missing_session_is_a_store_error(store: HistoryStore) -> None:
    with pytest.raises(StoreError) as caught:
        store.load_session("nope")
    assert caught.value.code == "session_not_found"
    assert isinstance(caught.value, DependencyError)


def test_soft_deleted_session_is_not_found_but_its_rows_stay(store: HistoryStore, db_path: Path) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn())
    store.delete_session("s1")
    for read in (store.load_session, store.load_messages, store.load_full):
        with pytest.raises(StoreError, match="session not found"):
            read("s1")
    with _raw(db_path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM session_messages").fetchone()[0] == 2
    connection.close()


def test_update_session_changes_only_the_given_fields(store: HistoryStore) -> None:
    store.create_session(_record(title="Original"))
    updated = store.update_session("s1", status="exported", exported_workflow_path="/w/flow.relavium.yaml")
    assert (updated.status, updated.title, updated.exported_workflow_path) == (
        "exported",
        "Original",
        "/w/flow.relavium.yaml",
    )
    with pytest.raises(InvalidInputError):
        store.update_session("s1", status="cancelled")  # type: ignore[arg-type]


# -- turn commits --------------------------------------------------------------------------------


def test_commit_writes_user_structural_rows_and_terminal_with_gap_free_numbers(store: HistoryStore) -> None:
    store.create_session(_record())
    first = store.commit_turn("s1", _turn("first question", calls=2))
    second = store.commit_turn("s1", _turn("second", final=""))
    assert [m.sequence_number for m in (*first, *second)] == list(range(8))
    assert [m.role for m in first] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert second[-1].role == "assistant"
    assert second[-1].text == ""
    assert second[-1].has_text_part
    assert store.load_messages("s1") == (*first, *second)


def test_commit_updates_totals_cost_rows_and_title_in_the_same_step(store: HistoryStore) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn("  Refactor   the parser please  ", cost=100))
    store.commit_turn("s1", _turn("something else", cost=50))
    record = store.load_session("s1")
    assert (record.total_input_tokens, record.total_output_tokens, record.total_cost_microcents) == (
        20,
        4,
        150,
    )
    assert record.title == "Refactor the parser please"
    (row,) = store.load_costs("s1")
    assert (row.model, row.cost_microcents, row.call_count, row.unpriced_calls, row.is_legacy) == (
        "claude-x",
        150,
        2,
        0,
        False,
    )


def test_commit_keeps_an_existing_title_and_accepts_a_given_one(store: HistoryStore) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn("first"), title="Chosen title")
    store.commit_turn("s1", _turn("second"), title="Ignored")
    assert store.load_session("s1").title == "Chosen title"


def test_committed_rows_carry_the_finish_reason_columns(store: HistoryStore, db_path: Path) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn(calls=1, finishReason="length"))
    with _raw(db_path) as connection:
        rows = [
            dict(r)
            for r in connection.execute(
                "SELECT role, content, tool_calls, tool_call_id, name, finish_reason, model_id "
                "FROM session_messages ORDER BY sequence_number"
            )
        ]
    connection.close()
    assert rows == [
        {
            "role": "user",
            "content": "question",
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
            "finish_reason": None,
            "model_id": None,
        },
        {
            "role": "assistant",
            "content": "working",
            "tool_calls": '[{"type":"tool_call","id":"call-question-0","name":"grep"}]',
            "tool_call_id": None,
            "name": None,
            "finish_reason": "tool_use",
            "model_id": None,
        },
        {
            "role": "tool",
            "content": None,
            "tool_calls": None,
            "tool_call_id": "call-question-0",
            "name": "grep",
            "finish_reason": None,
            "model_id": None,
        },
        {
            "role": "assistant",
            "content": "answer",
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
            "finish_reason": "length",
            "model_id": "cat-1",
        },
    ]


def test_failed_commit_writes_nothing_and_the_store_stays_usable(store: HistoryStore) -> None:
    store.create_session(_record())
    good = store.commit_turn("s1", _turn("first"))
    before = store.load_full("s1")
    clash = _turn("second", calls=1).model_copy(
        update={"terminal": _turn().terminal.model_copy(update={"id": good[0].id})}
    )
    with pytest.raises(PersistError) as caught:
        store.commit_turn("s1", clash)
    cause = caught.value.__cause__
    assert isinstance(cause, StoreError)
    assert cause.code == "constraint"  # the UNIQUE id, as a fixed store error (KD-DB-4)
    assert store.load_full("s1") == before
    assert store.load_costs("s1")[0].call_count == 1
    after = store.commit_turn("s1", _turn("third"))
    assert [m.sequence_number for m in after] == [2, 3]


def test_commit_to_a_missing_session_is_a_persist_error(store: HistoryStore) -> None:
    with pytest.raises(PersistError) as caught:
        store.commit_turn("ghost", _turn())
    assert isinstance(caught.value.__cause__, StoreError)


def test_commit_refuses_anything_but_a_completed_turn(store: HistoryStore) -> None:
    store.create_session(_record())
    with pytest.raises(InvalidInputError):
        store.commit_turn("s1", {"user": "hi"})  # type: ignore[arg-type]


def test_commit_keeps_caller_ids_and_timestamps(store: HistoryStore) -> None:
    store.create_session(_record())
    turn = parse_completed_turn(
        {
            "user": {
                "role": "user",
                "content": [{"type": "text", "text": "q"}],
                "id": "u-1",
                "timestamp": "2026-03-01T09:00:00.123456+01:00",
            },
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": "a"}], "id": "a-1"},
        }
    )
    user, terminal = store.commit_turn("s1", turn)
    assert (user.id, terminal.id) == ("u-1", "a-1")
    assert user.timestamp == "2026-03-01T08:00:00.123Z"


# -- cost of uncommitted turns -------------------------------------------------------------------


def test_record_cost_adds_money_without_transcript(store: HistoryStore) -> None:
    store.create_session(_record())
    store.record_cost("s1", CostEntry(model="gpt-x", input_tokens=5, output_tokens=1, cost_microcents=30))
    record = store.record_cost("s1", CostEntry(model="gpt-x", cost_microcents=0, unpriced_calls=1))
    assert store.load_messages("s1") == ()
    assert record.total_cost_microcents == 30
    (row,) = store.load_costs("s1")
    assert (row.call_count, row.unpriced_calls, row.input_tokens) == (2, 1, 5)


def test_record_cost_for_a_missing_session_writes_nothing(store: HistoryStore, db_path: Path) -> None:
    with pytest.raises(StoreError):
        store.record_cost("ghost", CostEntry(model="m", cost_microcents=1))
    with _raw(db_path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM session_costs").fetchone()[0] == 0
    connection.close()


# -- markers -------------------------------------------------------------------------------------


def test_markers_are_system_rows_with_a_boundary(store: HistoryStore) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn("q1"))
    store.commit_turn("s1", _turn("q2"))
    summary = store.append_marker("s1", dropped_through_sequence=1, text="Earlier: q1 answered.")
    trim = store.append_marker("s1", dropped_through_sequence=1, text="")
    assert (summary.sequence_number, trim.sequence_number) == (4, 5)
    assert trim.content == ()
    record, messages = store.load_full("s1")
    state = reconstruct_session_state(record, messages)
    assert state.context_preamble == "Earlier: q1 answered."
    assert [m.text for m in state.messages] == ["q2", "answer"]
    assert state.turn_count == 2


@pytest.mark.parametrize("through", [-1, 2, 10])
def test_a_marker_must_point_at_an_existing_earlier_row(store: HistoryStore, through: int) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn())
    with pytest.raises(InvalidInputError, match="existing earlier message"):
        store.append_marker("s1", dropped_through_sequence=through, text="x")
    assert len(store.load_messages("s1")) == 2


# -- append-only ---------------------------------------------------------------------------------


def test_messages_cannot_be_updated_or_deleted(store: HistoryStore, db_path: Path) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn())
    with _raw(db_path) as connection:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            connection.execute("UPDATE session_messages SET content = 'edited'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            connection.execute("DELETE FROM session_messages")
    connection.close()


def test_hard_deleting_a_session_cascades_to_its_rows(store: HistoryStore, db_path: Path) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn())
    with _raw(db_path) as connection:
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("DELETE FROM agent_sessions WHERE id = 's1'")
        counts = [
            connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("session_messages", "session_costs")
        ]
    connection.close()
    assert counts == [0, 0]


# -- checked reads: tampered rows ----------------------------------------------------------------

TAMPERING = [
    ("UPDATE session_messages SET content = 'forged' WHERE sequence_number = 0", "text_mismatch"),
    ("UPDATE session_messages SET content = NULL WHERE sequence_number = 3", "text_mismatch"),
    ("UPDATE session_messages SET content = 'x' WHERE sequence_number = 2", "text_mismatch"),
    (
        "UPDATE session_messages SET tool_calls = "
        '\'[{"type":"tool_call","id":"call-question-0","name":"rm"}]\' WHERE sequence_number = 1',
        "tool_calls_mismatch",
    ),
    (
        'UPDATE session_messages SET tool_calls = \'[{"type":"tool_call","id":"c","name":"grep",'
        '"args":{"q":"secret"}}]\' WHERE sequence_number = 3',
        "tool_calls_mismatch",
    ),
    ("UPDATE session_messages SET tool_calls = '[' WHERE sequence_number = 1", "malformed_json"),
    ("UPDATE session_messages SET tool_call_id = 'other' WHERE sequence_number = 2", "tool_call_id_mismatch"),
    ("UPDATE session_messages SET tool_call_id = 'c' WHERE sequence_number = 0", "tool_call_id_mismatch"),
    ("UPDATE session_messages SET name = 'rm' WHERE sequence_number = 2", "name_mismatch"),
    ("UPDATE session_messages SET name = 'grep' WHERE sequence_number = 3", "name_mismatch"),
    ("UPDATE session_messages SET finish_reason = 'stop' WHERE sequence_number = 0", "finish_reason_invalid"),
    ("UPDATE session_messages SET finish_reason = 'stop' WHERE sequence_number = 1", "finish_reason_invalid"),
    (
        "UPDATE session_messages SET finish_reason = 'error' WHERE sequence_number = 3",
        "finish_reason_invalid",
    ),
    ("UPDATE session_messages SET finish_reason = NULL WHERE sequence_number = 3", "finish_reason_invalid"),
    (
        "UPDATE session_messages SET finish_reason = 'tool_use' WHERE sequence_number = 2",
        "finish_reason_invalid",
    ),
    (
        'UPDATE session_messages SET content_parts = \'[{"type":"text",\' WHERE sequence_number = 0',
        "malformed_json",
    ),
    (
        'UPDATE session_messages SET content_parts = \'[{"type":"text","text":"a","text":"b"}]\' '
        "WHERE sequence_number = 0",
        "malformed_json",
    ),
    (
        "UPDATE session_messages SET content_parts = "
        '\'[{"type":"text","text":NaN}]\' WHERE sequence_number = 0',
        "malformed_json",
    ),
    (
        'UPDATE session_messages SET content_parts = \'[{"type":"tool_call","id":"call-question-0",'
        '"name":"grep","args":{"q":"x"}}]\' WHERE sequence_number = 1',
        "invalid_message",
    ),
    (
        'UPDATE session_messages SET content_parts = \'[{"type":"text","text":"question","note":1}]\' '
        "WHERE sequence_number = 0",
        "invalid_message",
    ),
    ("UPDATE session_messages SET content_parts = '{}' WHERE sequence_number = 0", "invalid_message"),
    ("UPDATE session_messages SET role = 'owner' WHERE sequence_number = 0", "invalid_message"),
    (
        "UPDATE session_messages SET compaction_dropped_through_sequence = 0 WHERE sequence_number = 0",
        "invalid_message",
    ),
    ("DELETE FROM session_messages WHERE sequence_number = 1", "sequence_gap"),
    ("UPDATE session_messages SET sequence_number = 9 WHERE sequence_number = 3", "sequence_gap"),
]


@pytest.mark.parametrize(("sql", "code"), TAMPERING, ids=[f"{i}-{c}" for i, (_, c) in enumerate(TAMPERING)])
def test_a_row_that_disagrees_with_its_body_is_refused_on_read(
    store: HistoryStore, db_path: Path, sql: str, code: str
) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn(calls=1))
    _tamper(db_path, sql)
    with pytest.raises(StoreError) as caught:
        store.load_messages("s1")
    assert caught.value.code == code
    assert caught.value.message == STORE_ERRORS[code]
    assert "secret" not in str(caught.value)


SESSION_TAMPERING = [
    ("UPDATE agent_sessions SET working_dir = '/elsewhere'", "context_mismatch"),
    ("UPDATE agent_sessions SET git_ref = NULL", "context_mismatch"),
    ("UPDATE agent_sessions SET fs_scope_tier = 'full'", "context_mismatch"),
    ("UPDATE agent_sessions SET context_json = '{\"workingDir\":'", "malformed_json"),
    ('UPDATE agent_sessions SET context_json = \'{"workingDir":"/w","apiKey":"k"}\'', "invalid_session"),
    ('UPDATE agent_sessions SET agent_snapshot = \'{"id":"x"}\'', "invalid_session"),
    ("UPDATE agent_sessions SET agent_slug = 'Not Kebab'", "invalid_session"),
    ("UPDATE agent_sessions SET total_cost_microcents = 7", "totals_mismatch"),
    ("UPDATE session_costs SET input_tokens = input_tokens + 1", "totals_mismatch"),
]


@pytest.mark.parametrize(("sql", "code"), SESSION_TAMPERING, ids=[c for _, c in SESSION_TAMPERING])
def test_a_session_row_that_disagrees_with_its_context_or_costs_is_refused(
    store: HistoryStore, db_path: Path, sql: str, code: str
) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn())
    _tamper(db_path, sql)
    with pytest.raises(StoreError) as caught:
        store.load_full("s1")
    assert caught.value.code == code


def test_a_null_body_reads_as_no_parts(store: HistoryStore, db_path: Path) -> None:
    store.create_session(_record())
    store.commit_turn("s1", _turn())
    store.append_marker("s1", dropped_through_sequence=1, text="")
    _tamper(db_path, "UPDATE session_messages SET content_parts = NULL WHERE sequence_number = 2")
    assert store.load_messages("s1")[2].content == ()


# -- pure helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("iso", "ms"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("2026-03-01T10:00:00.9999+02:00", 1772352000999),
        ("1969-12-31T23:59:59.999Z", -1),
    ],
)
def test_timestamps_map_to_epoch_milliseconds(iso: str, ms: int) -> None:
    assert epoch_ms(iso) == ms
    assert epoch_ms(iso_from_ms(ms)) == ms


def test_strict_json_refuses_what_json_loads_would_accept() -> None:
    assert strict_json('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    for text in ('{"a": 1, "a": 2}', "[Infinity]", "[NaN]", "", "{"):
        with pytest.raises(StoreError, match="malformed"):
            strict_json(text)


# -- differential: whatever is committed reads back identically and reconstructs --------------------

_TURN_SPEC = st.tuples(
    st.text(min_size=1, max_size=20), st.text(max_size=20), st.integers(0, 3), st.integers(0, 10**6)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_TURN_SPEC, min_size=1, max_size=5))
def test_committed_turns_read_back_identically(
    tmp_path: Path, specs: list[tuple[str, str, int, int]]
) -> None:
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "history.db"
    with HistoryStore.open(path) as opened:
        opened.create_session(_record())
        written = []
        for index, (user, final, calls, cost) in enumerate(specs):
            written.extend(
                opened.commit_turn(
                    "s1",
                    _turn(f"{index} {user}", final=final, calls=calls, cost=cost, call_prefix=f"t{index}"),
                )
            )
        record, messages = opened.load_full("s1")
    assert messages == tuple(written)
    assert record.total_cost_microcents == sum(spec[3] for spec in specs)
    state = reconstruct_session_state(record, messages)
    assert state.turn_count == len(specs)
    assert len(state.completed_turn_spans) == len(specs)
    assert [state.messages[s.start].text for s in state.completed_turn_spans] == [
        f"{i} {spec[0]}" for i, spec in enumerate(specs)
    ]


def test_the_old_name_session_store_is_a_deprecated_alias_of_history_store() -> None:
    """``relavium_reference.SessionStore`` (the ``history.db`` store's name before ``HistoryStore``) still
    answers the same class for one release, and every read of it warns."""
    import relavium_reference

    with pytest.warns(DeprecationWarning, match="HistoryStore"):
        old = relavium_reference.SessionStore
    assert old is relavium_reference.HistoryStore
    assert "SessionStore" not in relavium_reference.__all__
