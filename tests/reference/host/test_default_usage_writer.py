"""A persisted host always has a usage writer, governor or not (KD-USE-1).

The reference host's ``SqlitePersister`` supplies a ``SqliteUsageWriter`` over its own ``history.db``
when the host gives no writer; ``SessionDeps.prices`` prices it (an empty mapping: every call unpriced);
an explicit writer wins.  Real SQLite throughout: no test here attaches a writer by hand except the one
showing that an explicit writer wins.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.reference.enginekit import AGENT, make_session, run, text_call, tool_call

from relavium_reference import (
    AgentSession,
    ModelPrice,
    PersistError,
    ScriptedProvider,
    SessionDeps,
    SqlitePersister,
    SqliteUsageWriter,
)
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._host.history_usage import usage_totals
from relavium_reference._model.messages import AgentSessionRecord
from relavium_reference._model.usage_writer import UsagePending, UsageResolved, UsageSettled, UsageTotals
from relavium_reference._rules.resume import reconstruct_session_state

PRICES = {"model-a": ModelPrice(input_microcents=3, output_microcents=10)}
FAILS_AFTER_BILLING = {
    "chunks": [
        {"type": "text_delta", "text": "partial"},
        {
            "type": "error",
            "error": {"kind": "bad_request", "message": "refused mid-stream"},
            "usage": {"inputTokens": 20, "outputTokens": 2},
        },
    ]
}


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "history.db"


@pytest.fixture
def store(db_path: Path):  # type: ignore[no-untyped-def]
    opened = HistoryStore.open(db_path)
    yield opened
    opened.close()


def _ledger(store: HistoryStore) -> list[tuple[str, int]]:
    return store.usage_read(
        "s-test",
        lambda db: [
            (row["state"], row["cost_microcents"])
            for row in db.execute("SELECT * FROM session_usage WHERE session_id = 's-test' ORDER BY ordinal")
        ],
    )


def _totals(store: HistoryStore) -> UsageTotals:
    return store.usage_read("s-test", lambda db: usage_totals(db, "s-test"))


def _published(h: Any) -> list[int]:
    return [e.cumulative_cost_microcents for e in h.of_type("cost:updated")]


def _resume(store: HistoryStore, calls: list[dict[str, Any]]) -> tuple[AgentSession, list[Any]]:
    """A second life over the same file: the host gives only its persister and its prices."""
    record, messages = store.load_full("s-test")
    provider = ScriptedProvider({"calls": calls})
    events: list[Any] = []

    async def sink(event: Any) -> None:
        events.append(event)

    session = AgentSession.resume(
        agent=AGENT,
        context=record.context,
        deps=SessionDeps(
            resolve_provider=lambda _p, _m: provider,
            emit=sink,
            persister=SqlitePersister(store),
            prices=PRICES,
        ),
        state=reconstruct_session_state(record, messages),
        session_id="s-test",
    )
    return session, events


def test_a_persisted_host_without_a_writer_gets_the_stores_own(store: HistoryStore) -> None:
    h = make_session(
        calls=[tool_call("c1", "echo"), text_call("done")], persister=SqlitePersister(store), prices=PRICES
    )

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    # the default writer's ledger: 7 in / 3 out, then 10 in / 5 out, at 3 and 10 microcents a token
    assert _ledger(store) == [("resolved", 51), ("resolved", 80)]
    (row,) = store.load_costs("s-test")
    assert (row.cost_microcents, row.call_count, row.unpriced_calls) == (131, 2, 0)
    assert _published(h) == [51, 131]  # counted from the complete-zero basis of a fresh creation


def test_an_empty_price_mapping_leaves_every_call_unpriced(store: HistoryStore) -> None:
    h = make_session(calls=[tool_call("c1", "echo"), text_call("done")], persister=SqlitePersister(store))

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    assert _ledger(store) == [("resolved", 0), ("resolved", 0)]  # the writer saw both, priced neither
    assert _totals(store) == UsageTotals(amount_microcents=0, missing_price_count=2, coverage="complete")
    (row,) = store.load_costs("s-test")
    assert (row.cost_microcents, row.unpriced_calls) == (0, 2)


class _StoreAlreadyHoldsUsage(SqlitePersister):
    """Creates the session row, then (as a second owner would) writes a ledger row for it."""

    def __init__(self, store: HistoryStore) -> None:
        super().__init__(store)
        self.store = store

    async def create_session(self, record: AgentSessionRecord) -> None:
        await super().create_session(record)
        other = SqliteUsageWriter(self.store, record.id, {})
        await other.pending(UsagePending(attempt=1, purpose="turn", provider=AGENT.provider, model="model-a"))


def test_fresh_creation_asks_for_the_complete_zero_basis(store: HistoryStore) -> None:
    h = make_session(calls=[text_call("never")], persister=SqlitePersister(store), prices=PRICES)
    run(h.session.start())
    assert _ledger(store) == []  # opening the basis writes no row: zero, complete
    assert _totals(store) == UsageTotals()

    # the basis is "fresh", not "adopt": a session id whose ledger is not empty cannot start from zero
    other = make_session(
        calls=[text_call("never")], persister=_StoreAlreadyHoldsUsage(store), session_id="s-other"
    )
    with pytest.raises(PersistError):
        run(other.session.start())


def test_a_failed_turns_billed_usage_counts(store: HistoryStore) -> None:
    h = make_session(
        calls=[tool_call("c1", "echo"), FAILS_AFTER_BILLING], persister=SqlitePersister(store), prices=PRICES
    )

    async def scenario() -> Any:
        await h.session.start()
        return await h.session.send_message("go")

    result = run(scenario())
    assert result.status == "failed"
    assert store.load_messages("s-test") == ()  # a failed turn commits no transcript
    # 51 for the tool round, then 20 in / 2 out = 80 for the attempt that failed after billing
    assert _ledger(store) == [("resolved", 51), ("resolved", 80)]
    (row,) = store.load_costs("s-test")
    assert (row.cost_microcents, row.call_count, row.unpriced_calls) == (131, 2, 0)
    assert store.load_session("s-test").total_cost_microcents == 131


def test_resume_adopts_the_ledger_not_the_construction_counters(store: HistoryStore, db_path: Path) -> None:
    h = make_session(
        calls=[text_call("one"), text_call("two")], persister=SqlitePersister(store), prices=PRICES
    )

    async def first_life() -> None:
        await h.session.start()
        await h.session.send_message("first")  # committed: 10*3 + 5*10 = 80
        refuse = sqlite3.connect(db_path)  # the database itself refuses the next transcript row
        refuse.execute(
            "CREATE TRIGGER refuse_rows BEFORE INSERT ON session_messages BEGIN SELECT RAISE(ABORT, 'x'); END"
        )
        refuse.commit()
        refuse.close()
        assert (await h.session.send_message("second")).status == "failed"  # billed 80, commit refused

    run(first_life())
    state = reconstruct_session_state(*store.load_full("s-test"))
    assert state.cumulative_cost_microcents == 80  # what the instance is constructed with
    assert _totals(store).amount_microcents == 160  # what the ledger (the owner) holds
    heal = sqlite3.connect(db_path)
    heal.execute("DROP TRIGGER refuse_rows")
    heal.commit()
    heal.close()

    session, events = _resume(store, [text_call("three")])
    run(session.send_message("third"))
    published = [e.cumulative_cost_microcents for e in events if e.type == "cost:updated"]
    assert published == [240]  # adopted 160 from the ledger, plus 80: never 80 + 80
    assert _ledger(store) == [("resolved", 80), ("resolved", 80), ("resolved", 80)]


class _Recording:
    """An explicit writer (the host's own): delegates to a differently priced store writer, and records."""

    def __init__(self, store: HistoryStore) -> None:
        self.inner = SqliteUsageWriter(store, "s-test", {"model-a": ModelPrice(1, 1)})
        self.seen: list[str] = []

    async def open(self, basis: Any) -> UsageTotals:
        self.seen.append(f"open:{basis}")
        return await self.inner.open(basis)

    async def pending(self, record: UsagePending) -> None:
        self.seen.append("pending")
        await self.inner.pending(record)

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        self.seen.append("resolved")
        return await self.inner.resolved(record)


def test_an_explicit_writer_wins_over_the_stores_own(store: HistoryStore) -> None:
    writer = _Recording(store)
    h = make_session(
        calls=[text_call("done")], persister=SqlitePersister(store), prices=PRICES, usage_writer=writer
    )

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    assert writer.seen == ["open:fresh", "pending", "resolved"]
    assert _ledger(store) == [("resolved", 15)]  # 10 + 5 at the explicit writer's price, one row only
    assert _published(h) == [15]
