"""A session persisted in history.db: atomic turn commits, costs of uncommitted turns, the latch, resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.reference.enginekit import (
    AGENT,
    GatedProvider,
    error_call,
    gated_reply,
    make_session,
    run,
    text_call,
    tool_call,
)

from relavium_reference import (
    AgentSession,
    ErrorCode,
    ScriptedProvider,
    SessionContext,
    SessionDeps,
    SessionStateCode,
    SessionStateError,
    TurnPolicy,
)
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._host.persister import SqlitePersister
from relavium_reference._model.commands import CommandFailed
from relavium_reference._model.errors import PersistError
from relavium_reference._rules.resume import SessionResumeState, reconstruct_session_state


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = HistoryStore.open(tmp_path / "state" / "history.db")
    yield opened
    opened.close()


def _persisted(store: HistoryStore, calls: list[dict[str, Any]], **deps: Any):  # type: ignore[no-untyped-def]
    return make_session(calls=calls, persister=SqlitePersister(store), **deps)


def _rows(store: HistoryStore, session_id: str = "s-test") -> list[tuple[str, list[str]]]:
    return [(m.role, [p.type for p in m.content]) for m in store.load_messages(session_id)]


def test_start_persists_the_session_row(store: HistoryStore) -> None:
    h = _persisted(store, [])
    run(h.session.start())
    record = store.load_session("s-test")
    assert record.agent_slug == "helper"
    assert record.context.working_dir == "."


def test_a_completed_turn_commits_user_structure_and_terminal(store: HistoryStore) -> None:
    h = _persisted(
        store, [tool_call("c1", "echo", '{"secret": "arg-value"}', preamble="Let me."), text_call("done")]
    )

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("go")

    run(scenario())
    assert _rows(store) == [
        ("user", ["text"]),
        ("assistant", ["text", "tool_call"]),
        ("tool", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    assert "arg-value" not in str([m.to_wire() for m in store.load_messages("s-test")])
    assert [m.sequence_number for m in store.load_messages("s-test")] == [0, 1, 2, 3]
    record = store.load_session("s-test")
    assert (record.total_input_tokens, record.total_output_tokens) == (17, 8)


def test_an_empty_final_still_writes_a_terminal_text_row(store: HistoryStore) -> None:
    h = _persisted(store, [text_call("")])

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("say nothing")

    run(scenario())
    messages = store.load_messages("s-test")
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].content[0].text == ""  # type: ignore[union-attr]


def test_errors_and_aborts_commit_no_transcript_but_record_cost(store: HistoryStore) -> None:
    provider = GatedProvider([gated_reply()])
    aborted = make_session(provider, persister=SqlitePersister(store), session_id="s-abort")
    failing = _persisted(store, [error_call("overloaded", after_text="partial")], session_id="s-fail")

    async def scenario() -> None:
        await aborted.session.start()
        send = asyncio.create_task(aborted.session.send_message("x"))
        await provider.waiting.wait()
        aborted.session.abort()
        await send
        await failing.session.start()
        await failing.session.send_message("y")

    run(scenario())
    assert store.load_messages("s-abort") == ()
    assert store.load_messages("s-fail") == ()
    assert [c.call_count for c in store.load_costs("s-abort")] == [1]
    assert [c.call_count for c in store.load_costs("s-fail")] == [1]


class _FailingPersister(SqlitePersister):
    """A classified, readable commit failure (the store's own PersistError)."""

    async def commit_turn(self, session_id: str, turn: Any) -> None:
        raise PersistError("disk full")


class _RawFailingPersister(SqlitePersister):
    """An opaque commit failure: not the store's classified error (KD-MSG-6)."""

    async def commit_turn(self, session_id: str, turn: Any) -> None:
        raise OSError("disk full")


def test_a_raw_commit_failure_rejects_after_the_fixed_terminal(store: HistoryStore) -> None:
    h = make_session(calls=[text_call("reply")], persister=_RawFailingPersister(store))

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("one")

    with pytest.raises(OSError, match="disk full"):
        run(scenario())
    terminal = [e for e in h.events if e.type == "session:turn_completed"]
    assert len(terminal) == 1
    assert terminal[0].error is not None
    assert terminal[0].error.code is ErrorCode.INTERNAL
    assert h.session.exchanges == ()
    assert store.load_messages("s-test") == ()


def test_a_failed_commit_latches_the_session(store: HistoryStore) -> None:
    h = make_session(
        calls=[text_call("reply"), text_call("never")],
        persister=_FailingPersister(store),
        allowed_commands=("echo",),
    )

    async def yes(_request: object) -> bool:
        return True

    h.session.set_turn_policy(TurnPolicy(confirm=yes))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        first = await h.session.send_message("one")
        second = await h.session.send_message("two")
        command = await h.session.run_user_command("echo", ["hi"])
        return first, second, command

    first, second, command = run(scenario())
    assert first.status == "failed"
    assert first.error is not None
    assert first.error.code is ErrorCode.INTERNAL
    assert first.error.retryable is False
    assert h.session.exchanges == ()  # the reply is not installed
    assert h.session.turns_used == 1  # the engaged turn is counted once
    assert second.status == "failed"
    assert len(h.provider.requests) == 1  # no provider attempt after the latch
    assert isinstance(command, CommandFailed)
    assert store.load_messages("s-test") == ()


def _resume(store: HistoryStore, session_id: str, calls: list[dict[str, Any]], **deps: Any):  # type: ignore[no-untyped-def]
    record, messages = store.load_full(session_id)
    state = reconstruct_session_state(record, messages)
    provider = ScriptedProvider({"calls": calls})
    events: list[Any] = []

    async def sink(event: Any) -> None:
        events.append(event)

    session = AgentSession.resume(
        agent=AGENT,
        context=record.context,
        deps=SessionDeps(
            resolve_provider=lambda _p, _m: provider, emit=sink, persister=SqlitePersister(store), **deps
        ),
        state=state,
        session_id=session_id,
    )
    return session, provider, events


def test_resume_continues_the_conversation_without_started(store: HistoryStore) -> None:
    h = _persisted(store, [tool_call("c1", "echo"), text_call("first answer"), text_call("")])

    async def first_life() -> None:
        await h.session.start()
        await h.session.send_message("q1")
        await h.session.send_message("q2")

    run(first_life())
    session, provider, events = _resume(store, "s-test", [text_call("third")])

    async def second_life() -> None:
        await session.send_message("q3")

    run(second_life())
    assert "session:started" not in [e.type for e in events]
    messages = provider.requests[0].request["messages"]
    texts = [[p["text"] for p in m["content"]] for m in messages]
    assert texts == [["q1"], ["first answer"], ["q2", "q3"]]  # the empty final keeps its user alone
    assert session.turns_used == 3


def test_resume_honours_the_hard_cap_with_the_reconstructed_count(store: HistoryStore) -> None:
    h = _persisted(store, [text_call("a"), text_call("b")])

    async def first_life() -> None:
        await h.session.start()
        await h.session.send_message("1")
        await h.session.send_message("2")

    run(first_life())
    session, provider, _ = _resume(store, "s-test", [text_call("never")], max_turns=2)
    result = run(session.send_message("3"))
    assert result.error is not None
    assert result.error.code is ErrorCode.TURN_LIMIT
    assert provider.requests == []


def test_resume_refuses_an_invalid_state() -> None:
    state = SessionResumeState.model_validate(
        {
            "messages": [{"role": "assistant", "text": "orphan"}],
            "completedTurnSpans": [{"start": 0, "end": 1}],
            "turnCount": 1,
            "cumulativeCostMicrocents": 0,
        }
    )
    with pytest.raises(SessionStateError) as info:
        AgentSession.resume(
            agent=AGENT,
            context=SessionContext(working_dir="."),
            deps=SessionDeps(resolve_provider=lambda _p, _m: None, emit=lambda _e: None),  # type: ignore[arg-type,return-value]
            state=state,
            session_id="x",
        )
    assert info.value.code is SessionStateCode.INVALID_RESUME_STATE
