"""Fuzzing ``HistoryStore`` writes: every public write and read of ``history.db`` raises only documented
errors (``RelaviumError``: ``StoreError``, ``PersistError``, ``InvalidInputError``) for any value of the
right type, ids and texts with lone surrogates and NUL included, and for wrong-typed values.

300 examples per target, no per-example deadline; one database file per module (a session per
example, under a fresh id, so examples never see each other's rows).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.reference.fuzzkit import HOSTILE, only_documented, quick_record, quick_turn

from relavium_reference import HistoryStore, InvalidInputError, parse_agent_session_record
from relavium_reference._model.records import CostEntry, parse_completed_turn

HISTORY_FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

_TEXT = st.text(st.characters(blacklist_categories=()), max_size=10) | st.sampled_from(
    ["\ud800", "a\udfffb", "\x00", "", "ok"]
)
_NUMBERS = st.integers() | st.sampled_from([-1, 2**63 - 1, 2**63]) | st.booleans() | st.none()
_FRESH = itertools.count()


@pytest.fixture(scope="module")
def store() -> Iterator[HistoryStore]:
    with tempfile.TemporaryDirectory() as folder, HistoryStore.open(Path(folder) / "history.db") as opened:
        yield opened


def _session(store: HistoryStore, data: Any) -> str:
    """A fresh session created from a fuzzed record (or a plain one when the record is refused)."""
    session_id = f"s-{next(_FRESH)}"
    wire = dict(data, id=session_id, totalInputTokens=0, totalOutputTokens=0, totalCostMicrocents=0)
    wire.pop("deletedAt", None)
    try:
        record = parse_agent_session_record(wire)
    except InvalidInputError:
        record = parse_agent_session_record(
            {
                "id": session_id,
                "agentSlug": "coder",
                "context": {"workingDir": "/w"},
                "createdAt": "2026-01-01T00:00:00Z",
                "updatedAt": "2026-01-01T00:00:00Z",
            }
        )
    only_documented(lambda: store.create_session(record))
    return session_id


@HISTORY_FUZZ
@given(quick_record(), quick_turn(), _TEXT | HOSTILE)
def test_commit_turn_raises_only_documented_errors(
    store: HistoryStore, record: Any, turn: Any, title: Any
) -> None:
    session_id = _session(store, record)
    try:
        completed = parse_completed_turn(turn)
    except InvalidInputError:
        return
    only_documented(lambda: store.commit_turn(session_id, completed, title=title))
    only_documented(lambda: store.load_full(session_id))


def _cost(model: Any) -> Any:
    """A cost entry for ``model`` when it can be one, else ``model`` itself (a wrong-typed entry)."""
    try:
        return CostEntry(model=model)
    except ValidationError:
        return model


@HISTORY_FUZZ
@given(quick_record(), _TEXT | HOSTILE, _TEXT | HOSTILE, _NUMBERS | HOSTILE, _TEXT | HOSTILE)
def test_markers_updates_and_costs_raise_only_documented_errors(
    store: HistoryStore, record: Any, title: Any, text: Any, boundary: Any, model: Any
) -> None:
    session_id = _session(store, record)
    only_documented(lambda: store.update_session(session_id, title=title, status=text))
    only_documented(lambda: store.append_marker(session_id, dropped_through_sequence=boundary, text=text))
    only_documented(lambda: store.record_cost(session_id, _cost(model)))
    only_documented(lambda: store.load_costs(session_id))
    only_documented(lambda: store.load_messages(session_id))


@HISTORY_FUZZ
@given(_TEXT | HOSTILE)
def test_every_read_and_delete_by_id_raises_only_documented_errors(
    store: HistoryStore, session_id: Any
) -> None:
    for call in (
        store.load_session,
        store.load_messages,
        store.load_full,
        store.load_costs,
        store.delete_session,
    ):
        only_documented(lambda c=call: c(session_id))  # type: ignore[misc]
