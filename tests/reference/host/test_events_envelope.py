"""The event envelope: per-session sequence from 0 without gaps, UTC timestamps, started echoes context."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

import pytest
from tests.reference.enginekit import make_session, run, text_call, tool_call

from relavium_reference import SessionContext
from relavium_reference._host.stamper import EventStamper, format_timestamp
from relavium_reference._model.events import SessionTurnStarted


def test_sequence_starts_at_zero_and_has_no_gaps() -> None:
    h = make_session(calls=[text_call("a"), tool_call("c", "echo"), text_call("b")])

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("1")
        await h.session.send_message("2")
        await h.session.cancel()

    run(scenario())
    assert [e.sequence_number for e in h.events] == list(range(len(h.events)))
    assert {e.session_id for e in h.events} == {"s-test"}


def test_started_echoes_the_context_verbatim_including_variables() -> None:
    context = SessionContext.model_validate(
        {
            "workingDir": "/w",
            "gitRef": "main",
            "variables": {"team": "blue"},
            "selection": {"file": "a.py", "startLine": 2, "endLine": 4},
        }
    )
    h = make_session(calls=[], context=context)
    run(h.session.start())
    [started] = h.events
    assert started.to_wire()["context"] == {
        "workingDir": "/w",
        "gitRef": "main",
        "variables": {"team": "blue"},
        "selection": {"file": "a.py", "startLine": 2, "endLine": 4},
        "fsScopeTier": "sandboxed",
    }
    assert started.to_wire()["agentRef"] == "helper"
    assert started.to_wire()["model"] == "model-a"


def test_timestamps_are_utc_iso_8601() -> None:
    assert format_timestamp(datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)) == "2026-01-02T03:04:05.678Z"
    h = make_session(calls=[])
    run(h.session.start())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", h.events[0].timestamp)


def test_a_failed_stamp_does_not_advance_the_counter() -> None:
    delivered: list[object] = []

    async def sink(event: object) -> None:
        delivered.append(event)

    class Clock:
        def now(self) -> datetime:
            return datetime(2026, 1, 1, tzinfo=UTC)

    async def scenario() -> None:
        stamper = EventStamper("s", sink, Clock())
        with pytest.raises(Exception):  # noqa: B017 - any validation failure
            await stamper.emit(SessionTurnStarted, unexpected_field=1)
        await stamper.emit(SessionTurnStarted)

    asyncio.run(scenario())
    assert [e.sequence_number for e in delivered] == [0]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "bad",
    [
        {"workingDir": ""},
        {"workingDir": "/w", "fsScopeTier": "everything"},
        {"workingDir": "/w", "selection": {"file": "a", "startLine": 5, "endLine": 4}},
        {"workingDir": "/w", "variables": {"k": 1}},
        {"workingDir": "/w", "apiKey": "x"},
    ],
)
def test_context_refuses_bad_input(bad: dict[str, object]) -> None:
    from relavium_reference import InvalidInputError, parse_strict

    with pytest.raises(InvalidInputError):
        parse_strict(SessionContext, bad)


def test_context_defaults_to_sandboxed() -> None:
    assert SessionContext(working_dir="/w").fs_scope_tier.value == "sandboxed"
