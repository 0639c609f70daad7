"""The lifecycle table, walked pair by pair: first as data, then through a real AgentSession."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from tests.reference.enginekit import GatedProvider, gated_reply, make_session, run

from relavium_reference import InvalidInputError, SessionStateCode, SessionStateError, TurnPolicy
from relavium_reference._model.messages import AgentSessionRecord
from relavium_reference._rules.lifecycle import (
    TRANSITIONS,
    Effect,
    SessionInput,
    SessionState,
    apply,
    render_markdown,
)
from relavium_reference._rules.projection import Exchange

ROOT = Path(__file__).resolve().parents[3]

S, In = SessionState, SessionInput

# The documented outcome of every public input, per state: a refusal code, or the state that follows.
EXPECTED: dict[SessionState, dict[SessionInput, SessionStateCode | SessionState]] = {
    S.CREATED: {
        In.START: S.IDLE,
        In.SEND: SessionStateCode.NOT_STARTED,
        In.ABORT: S.CREATED,
        In.CANCEL: S.CANCELLED,
        In.SET_TURN_POLICY: S.CREATED,
        In.RUN_USER_COMMAND: SessionStateCode.NOT_STARTED,
        In.EXPORT: SessionStateCode.NOT_STARTED,
        In.TRIM: SessionStateCode.NOT_STARTED,
        In.COMPACT: SessionStateCode.NOT_STARTED,
    },
    S.IDLE: {
        In.START: SessionStateCode.ALREADY_STARTED,
        In.SEND: S.STREAMING,
        In.ABORT: S.IDLE,
        In.CANCEL: S.CANCELLED,
        In.SET_TURN_POLICY: S.IDLE,
        In.RUN_USER_COMMAND: S.COMMAND,
        In.EXPORT: S.IDLE,
        In.TRIM: S.HISTORY,
        In.COMPACT: S.HISTORY,
    },
    S.STREAMING: {
        In.START: SessionStateCode.ALREADY_STARTED,
        In.SEND: SessionStateCode.BUSY,
        In.ABORT: S.STREAMING,
        In.CANCEL: S.CANCELLED,
        In.SET_TURN_POLICY: S.STREAMING,
        In.RUN_USER_COMMAND: SessionStateCode.BUSY,
        In.EXPORT: SessionStateCode.BUSY,
        In.TRIM: SessionStateCode.BUSY,
        In.COMPACT: SessionStateCode.BUSY,
    },
    S.COMMAND: {
        In.START: SessionStateCode.ALREADY_STARTED,
        In.SEND: SessionStateCode.BUSY,
        In.ABORT: S.COMMAND,
        In.CANCEL: S.CANCELLED,
        In.SET_TURN_POLICY: S.COMMAND,
        In.RUN_USER_COMMAND: SessionStateCode.BUSY,
        In.EXPORT: SessionStateCode.BUSY,
        In.TRIM: SessionStateCode.BUSY,
        In.COMPACT: SessionStateCode.BUSY,
    },
    S.HISTORY: {
        In.START: SessionStateCode.ALREADY_STARTED,
        In.SEND: SessionStateCode.BUSY,
        In.ABORT: S.HISTORY,
        In.CANCEL: S.CANCELLED,
        In.SET_TURN_POLICY: S.HISTORY,
        In.RUN_USER_COMMAND: SessionStateCode.BUSY,
        In.EXPORT: SessionStateCode.BUSY,
        In.TRIM: SessionStateCode.BUSY,
        In.COMPACT: SessionStateCode.BUSY,
    },
    S.CANCELLED: {
        In.START: SessionStateCode.NOT_ACTIVE,
        In.SEND: SessionStateCode.NOT_ACTIVE,
        In.ABORT: S.CANCELLED,
        In.CANCEL: S.CANCELLED,
        In.SET_TURN_POLICY: S.CANCELLED,
        In.RUN_USER_COMMAND: SessionStateCode.NOT_ACTIVE,
        In.EXPORT: SessionStateCode.NOT_ACTIVE,
        In.TRIM: SessionStateCode.NOT_ACTIVE,
        In.COMPACT: SessionStateCode.NOT_ACTIVE,
    },
}

PUBLIC_INPUTS = [
    i for i in SessionInput if i not in (In.TURN_SETTLED, In.COMMAND_SETTLED, In.HISTORY_SETTLED)
]
PAIRS = [(state, event) for state in SessionState for event in PUBLIC_INPUTS]


def test_table_has_an_entry_for_every_state_and_input() -> None:
    assert set(TRANSITIONS) == {(s, i) for s in SessionState for i in SessionInput}


@pytest.mark.parametrize(("state", "event"), PAIRS)
def test_table_matches_documented_outcome(state: SessionState, event: SessionInput) -> None:
    expected = EXPECTED[state][event]
    if isinstance(expected, SessionStateCode):
        with pytest.raises(SessionStateError) as info:
            apply(state, event)
        assert info.value.code is expected
        assert info.value.state == state.value
    else:
        assert apply(state, event).next_state is expected


def test_cancelled_is_absorbing() -> None:
    for event in SessionInput:
        outcome = TRANSITIONS[(S.CANCELLED, event)]
        assert outcome.next_state is S.CANCELLED


def test_policy_is_inert_only_once_cancelled() -> None:
    for state in SessionState:
        effect = TRANSITIONS[(state, In.SET_TURN_POLICY)].effect
        assert effect is (Effect.INERT if state is S.CANCELLED else Effect.STORE_POLICY)


def test_lifecycle_doc_is_generated_from_the_table() -> None:
    assert (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8") == render_markdown()


class _HeldPersister:
    """A host whose transcript read waits at a gate: a trim stays in flight until the test opens it."""

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate
        self.armed = False  # only a trim reads through the gate; an export is refused at once

    async def create_session(self, record: AgentSessionRecord) -> None:
        self.record = record

    async def commit_turn(self, session_id: str, turn: object) -> None:
        return None

    async def record_cost(self, session_id: str, entry: object) -> None:
        return None

    async def append_marker(self, session_id: str, marker: object) -> None:
        return None

    async def load_transcript(self, session_id: str) -> tuple[AgentSessionRecord, tuple[()]]:
        if not self.armed:
            raise InvalidInputError("no transcript in this test host")
        await self.gate.wait()
        return self.record, ()


async def _session_in(state: SessionState) -> tuple[object, object]:
    """A real session driven into ``state``; returns (harness, release) where release ends held work."""
    provider = GatedProvider([gated_reply()])
    approval_gate = asyncio.Event()

    async def slow_confirm(_request: object) -> bool:
        await approval_gate.wait()
        return False

    load_gate = asyncio.Event()
    persister = _HeldPersister(load_gate)
    h = make_session(provider, allowed_commands=("true",), persister=persister)
    h.session.set_turn_policy(TurnPolicy(confirm=slow_confirm))  # holds any command at its approval
    background: list[asyncio.Task[object]] = []
    if state is not S.CREATED:
        await h.session.start()
    if state is S.STREAMING:
        background.append(asyncio.create_task(h.session.send_message("hi")))
        await provider.waiting.wait()
    elif state is S.COMMAND:
        background.append(asyncio.create_task(h.session.run_user_command("true")))
        while h.session.state is not S.COMMAND:
            await asyncio.sleep(0)
    h.session._exchanges = [Exchange("a", "b"), Exchange("c", "d")]  # two slots a trim can drop from
    if state is S.HISTORY:
        persister.armed = True
        background.append(asyncio.create_task(h.session.trim_history(2)))
        while h.session.state is not S.HISTORY:
            await asyncio.sleep(0)
    elif state is S.CANCELLED:
        await h.session.cancel()

    async def release() -> None:
        load_gate.set()
        approval_gate.set()
        provider.gate.set()
        if h.session.state is S.STREAMING:
            h.session.abort()
        for task in background:
            await task

    return h, release


async def _invoke(session: object, event: SessionInput) -> None:
    from relavium_reference import AgentSession

    assert isinstance(session, AgentSession)
    if event is In.START:
        await session.start()
    elif event is In.SEND:
        await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(session.send_message("x"))), 0.05)
    elif event is In.ABORT:
        session.abort()
    elif event is In.CANCEL:
        await session.cancel()
    elif event is In.SET_TURN_POLICY:
        session.set_turn_policy(session.turn_policy)
    elif event is In.EXPORT:
        with contextlib.suppress(InvalidInputError):  # this session has no persister to read from
            await session.export("unused.relavium.yaml")
    elif event is In.TRIM:
        persister = session._deps.persister
        assert isinstance(persister, _HeldPersister)
        persister.armed = True
        await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(session.trim_history(1))), 0.05)
    elif event is In.COMPACT:  # two slots, unknown windows: the acknowledgement holds it in flight
        from dataclasses import replace

        from relavium_reference._rules.projection import Exchange

        async def hold(_start: object) -> None:
            await asyncio.Event().wait()

        session._exchanges = [Exchange("q1", "a1"), Exchange("q2", "a2")]
        session._deps = replace(session._deps, on_compaction_start=hold)
        await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(session.compact())), 0.05)
    elif event is In.RUN_USER_COMMAND:
        await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(session.run_user_command("true"))), 0.05)


@pytest.mark.parametrize(("state", "event"), PAIRS)
def test_real_session_follows_the_table(state: SessionState, event: SessionInput) -> None:
    expected = EXPECTED[state][event]

    async def scenario() -> None:
        h, release = await _session_in(state)
        session = h.session  # type: ignore[attr-defined]
        assert session.state is state
        if isinstance(expected, SessionStateCode):
            with pytest.raises(SessionStateError) as info:
                await _invoke(session, event)
            assert info.value.code is expected
            assert session.state is state  # a refusal leaves the state unchanged
        else:
            with contextlib.suppress(TimeoutError):  # in flight: that is the state we look at
                await _invoke(session, event)
            assert session.state is expected
        await release()  # type: ignore[operator]
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()

    run(scenario())
