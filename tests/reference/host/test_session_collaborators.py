"""The session's collaborators driven through their declared ports alone, with no session behind them.

Each collaborator reaches its session only through its ports (``_host/session_wiring.py`` builds them
for the real session); here the ports are stubs that record what was asked, so each test shows what a
collaborator reads, moves and leaves alone on one path.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from relavium_reference._host.auto_compaction import AutoCompaction, AutoCompactionPorts
from relavium_reference._host.session_compaction import CompactionPorts, SessionCompactions
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._host.turn_books import BooksPorts, TurnBooks
from relavium_reference._model.errors import SessionStateError
from relavium_reference._model.history_results import MemoryPolicyRefusal, NothingToCompact
from relavium_reference._model.shapes import MemoryNone, MemoryPolicySpec
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import SessionStopReason
from relavium_reference._rules.lifecycle import Outcome, SessionInput, SessionState, apply
from relavium_reference._rules.memory import resolve_memory
from relavium_reference._rules.projection import Exchange


class _Session:
    """The state a stub port reads, and a log of every port call that moves or asks something."""

    def __init__(self, state: SessionState, exchanges: list[Exchange], memory: MemoryPolicySpec) -> None:
        self.state = state
        self.exchanges = exchanges
        self.memory = memory
        self.calls: list[str] = []

    def enter(self, event: SessionInput) -> Outcome:
        self.calls.append(f"enter {event.value}")
        outcome = apply(self.state, event)
        self.state = outcome.next_state
        return outcome

    def unexpected(self, name: str) -> Any:
        def call(*_args: Any) -> Any:
            raise AssertionError(f"the collaborator used {name} on this path")

        return call


def _compaction_ports(session: _Session) -> CompactionPorts:
    return CompactionPorts(
        state=lambda: session.state,
        enter=session.enter,
        memory=lambda: session.memory,
        exchanges=lambda: session.exchanges,
        usage=session.unexpected("usage"),
        latch=session.unexpected("latch"),
        stamper=session.unexpected("stamper"),
        job=session.unexpected("job"),
        run=session.unexpected("run"),
    )


def test_compact_with_nothing_to_fold_moves_through_history_and_runs_nothing() -> None:
    session = _Session(SessionState.IDLE, [Exchange(user="q", assistant="a")], resolve_memory(None))
    result = asyncio.run(SessionCompactions(_compaction_ports(session)).compact())
    assert result == NothingToCompact()
    assert session.calls == [
        f"enter {SessionInput.COMPACT.value}",
        f"enter {SessionInput.HISTORY_SETTLED.value}",
    ]
    assert session.state is SessionState.IDLE


def test_compact_under_a_policy_that_refuses_answers_the_refusal_before_anything_else() -> None:
    exchanges = [Exchange(user=f"q{i}", assistant=f"a{i}") for i in range(3)]
    session = _Session(SessionState.IDLE, exchanges, MemoryNone(type="none"))
    result = asyncio.run(SessionCompactions(_compaction_ports(session)).compact())
    assert isinstance(result, MemoryPolicyRefusal)
    assert session.state is SessionState.IDLE


def test_a_refused_lifecycle_step_changes_nothing() -> None:
    session = _Session(SessionState.CREATED, [], resolve_memory(None))
    with pytest.raises(SessionStateError):
        asyncio.run(SessionCompactions(_compaction_ports(session)).compact())
    assert session.state is SessionState.CREATED


def _auto_ports(session: _Session, *, allowed: bool) -> AutoCompactionPorts:
    names = ("agent", "deps", "plan", "history", "max_tokens_estimate", "advertised", "turn_setup")
    stubs = {name: session.unexpected(name) for name in names}
    return AutoCompactionPorts(
        **stubs,
        exchanges=lambda: session.exchanges,
        memory=lambda: session.memory,
        state=lambda: session.state,
        enter=session.enter,
        run_compaction=session.unexpected("run_compaction"),
        trim=session.unexpected("trim"),
        allowed=lambda: allowed,
        entry_windows=session.unexpected("entry_windows"),
        measurement=session.unexpected("measurement"),
        irreducible=session.unexpected("irreducible"),
        presend=session.unexpected("presend"),
    )


def test_presend_not_allowed_measures_nothing_and_sends_the_original_request() -> None:
    session = _Session(SessionState.STREAMING, [], resolve_memory(None))
    auto = AutoCompaction(_auto_ports(session, allowed=False))
    progress = TurnProgress()
    assert asyncio.run(auto.presend("hello", TurnPolicy(), progress)) is None
    assert not progress.presend_suppressed
    assert session.calls == []


@pytest.mark.parametrize("state", [SessionState.CANCELLED, SessionState.STREAMING])
def test_after_turn_outside_idle_does_nothing(state: SessionState) -> None:
    session = _Session(state, [], resolve_memory(None))
    asyncio.run(AutoCompaction(_auto_ports(session, allowed=True)).after_turn(TurnProgress(), TurnPolicy()))
    assert session.calls == []
    assert session.state is state


def test_books_without_a_persister_commit_trivially_and_record_nothing() -> None:
    session = _Session(SessionState.STREAMING, [], resolve_memory(None))
    books = TurnBooks(
        BooksPorts(
            session_id=lambda: "s-1",
            node_id=lambda: "agent",
            persister=lambda: None,
            given_writer=lambda: None,
            writer=lambda: None,
            interrupt=lambda: None,
            stamper=session.unexpected("stamper"),
            latch=session.unexpected("latch"),
            costs=session.unexpected("costs"),
            raw_failure=session.unexpected("raw_failure"),
        )
    )
    progress = TurnProgress()
    assert asyncio.run(books.commit("hi", TurnEnd(SessionStopReason.STOP, text="yes"), progress))
    assert asyncio.run(books.record_uncommitted(progress)) is None
    assert asyncio.run(books.finish_round(progress)) is None
    assert books.joint() is None
