"""Values the store cannot hold are refused with the documented errors, and leave the store unchanged.

SQLite's INTEGER is a signed 64-bit value and its TEXT is UTF-8: a token or money figure beyond
``2**63 - 1`` (one entry, a turn's sum, or a session's running totals) and a lone surrogate cannot be
stored.  Each is refused where it is documented to be: a cost entry or turn whose own figures are out of
range is invalid input when it is built; a commit that would carry the stored totals past the range is a
:class:`PersistError` whose cause is ``StoreError("totals_range")``; user text with a lone surrogate is
refused by ``send_message`` before the turn starts.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from tests.reference.enginekit import make_session, minimal_record, run, text_call

from relavium_reference._host.history_store import HistoryStore, PersistError
from relavium_reference._host.persister import SqlitePersister
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.messages import TextPart
from relavium_reference._model.records import CompletedTurn, CostEntry, MessageDraft, parse_completed_turn
from relavium_reference._rules.history_rows import StoreError

_MAX = 2**63 - 1
_FIELDS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "costMicrocents": "cost_microcents",
}


def _store(tmp_path: Path) -> HistoryStore:
    store = HistoryStore.open(tmp_path / "history.db")
    store.create_session(minimal_record())
    return store


def _wire_turn(*costs: dict[str, Any]) -> dict[str, Any]:
    return {
        "user": {"role": "user", "content": [{"type": "text", "text": "q"}]},
        "terminal": {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        "costs": list(costs),
    }


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


@pytest.mark.parametrize("field", list(_FIELDS))
def test_a_cost_figure_beyond_64_bits_is_invalid_input(field: str) -> None:
    parse_completed_turn(_wire_turn({"model": "m", field: _MAX}))  # the largest value is fine
    with pytest.raises(InvalidInputError):
        parse_completed_turn(_wire_turn({"model": "m", field: _MAX + 1}))
    with pytest.raises(ValidationError):
        CostEntry(model="m", **{_FIELDS[field]: _MAX + 1})


@pytest.mark.parametrize("field", list(_FIELDS))
def test_a_turn_whose_sum_is_beyond_64_bits_is_invalid_input(field: str) -> None:
    parse_completed_turn(_wire_turn({"model": "m1", field: _MAX - 1}, {"model": "m2", field: 1}))
    with pytest.raises(InvalidInputError, match="64-bit"):
        parse_completed_turn(_wire_turn({"model": "m1", field: 2**62}, {"model": "m2", field: 2**62}))


@pytest.mark.parametrize("field", list(_FIELDS))
def test_an_unvalidated_turn_beyond_64_bits_is_a_persist_error_and_changes_nothing(
    tmp_path: Path, field: str
) -> None:
    store = _store(tmp_path)
    before = _dump(tmp_path / "history.db")
    valid = parse_completed_turn(_wire_turn())
    costs = tuple(
        CostEntry.model_construct(**{**dict(CostEntry(model=model)), _FIELDS[field]: value})
        for model, value in (("m1", 2**62), ("m2", 2**62))
    )
    for bad in (costs, (*costs[:1], costs[0].model_copy(update={_FIELDS[field]: _MAX + 1}))):
        turn = CompletedTurn.model_construct(**{**dict(valid), "costs": bad})
        with pytest.raises(PersistError):
            store.commit_turn("s-1", turn)
        assert _dump(tmp_path / "history.db") == before
    assert store.load_session("s-1").total_input_tokens == 0


@pytest.mark.parametrize("field", list(_FIELDS))
@pytest.mark.parametrize("models", [("m1", "m2"), ("m1", "m1")], ids=["two-models", "one-model"])
def test_totals_overflowing_across_turns_refuse_the_commit_and_keep_the_store(
    tmp_path: Path, field: str, models: tuple[str, str]
) -> None:
    store = _store(tmp_path)
    store.commit_turn("s-1", parse_completed_turn(_wire_turn({"model": models[0], field: 2**62})))
    store.commit_turn("s-1", parse_completed_turn(_wire_turn({"model": models[1], field: 2**62 - 1})))
    before = _dump(tmp_path / "history.db")
    with pytest.raises(PersistError) as caught:
        store.commit_turn("s-1", parse_completed_turn(_wire_turn({"model": models[0], field: 1})))
    assert isinstance(caught.value.__cause__, StoreError)
    assert caught.value.__cause__.code == "totals_range"
    assert _dump(tmp_path / "history.db") == before
    record = store.load_session("s-1")  # not poisoned: it loads, with the totals of the two turns
    assert getattr(record, f"total_{_FIELDS[field]}") == _MAX
    assert len(store.load_messages("s-1")) == 4
    store.load_costs("s-1")
    with pytest.raises(StoreError) as refused:  # a failed turn's spend is refused the same way
        store.record_cost("s-1", CostEntry(model=models[0], **{_FIELDS[field]: 1}))
    assert refused.value.code == "totals_range"
    assert _dump(tmp_path / "history.db") == before


def test_a_committed_text_with_a_lone_surrogate_is_a_persist_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = _dump(tmp_path / "history.db")
    valid = parse_completed_turn(_wire_turn())
    user = MessageDraft(role="user", content=(TextPart(text="hi \ud800"),))
    with pytest.raises(PersistError):
        store.commit_turn("s-1", valid.model_copy(update={"user": user}))
    assert _dump(tmp_path / "history.db") == before


@pytest.mark.parametrize("text", ["hi \ud800", "\udfff", "a\udc80b"])
def test_user_text_with_a_lone_surrogate_is_refused_before_the_turn(tmp_path: Path, text: str) -> None:
    store = HistoryStore.open(tmp_path / "history.db")
    harness = make_session(calls=[text_call("ok")], persister=SqlitePersister(store))

    async def scenario() -> None:
        await harness.session.start()
        with pytest.raises(InvalidInputError) as caught:
            await harness.session.send_message(text)
        assert caught.value.location == "text"
        result = await harness.session.send_message("next \U0001f4a1")  # not latched; a pair is fine
        assert result.status == "completed"

    run(scenario())
    rows = store.load_messages(harness.session.session_id)
    assert [m.role for m in rows] == ["user", "assistant"]
