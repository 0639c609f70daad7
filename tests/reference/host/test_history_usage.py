"""The reference host's usage writer over history.db: durable coverage next to the turn's money (KD-USE-1).

Real SQLite throughout: the failures are the database's own refusals (a trigger installed through a
second connection), never a mocked persister.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.reference.enginekit import AGENT, make_session, run, text_call, tool_call

from relavium_reference import AgentSession, ScriptedProvider, SessionDeps
from relavium_reference._host.history_store import SCHEMA_VERSION, HistoryStore, StoreError
from relavium_reference._host.history_usage import SqliteUsageWriter, usage_totals
from relavium_reference._host.persister import SqlitePersister
from relavium_reference._model.errors import PersistError
from relavium_reference._model.llm import StopChunk, TextDelta, Usage
from relavium_reference._model.usage_writer import ModelPrice, UsageTotals
from relavium_reference._rules.resume import reconstruct_session_state

PRICES = {"model-a": ModelPrice(input_microcents=3, output_microcents=10)}


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "history.db"


@pytest.fixture
def store(db_path: Path):  # type: ignore[no-untyped-def]
    opened = HistoryStore.open(db_path)
    yield opened
    opened.close()


def _session(store: HistoryStore, calls: list[dict[str, Any]], prices: Any = PRICES, **deps: Any):  # type: ignore[no-untyped-def]
    writer = SqliteUsageWriter(store, "s-test", prices)
    return make_session(calls=calls, persister=SqlitePersister(store), usage_writer=writer, **deps)


def _resume(store: HistoryStore, calls: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
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
            usage_writer=SqliteUsageWriter(store, "s-test", PRICES),
        ),
        state=reconstruct_session_state(record, messages),
        session_id="s-test",
    )
    return session, events


def _ledger(store: HistoryStore) -> list[tuple[str, str, int]]:
    return store.usage_read(
        "s-test",
        lambda db: [
            (row["purpose"], row["state"], row["cost_microcents"])
            for row in db.execute("SELECT * FROM session_usage WHERE session_id = 's-test' ORDER BY ordinal")
        ],
    )


def _totals(store: HistoryStore) -> UsageTotals:
    return store.usage_read("s-test", lambda db: usage_totals(db, "s-test"))


def _refuse_messages(db_path: Path) -> None:
    """Make the database itself refuse the next transcript row (a real SQLite failure)."""
    other = sqlite3.connect(db_path)
    other.execute(
        "CREATE TRIGGER refuse_rows BEFORE INSERT ON session_messages BEGIN SELECT RAISE(ABORT, 'full'); END"
    )
    other.commit()
    other.close()


def test_each_attempt_is_durable_and_the_turn_commit_carries_its_money(store: HistoryStore) -> None:
    h = _session(store, [tool_call("c1", "echo"), text_call("done")])

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    # 7 in / 3 out, then 10 in / 5 out, at 3 and 10 microcents a token
    assert _ledger(store) == [("turn", "resolved", 51), ("turn", "resolved", 80)]
    assert _totals(store) == UsageTotals(amount_microcents=131, missing_price_count=0, coverage="complete")
    (row,) = store.load_costs("s-test")
    assert (row.cost_microcents, row.call_count, row.unpriced_calls) == (131, 2, 0)
    assert store.load_session("s-test").total_cost_microcents == 131
    published = [e.cumulative_cost_microcents for e in h.of_type("cost:updated")]  # type: ignore[attr-defined]
    assert published == [51, 131]


def test_a_model_without_a_price_counts_as_missing(store: HistoryStore) -> None:
    h = _session(store, [text_call("done")], prices={})

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    assert _totals(store) == UsageTotals(amount_microcents=0, missing_price_count=1, coverage="complete")
    (row,) = store.load_costs("s-test")
    assert (row.cost_microcents, row.unpriced_calls) == (0, 1)


def test_a_failed_commit_leaves_the_store_consistent_and_resume_adopts_the_ledger(
    store: HistoryStore, db_path: Path
) -> None:
    h = _session(store, [text_call("one"), text_call("two")])

    async def first_life() -> None:
        await h.session.start()
        await h.session.send_message("first")  # committed: 10*3 + 5*10 = 80
        _refuse_messages(db_path)
        second = await h.session.send_message("second")  # billed (80), but its commit is refused
        assert second.status == "failed"

    run(first_life())
    assert [m.role for m in store.load_messages("s-test")] == ["user", "assistant"]
    record = store.load_session("s-test")  # the totals still equal the cost rows (checked on read)
    assert record.total_cost_microcents == 80
    assert _ledger(store) == [("turn", "resolved", 80), ("turn", "resolved", 80)]
    assert _totals(store).amount_microcents == 160  # the refused turn's billed cost is still real

    other = sqlite3.connect(db_path)
    other.execute("DROP TRIGGER refuse_rows")
    other.commit()
    other.close()
    session, events = _resume(store, [text_call("three")])

    async def second_life() -> None:
        await session.send_message("third")

    run(second_life())
    cost = [e for e in events if e.type == "cost:updated"]
    assert [e.cumulative_cost_microcents for e in cost] == [240]  # adopted 160, never the counters
    assert _totals(store) == UsageTotals(amount_microcents=240, missing_price_count=0, coverage="complete")


class _SecondCallHangs:
    """Answers the first call at once; the second streams one token, then waits until aborted."""

    def __init__(self) -> None:
        self.calls = 0
        self.streaming = asyncio.Event()

    def stream(self, request: Any) -> AsyncIterator[Any]:
        self.calls += 1
        return self._play(self.calls)

    async def _play(self, call: int) -> AsyncIterator[Any]:
        yield TextDelta(text="tok")
        if call == 1:
            yield StopChunk(stop_reason="stop", usage=Usage(input_tokens=4, output_tokens=2))
            return
        self.streaming.set()
        await asyncio.Event().wait()


def test_an_aborted_attempt_stays_pending_and_resume_keeps_that_uncertainty(store: HistoryStore) -> None:
    provider = _SecondCallHangs()
    writer = SqliteUsageWriter(store, "s-test", PRICES)
    h = make_session(provider, persister=SqlitePersister(store), usage_writer=writer)

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("first")
        second = asyncio.create_task(h.session.send_message("second"))
        await provider.streaming.wait()
        h.session.abort()
        assert (await second).status == "aborted"

    run(scenario())
    # 4 in / 2 out at 3 and 10 microcents a token; the aborted attempt's usage never arrived
    assert _ledger(store) == [("turn", "resolved", 32), ("turn", "pending", 0)]
    assert _totals(store) == UsageTotals(amount_microcents=32, missing_price_count=0, coverage="pending")
    writer = SqliteUsageWriter(store, "s-test", PRICES)
    assert run(writer.open("adopt")).coverage == "pending"  # adopted as it is, never reset
    with pytest.raises(PersistError):
        run(writer.open("fresh"))  # a complete-zero basis belongs to a fresh session only


def test_an_unreported_resolution_is_unknown_coverage(store: HistoryStore) -> None:
    no_usage = {"chunks": [{"type": "error", "error": {"kind": "bad_request", "message": "refused"}}]}
    h = _session(store, [no_usage])

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    assert _ledger(store) == [("turn", "unknown", 0)]
    assert _totals(store).coverage == "unknown"


def test_a_schema_1_file_is_migrated_in_place(db_path: Path) -> None:
    h_store = HistoryStore.open(db_path)
    h = make_session(calls=[text_call("one")], persister=SqlitePersister(h_store))

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("first")

    run(scenario())
    h_store.close()
    raw = sqlite3.connect(db_path)
    raw.execute("DROP TABLE session_usage")
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    readonly = HistoryStore.open_readonly(db_path)  # a read-only open of schema 1 never migrates
    assert len(readonly.load_messages("s-test")) == 2
    readonly.close()
    with HistoryStore.open(db_path) as reopened:
        assert len(reopened.load_messages("s-test")) == 2
        assert reopened.usage_read("s-test", lambda db: usage_totals(db, "s-test")) == UsageTotals()
    raw = sqlite3.connect(db_path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    raw.close()


def test_usage_of_an_unknown_session_is_refused(store: HistoryStore) -> None:
    writer = SqliteUsageWriter(store, "missing", PRICES)
    with pytest.raises(StoreError):
        run(writer.open("fresh"))


def test_a_failed_compaction_keeps_its_pass_in_the_ledger_and_the_cost_rows(store: HistoryStore) -> None:
    from relavium_reference._model.invocation import ModelInfo

    empty_pass = {
        "chunks": [{"type": "stop", "stopReason": "stop", "usage": {"inputTokens": 20, "outputTokens": 2}}]
    }
    h = _session(
        store,
        [text_call("one"), text_call("two"), empty_pass],
        models={"model-a": ModelInfo(context_window=100000)},
    )

    async def scenario() -> Any:
        await h.session.start()
        await h.session.send_message("first")
        await h.session.send_message("second")
        return await h.session.compact()

    result = run(scenario())
    assert result.kind == "failed"
    # two turns (10 in / 5 out: 80 each), then the engaged pass (20 in / 2 out: 80)
    assert _ledger(store) == [("turn", "resolved", 80), ("turn", "resolved", 80), ("summary", "resolved", 80)]
    (row,) = store.load_costs("s-test")
    assert (row.cost_microcents, row.call_count, row.unpriced_calls) == (240, 3, 0)
    assert _totals(store).amount_microcents == store.load_session("s-test").total_cost_microcents == 240
