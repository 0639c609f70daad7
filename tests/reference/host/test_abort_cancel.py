"""abort and cancel: idle no-ops, mid-turn endings, late abort, cancel wins, the only stream terminal."""

from __future__ import annotations

import asyncio

from tests.reference.enginekit import GatedProvider, gated_reply, make_session, run, text_call

from relavium_reference import SessionState, SessionStopReason


def test_abort_when_idle_is_a_noop() -> None:
    h = make_session(calls=[text_call("a")])

    async def scenario() -> None:
        await h.session.start()
        h.session.abort()
        await h.session.send_message("x")

    run(scenario())
    assert h.types(session_only=True) == ["session:started", "session:turn_started", "session:turn_completed"]
    assert h.session.state is SessionState.IDLE


def test_abort_mid_turn_ends_it_aborted_without_error_and_rolls_back() -> None:
    provider = GatedProvider([gated_reply("partial"), gated_reply("after")])
    h = make_session(provider)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        send = asyncio.create_task(h.session.send_message("first"))
        await provider.waiting.wait()
        provider.gate.set()  # deliver the text chunk
        await asyncio.sleep(0)
        await provider.waiting.wait()
        h.session.abort()
        aborted = await send
        provider.gate.set()
        follow = asyncio.create_task(h.session.send_message("second"))
        while not follow.done():
            provider.gate.set()
            await asyncio.sleep(0)
        return aborted, await follow

    aborted, follow = run(scenario())
    assert aborted.status == "aborted"
    assert aborted.error is None
    completed = h.of_type("session:turn_completed")
    assert completed[0].stop_reason is SessionStopReason.ABORTED  # type: ignore[union-attr]
    assert completed[0].error is None  # type: ignore[union-attr]
    assert follow.status == "completed"
    second_request = provider.requests[1]
    assert [m.content[0].text for m in second_request.messages] == ["second"]  # type: ignore[union-attr]
    assert "session:cancelled" not in h.types()
    assert h.session.turns_used == 2  # the aborted turn was engaged


def test_late_abort_after_the_turn_resolved_keeps_the_reply() -> None:
    h_events: list[str] = []
    holder: dict[str, object] = {}

    async def sink(event) -> None:  # type: ignore[no-untyped-def]
        h_events.append(event.type)
        if event.type == "cost:updated":  # the provider has finished: the turn has its reply
            holder["session"].abort()  # type: ignore[attr-defined]

    from tests.reference.enginekit import AGENT

    from relavium_reference import AgentSession, ScriptedProvider, SessionContext, SessionDeps

    provider = ScriptedProvider({"calls": [text_call("kept")]})
    session = AgentSession(
        agent=AGENT,
        context=SessionContext(working_dir="."),
        deps=SessionDeps(resolve_provider=lambda _p, _m: provider, emit=sink),
    )
    holder["session"] = session

    async def scenario():  # type: ignore[no-untyped-def]
        await session.start()
        return await session.send_message("q")

    result = run(scenario())
    assert result.status == "completed"
    assert result.text == "kept"
    assert session.exchanges[0].assistant == "kept"


def test_cancel_mid_turn_emits_only_cancelled() -> None:
    provider = GatedProvider([gated_reply()])
    h = make_session(provider)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        send = asyncio.create_task(h.session.send_message("x"))
        await provider.waiting.wait()
        await h.session.cancel()
        return await send

    result = run(scenario())
    assert result.status == "cancelled"
    assert h.types(session_only=True) == ["session:started", "session:turn_started", "session:cancelled"]
    assert h.types()[-1] == "session:cancelled"
    assert h.session.exchanges == ()


def test_concurrent_cancel_wins_over_abort() -> None:
    provider = GatedProvider([gated_reply()])
    h = make_session(provider)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        send = asyncio.create_task(h.session.send_message("x"))
        await provider.waiting.wait()
        h.session.abort()
        await h.session.cancel()
        return await send

    result = run(scenario())
    assert result.status == "cancelled"
    assert "session:turn_completed" not in h.types()
    assert h.types().count("session:cancelled") == 1


def test_cancel_is_idempotent_and_terminal() -> None:
    h = make_session(calls=[text_call("a")])

    async def scenario() -> None:
        await h.session.start()
        await h.session.cancel()
        await h.session.cancel()

    run(scenario())
    assert h.types().count("session:cancelled") == 1
    assert h.session.state is SessionState.CANCELLED


def test_sequence_numbers_stay_gap_free_across_an_abort() -> None:
    provider = GatedProvider([gated_reply()])
    h = make_session(provider)

    async def scenario() -> None:
        await h.session.start()
        send = asyncio.create_task(h.session.send_message("x"))
        await provider.waiting.wait()
        h.session.abort()
        await send
        await h.session.cancel()

    run(scenario())
    assert [e.sequence_number for e in h.events] == list(range(len(h.events)))
