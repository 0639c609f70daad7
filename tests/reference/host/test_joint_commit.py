"""A durable turn's last resolution rides in the turn's own commit (``_host/joint_commit``, KD-USE-1).

With the reference host's default writer, a text turn commits twice: the pending record before the call
(durable before egress) and then, in one transaction, the attempt's resolution, the turn's rows, its cost
and the totals.  What a host sees does not change: the same events in the same order, with the same
money, as with a writer that resolves each attempt on its own.  A joint commit that fails rolls back
whole: the turn is refused, and the billed attempt is resolved on its own afterwards (or stays pending
when that write fails too).  Real SQLite throughout.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.reference.enginekit import make_session, run, text_call, tool_call

from relavium_reference import ModelPrice, SqlitePersister, SqliteUsageWriter
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._model.vocabulary import ErrorCode

PRICES = {"model-a": ModelPrice(input_microcents=3, output_microcents=10)}
CALLS = [text_call("one"), tool_call("c1", "echo"), text_call("two"), text_call("three")]


def _open(path: Path) -> HistoryStore:
    return HistoryStore.open(path)


def _commits(store: HistoryStore) -> list[str]:
    seen: list[str] = []
    store._conn.set_trace_callback(  # type: ignore[union-attr]  # the store's own connection
        lambda statement: seen.append(statement) if statement == "COMMIT" else None
    )
    return seen


def _rows(store: HistoryStore) -> dict[str, Any]:
    def read(db: sqlite3.Connection) -> dict[str, Any]:
        return {
            "ledger": [
                tuple(row)
                for row in db.execute(
                    "SELECT ordinal, state, input_tokens, output_tokens, cost_microcents, priced "
                    "FROM session_usage ORDER BY ordinal"
                )
            ],
            "costs": [
                tuple(row)
                for row in db.execute(
                    "SELECT model, input_tokens, output_tokens, cost_microcents, call_count, unpriced_calls "
                    "FROM session_costs"
                )
            ],
            "messages": [
                tuple(row)
                for row in db.execute(
                    "SELECT sequence_number, role, content, finish_reason FROM session_messages "
                    "ORDER BY sequence_number"
                )
            ],
            "totals": tuple(
                db.execute(
                    "SELECT total_input_tokens, total_output_tokens, total_cost_microcents "
                    "FROM agent_sessions"
                ).fetchone()
            ),
        }

    return store.usage_read("s-test", read)


def _public(events: list[Any]) -> list[tuple[Any, ...]]:
    """Each event's type, and the money of each ``cost:updated`` (ids and stamps differ between runs)."""
    out: list[tuple[Any, ...]] = []
    for event in events:
        if event.type == "cost:updated":
            out.append(
                (
                    event.type,
                    event.cost_microcents,
                    event.cumulative_cost_microcents,
                    event.priced,
                    event.attempt_number,
                )
            )
        else:
            out.append((event.type,))
    return out


def _three_turns(store: HistoryStore, *, explicit: bool) -> tuple[list[Any], list[int]]:
    writer = SqliteUsageWriter(store, "s-test", PRICES) if explicit else None
    h = make_session(calls=CALLS, persister=SqlitePersister(store), prices=PRICES, usage_writer=writer)
    commits = _commits(store)
    per_turn: list[int] = []

    async def scenario() -> None:
        await h.session.start()
        for text in ("first", "second", "third"):
            before = len(commits)
            assert (await h.session.send_message(text)).status == "completed"
            per_turn.append(len(commits) - before)

    run(scenario())
    return h.events, per_turn


def test_a_text_turn_commits_twice_and_a_tool_round_adds_two(tmp_path: Path) -> None:
    store = _open(tmp_path / "joint" / "history.db")
    try:
        _events, per_turn = _three_turns(store, explicit=False)
    finally:
        store.close()
    # pending + joint (resolution, rows, cost) | pending, round resolution, pending + joint | as the first
    assert per_turn == [2, 4, 2]


def test_the_joint_commit_changes_no_event_and_no_row(tmp_path: Path) -> None:
    joint, apart = _open(tmp_path / "joint" / "history.db"), _open(tmp_path / "apart" / "history.db")
    try:
        joint_events, joint_commits = _three_turns(joint, explicit=False)
        apart_events, apart_commits = _three_turns(apart, explicit=True)  # resolves every attempt alone
        assert _public(joint_events) == _public(apart_events)
        assert _rows(joint) == _rows(apart)
    finally:
        joint.close()
        apart.close()
    assert (sum(joint_commits), sum(apart_commits)) == (8, 11)
    assert [e for e in _public(joint_events) if e[0] == "cost:updated"] == [
        ("cost:updated", 80, 80, True, 1),
        ("cost:updated", 51, 131, True, 1),  # the tool round, resolved before its dispatch
        ("cost:updated", 80, 211, True, 2),  # the round's final attempt, resolved in the turn's commit
        ("cost:updated", 80, 291, True, 1),
    ]


def _refuse(path: Path, table: str, when: str) -> None:
    db = sqlite3.connect(path)
    db.execute(f"CREATE TRIGGER refuse_{table} BEFORE {when} ON {table} BEGIN SELECT RAISE(ABORT, 'no'); END")
    db.commit()
    db.close()


def _second_turn_refused(tmp_path: Path, *refusals: tuple[str, str]) -> tuple[Any, Any, dict[str, Any]]:
    path = tmp_path / "state" / "history.db"
    store = _open(path)
    h = make_session(
        calls=[text_call("one"), text_call("two"), text_call("never")],
        persister=SqlitePersister(store),
        prices=PRICES,
    )

    async def scenario() -> tuple[Any, Any]:
        await h.session.start()
        await h.session.send_message("first")
        for table, when in refusals:
            _refuse(path, table, when)
        failed = await h.session.send_message("second")
        return failed, await h.session.send_message("third")

    try:
        failed, after = run(scenario())
        rows = _rows(store)
    finally:
        store.close()
    return failed, (after, h), rows


def test_a_joint_commit_failing_mid_transaction_rolls_back_whole_and_the_billed_attempt_still_counts(
    tmp_path: Path,
) -> None:
    # the resolution runs first in the transaction; the turn's first row is then refused
    failed, (after, h), rows = _second_turn_refused(tmp_path, ("session_messages", "INSERT"))
    assert failed.status == "failed"
    assert failed.error.code is ErrorCode.INTERNAL
    assert after.status == "failed"  # latched: no later egress
    assert rows["messages"] == [(0, "user", "first", None), (1, "assistant", "one", "stop")]
    assert rows["costs"] == [("model-a", 10, 5, 80, 1, 0)]  # the refused turn wrote no cost row
    assert rows["totals"] == (10, 5, 80)
    # the billed attempt is resolved on its own after the rollback (the ledger owns its money)
    assert rows["ledger"] == [(0, "resolved", 10, 5, 80, 1), (1, "resolved", 10, 5, 80, 1)]
    assert _public(h.events).count(("cost:updated", 80, 160, True, 1)) == 1


def test_when_the_resolution_alone_fails_too_the_attempt_stays_pending_and_nothing_is_published(
    tmp_path: Path,
) -> None:
    failed, (after, h), rows = _second_turn_refused(
        tmp_path, ("session_messages", "INSERT"), ("session_usage", "UPDATE")
    )
    assert failed.status == "failed"
    assert after.status == "failed"
    # had the resolution committed apart from the refused rows, this row would read "resolved"
    assert rows["ledger"] == [(0, "resolved", 10, 5, 80, 1), (1, "pending", 0, 0, 0, 0)]
    assert rows["costs"] == [("model-a", 10, 5, 80, 1, 0)]
    assert rows["totals"] == (10, 5, 80)
    assert [e for e in _public(h.events) if e[0] == "cost:updated"] == [("cost:updated", 80, 80, True, 1)]


@pytest.mark.parametrize("explicit", [False, True])
def test_an_explicit_writer_or_a_changed_commit_never_joins(tmp_path: Path, explicit: bool) -> None:
    store = _open(tmp_path / "state" / "history.db")

    class OwnCommit(SqlitePersister):
        async def commit_turn(self, session_id: str, turn: Any) -> None:
            await super().commit_turn(session_id, turn)

    persister = SqlitePersister(store) if explicit else OwnCommit(store)
    writer = SqliteUsageWriter(store, "s-test", PRICES) if explicit else None
    h = make_session(calls=[text_call("one")], persister=persister, prices=PRICES, usage_writer=writer)
    commits = _commits(store)

    async def scenario() -> int:
        await h.session.start()
        before = len(commits)
        await h.session.send_message("first")
        return len(commits) - before

    try:
        assert run(scenario()) == 3  # pending, resolution, turn: each alone
    finally:
        store.close()


def _failing_sink(h: Any, *, fail_on: str = "cost:updated") -> None:
    """The session's event sink fails once, on the first ``fail_on`` (an observer error, KD-MSG-6)."""
    armed = [True]

    async def sink(event: Any) -> None:
        h.events.append(event)
        if event.type == fail_on and armed[0]:
            armed[0] = False
            raise RuntimeError("observer broke")

    h.session._stamper._sink = sink


def _terminals(events: list[Any]) -> list[tuple[str, Any]]:
    return [(e.type, e.error.code if e.error else None) for e in events if e.type == "session:turn_completed"]


def _sink_fails_on_the_first_cost(store: HistoryStore, *, explicit: bool, refuse: Path | None) -> Any:
    writer = SqliteUsageWriter(store, "s-test", PRICES) if explicit else None
    h = make_session(
        calls=[text_call("one"), text_call("two")],
        persister=SqlitePersister(store),
        prices=PRICES,
        usage_writer=writer,
    )
    _failing_sink(h)

    async def scenario() -> tuple[str, str]:
        await h.session.start()
        if refuse is not None:
            _refuse(refuse, "session_messages", "INSERT")
        with pytest.raises(RuntimeError, match="observer broke"):
            await h.session.send_message("first")
        return "raised", (await h.session.send_message("second")).status

    return run(scenario()), h


def test_a_sink_failing_on_the_cost_of_a_durable_joint_turn_ends_it_as_with_a_separate_writer(
    tmp_path: Path,
) -> None:
    joint, apart = _open(tmp_path / "joint" / "history.db"), _open(tmp_path / "apart" / "history.db")
    try:
        joint_out, jh = _sink_fails_on_the_first_cost(joint, explicit=False, refuse=None)
        apart_out, ah = _sink_fails_on_the_first_cost(apart, explicit=True, refuse=None)
        joint_rows = _rows(joint)
    finally:
        joint.close()
        apart.close()
    assert joint_out == apart_out == ("raised", "completed")
    assert _public(jh.events) == _public(ah.events)  # the INTERNAL terminal follows the failed cost
    assert _terminals(jh.events) == [
        ("session:turn_completed", ErrorCode.INTERNAL),
        ("session:turn_completed", None),
    ]
    assert jh.session._turns_used == ah.session._turns_used == 2  # the failed turn used its slot
    # the joint turn was already durable when the sink failed: memory holds what the store holds
    assert [m[1:3] for m in joint_rows["messages"]][:2] == [("user", "first"), ("assistant", "one")]
    assert [x.user for x in jh.session.exchanges] == ["first", "second"]


def test_a_sink_failing_on_the_cost_after_a_refused_joint_commit_still_gets_its_terminal_and_cost_row(
    tmp_path: Path,
) -> None:
    joint_path, apart_path = tmp_path / "joint" / "history.db", tmp_path / "apart" / "history.db"
    joint, apart = _open(joint_path), _open(apart_path)
    try:
        _out, jh = _sink_fails_on_the_first_cost(joint, explicit=False, refuse=joint_path)
        _out, ah = _sink_fails_on_the_first_cost(apart, explicit=True, refuse=apart_path)
        joint_rows, apart_rows = _rows(joint), _rows(apart)
    finally:
        joint.close()
        apart.close()
    assert (
        _terminals(jh.events)[0] == _terminals(ah.events)[0] == ("session:turn_completed", ErrorCode.INTERNAL)
    )
    assert joint_rows["costs"] == apart_rows["costs"] == [("model-a", 10, 5, 80, 1, 0)]
    assert joint_rows["ledger"][0] == apart_rows["ledger"][0] == (0, "resolved", 10, 5, 80, 1)


class _CancelCallerAtStop:
    """A provider whose final stop chunk is followed at once by the caller's cancellation."""

    def __init__(self) -> None:
        self.caller: Any = None

    def stream(self, request: Any) -> Any:
        return self._play()

    async def _play(self) -> Any:
        from relavium_reference._model.llm import StopChunk, TextDelta, Usage

        yield TextDelta(text="hi")
        asyncio.get_running_loop().call_soon(self.caller.cancel)
        yield StopChunk(stop_reason="stop", usage=Usage(input_tokens=10, output_tokens=5))


def test_a_caller_cancelled_before_the_joint_commit_still_resolves_the_held_back_attempt(
    tmp_path: Path,
) -> None:
    store = _open(tmp_path / "state" / "history.db")
    provider = _CancelCallerAtStop()
    h = make_session(provider, persister=SqlitePersister(store), prices=PRICES)

    async def scenario() -> None:
        await h.session.start()
        provider.caller = asyncio.ensure_future(h.session.send_message("x"))
        with pytest.raises(asyncio.CancelledError):
            await provider.caller

    try:
        run(scenario())
        rows = _rows(store)
    finally:
        store.close()
    # as a separate writer leaves it (its write was under way in the turn): resolved, not pending
    assert rows["ledger"] == [(0, "resolved", 10, 5, 80, 1)]
    assert rows["messages"] == []
    assert [e for e in _public(h.events) if e[0] == "cost:updated"] == []  # the caller is gone


def test_a_held_back_attempt_is_resolved_on_its_own_when_the_writer_no_longer_joins(tmp_path: Path) -> None:
    store = _open(tmp_path / "state" / "history.db")
    h = make_session(calls=[text_call("one")], persister=SqlitePersister(store), prices=PRICES)
    joins = h.session._joint
    calls = [0]

    def joint_once() -> Any:  # the turn's setup defers; by its commit the writer no longer joins
        calls[0] += 1
        return joins() if calls[0] == 1 else None

    h.session._joint = joint_once  # type: ignore[method-assign]

    async def scenario() -> str:
        await h.session.start()
        return (await h.session.send_message("first")).status

    try:
        assert run(scenario()) == "completed"
        rows = _rows(store)
    finally:
        store.close()
    assert rows["ledger"] == [(0, "resolved", 10, 5, 80, 1)]
    assert rows["costs"] == [("model-a", 10, 5, 80, 1, 0)]
    assert [e for e in _public(h.events) if e[0] == "cost:updated"] == [("cost:updated", 80, 80, True, 1)]


def test_a_default_writer_whose_class_changes_resolved_never_joins(tmp_path: Path) -> None:
    store = _open(tmp_path / "state" / "history.db")
    seen: list[str] = []

    class OwnResolved(SqliteUsageWriter):
        async def resolved(self, record: Any) -> Any:
            seen.append(record.model)
            return await super().resolved(record)

    class SuppliesOwnResolved(SqlitePersister):
        def usage_writer(self, session_id: str, prices: Any) -> Any:
            return OwnResolved(store, session_id, prices)

    h = make_session(calls=[text_call("one")], persister=SuppliesOwnResolved(store), prices=PRICES)
    commits = _commits(store)

    async def scenario() -> int:
        await h.session.start()
        before = len(commits)
        await h.session.send_message("first")
        return len(commits) - before

    try:
        assert run(scenario()) == 3  # pending, resolution (through the subclass), turn
    finally:
        store.close()
    assert seen == ["model-a"]
