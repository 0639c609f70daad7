"""The hard turn cap: default, overrides, loud refusal without egress, only engaged turns use a slot."""

from __future__ import annotations

import pytest
from tests.reference.enginekit import error_call, make_session, run, text_call

from relavium_reference import ErrorCode, InvalidInputError, SessionStopReason
from relavium_reference._host.session import DEFAULT_SESSION_MAX_TURNS, resolve_max_turns


@pytest.mark.parametrize(("given", "resolved"), [(None, 50), (0, 50), (1, 1), (7, 7)])
def test_zero_or_absent_means_the_default(given: int | None, resolved: int) -> None:
    assert DEFAULT_SESSION_MAX_TURNS == 50
    assert resolve_max_turns(given) == resolved


def test_negative_cap_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        make_session(max_turns=-1)


def test_send_past_the_cap_ends_loudly_with_no_provider_request() -> None:
    h = make_session(calls=[text_call("a"), text_call("b"), text_call("never")], max_turns=2)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return [await h.session.send_message(t) for t in ("1", "2", "3")]

    results = run(scenario())
    assert [r.status for r in results] == ["completed", "completed", "failed"]
    assert results[2].error is not None
    assert results[2].error.code is ErrorCode.TURN_LIMIT
    assert len(h.provider.requests) == 2
    last = h.of_type("session:turn_completed")[-1]
    assert last.stop_reason is SessionStopReason.ERROR  # type: ignore[union-attr]
    assert (last.tokens_used.input, last.tokens_used.output) == (0, 0)  # type: ignore[union-attr]
    assert h.types(session_only=True)[-2:] == ["session:turn_started", "session:turn_completed"]


def test_default_cap_stops_the_fifty_first_turn() -> None:
    h = make_session(calls=[text_call(str(i)) for i in range(51)])

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return [await h.session.send_message(str(i)) for i in range(51)]

    results = run(scenario())
    assert [r.status for r in results].count("completed") == 50
    assert results[50].error is not None
    assert results[50].error.code is ErrorCode.TURN_LIMIT
    assert h.provider.remaining == 1


def test_engaged_failed_and_aborted_turns_use_a_slot() -> None:
    h = make_session(calls=[error_call("auth"), text_call("x")], max_turns=1)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return [await h.session.send_message(t) for t in ("1", "2")]

    results = run(scenario())
    assert results[0].error is not None
    assert results[0].error.code is ErrorCode.PROVIDER_AUTH
    assert results[1].error is not None
    assert results[1].error.code is ErrorCode.TURN_LIMIT
    assert h.session.turns_used == 1


def test_refusal_before_any_provider_invocation_uses_no_slot() -> None:
    def resolver(_provider, _model):  # type: ignore[no-untyped-def]
        raise LookupError("no credential")

    h = make_session(calls=[], resolver=resolver, max_turns=1)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return [await h.session.send_message(t) for t in ("1", "2")]

    results = run(scenario())
    assert all(r.status == "failed" for r in results)
    assert all(r.error is not None and r.error.code is ErrorCode.INTERNAL for r in results)
    assert h.session.turns_used == 0
    assert [c.tokens_used.input for c in h.of_type("session:turn_completed")] == [0, 0]  # type: ignore[union-attr]


def test_cap_refusal_itself_uses_no_slot() -> None:
    h = make_session(calls=[text_call("a")], max_turns=1)

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        for t in ("1", "2", "3"):
            await h.session.send_message(t)

    run(scenario())
    assert h.session.turns_used == 1
