"""A tool round's usage write runs while the round's tools do (``_host/round_resolution.py``).

The writer here is played by the test: its ``resolved`` write waits on events the tools raise, so every
interleaving below is forced by events, never by time (the ``wait_for`` bounds only guard against a hang).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from tests.reference.enginekit import AGENT, make_session, run, text_call, tool_call

from relavium_reference import FunctionTool, ToolOutput, ToolRegistry
from relavium_reference._model.records import CostEntry
from relavium_reference._model.tools import ToolCallInfo
from relavium_reference._model.usage_writer import (
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)

HANG_GUARD = 30.0
TWO_TOOLS = AGENT.model_copy(update={"tools": ("first", "second")})


class _Writer:
    """A usage writer whose resolved write waits for ``release`` (and then fails when told to)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.release = asyncio.Event()
        self.failed = asyncio.Event()
        self.fail = fail
        self.resolved_calls = 0
        self.abandoned = False
        self.amount = 0

    async def open(self, basis: UsageBasis) -> UsageTotals:
        return UsageTotals()

    async def pending(self, record: UsagePending) -> None:
        return None

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        self.resolved_calls += 1
        if self.resolved_calls == 1:
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.abandoned = True
                raise
            if self.fail:
                self.failed.set()
                raise OSError("disk full")
        self.amount += 40
        return UsageSettled(
            cost_microcents=40, priced=True, totals=UsageTotals(amount_microcents=self.amount)
        )


class _Costs:
    """A persister that keeps only what the session hands it."""

    def __init__(self) -> None:
        self.costs: list[CostEntry] = []
        self.commits: list[Any] = []

    async def create_session(self, record: Any) -> None:
        return None

    async def commit_turn(self, session_id: str, turn: Any) -> None:
        self.commits.append(turn)

    async def record_cost(self, session_id: str, entry: CostEntry) -> None:
        self.costs.append(entry)

    async def append_marker(self, session_id: str, marker: Any) -> None:
        return None


def _round_of_two() -> dict[str, Any]:
    round_call = tool_call("call-1", "first")
    chunks = round_call["chunks"]
    chunks[3:3] = [
        {"type": "tool_call_start", "id": "call-2", "name": "second"},
        {"type": "tool_call_end", "id": "call-2"},
    ]
    return round_call


def _tools(started: asyncio.Event, gate: asyncio.Event, ran: list[str]) -> ToolRegistry:
    async def first(args: Any, call: ToolCallInfo) -> ToolOutput:
        ran.append("first")
        started.set()
        await gate.wait()
        return ToolOutput("first's own result")

    async def second(args: Any, call: ToolCallInfo) -> ToolOutput:
        ran.append("second")
        return ToolOutput("second's result")

    return ToolRegistry(
        [FunctionTool(name="first", function=first), FunctionTool(name="second", function=second)]
    )


def _round_session(
    writer: _Writer,
    *,
    gate: asyncio.Event | None = None,
    then: str | None = None,
    persister: _Costs | None = None,
) -> tuple[Any, asyncio.Event, list[str]]:
    """A session whose one reply asks for the two tools; the first runs until ``gate`` is set (never,
    by default), and ``then`` is the text of a later reply, if the test lets the turn go on."""
    started, ran = asyncio.Event(), list[str]()
    calls = [_round_of_two()] + ([text_call(then)] if then is not None else [])
    extra: dict[str, Any] = {} if persister is None else {"persister": persister}
    h = make_session(
        calls=calls,
        tools=_tools(started, gate or asyncio.Event(), ran),
        agent=TWO_TOOLS,
        usage_writer=writer,
        **extra,
    )
    return h, started, ran


async def _first_tool_running(h: Any, started: asyncio.Event) -> asyncio.Future[Any]:
    """Start the session, send, and return the pending send once the first tool runs."""
    await h.session.start()
    send: asyncio.Future[Any] = asyncio.ensure_future(h.session.send_message("go"))
    await asyncio.wait_for(started.wait(), HANG_GUARD)
    return send


def test_the_round_runs_while_its_usage_write_is_in_flight() -> None:
    writer = _Writer()
    h, started, ran = _round_session(writer, gate=writer.release, then="done")

    async def scenario() -> Any:
        send = await _first_tool_running(h, started)  # the first tool runs; the write still waits
        assert writer.resolved_calls == 1
        assert not writer.release.is_set()
        writer.release.set()  # the tool and the write go on together
        return await asyncio.wait_for(send, HANG_GUARD)

    result = run(scenario())
    assert result.status == "completed"
    assert ran == ["first", "second"]
    types = [t for t in h.types() if t.startswith(("agent:tool", "cost:"))]
    # the round's cost follows its tools (published once acknowledged, before the next call)
    assert types == ["agent:tool_call", "agent:tool_result"] * 2 + ["cost:updated", "cost:updated"]
    assert [e.cumulative_cost_microcents for e in h.of_type("cost:updated")] == [40, 80]  # type: ignore[union-attr]


def test_a_write_failing_while_a_tool_runs_lets_it_settle_and_refuses_the_next() -> None:
    writer = _Writer(fail=True)
    # the first tool answers once the write failed
    h, started, ran = _round_session(writer, gate=writer.failed, then="never")

    async def scenario() -> Any:
        send = await _first_tool_running(h, started)
        writer.release.set()
        return await asyncio.wait_for(send, HANG_GUARD)

    result = run(scenario())
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code.value == "internal"
    assert ran == ["first"]  # the second was refused at its dispatch check
    outcomes = [(e.tool_id, e.success, e.output_summary) for e in h.of_type("agent:tool_result")]  # type: ignore[union-attr]
    assert outcomes == [
        ("first", True, "first's own result"),
        ("second", False, "the session stopped after a failed save"),
    ]
    assert h.of_type("cost:updated") == []
    assert len(h.provider.requests) == 1  # no later egress


def test_an_abort_during_the_round_still_waits_for_the_write_and_records_its_money() -> None:
    writer, persister = _Writer(), _Costs()
    h, started, _ran = _round_session(writer, persister=persister)

    async def scenario() -> Any:
        send = await _first_tool_running(h, started)
        h.session.abort()  # the running tool is abandoned; its round's write is not
        for _ in range(5):
            await asyncio.sleep(0)
        assert not send.done()  # the abort waits for the accounting write
        writer.release.set()
        return await asyncio.wait_for(send, HANG_GUARD)

    result = run(scenario())
    assert result.status == "aborted"
    assert [e.cost_microcents for e in h.of_type("cost:updated")] == [40]  # type: ignore[union-attr]
    assert [(c.cost_microcents, c.call_count, c.unpriced_calls) for c in persister.costs] == [(40, 1, 0)]
    assert not writer.abandoned


def test_a_cancel_during_the_round_keeps_the_write_and_records_its_money() -> None:
    writer, persister = _Writer(), _Costs()
    h, started, _ran = _round_session(writer, persister=persister)

    async def scenario() -> Any:
        send = await _first_tool_running(h, started)
        await h.session.cancel()  # answers at once: the write is still held by the test
        assert not writer.release.is_set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not send.done()  # the turn waits for its accounting write before its cost row
        writer.release.set()
        return await asyncio.wait_for(send, HANG_GUARD)

    result = run(scenario())
    assert result.status == "cancelled"
    assert not writer.abandoned
    assert h.of_type("cost:updated") == []  # a cancel publishes nothing
    assert [(c.cost_microcents, c.call_count, c.unpriced_calls) for c in persister.costs] == [(40, 1, 0)]


def test_a_caller_cancel_during_the_round_lets_the_write_land_and_a_failure_latch() -> None:
    writer = _Writer(fail=True)
    h, started, _ran = _round_session(writer, then="never")

    async def scenario() -> Any:
        send = await _first_tool_running(h, started)
        send.cancel()  # the caller goes away while the tool runs and the write waits
        with contextlib.suppress(asyncio.CancelledError):
            await send
        writer.release.set()  # the write still runs (in the background) and fails
        await asyncio.wait_for(writer.failed.wait(), HANG_GUARD)
        for _ in range(5):
            await asyncio.sleep(0)
        return await asyncio.wait_for(h.session.send_message("again"), HANG_GUARD)

    result = run(scenario())
    assert not writer.abandoned
    assert result.status == "failed"  # the failed write latched the session
    assert result.error is not None
    assert result.error.code.value == "internal"
    assert len(h.provider.requests) == 1
    assert h.of_type("cost:updated") == []


def test_an_abort_whose_round_cost_the_sink_refuses_raises_that_failure_after_the_terminal() -> None:
    writer, persister = _Writer(), _Costs()
    h, started, _ran = _round_session(writer, persister=persister)

    async def sink(event: Any) -> None:
        h.events.append(event)
        if event.type == "cost:updated":
            raise RuntimeError("observer broke")

    h.session._stamper._sink = sink  # the sink fails on the round's cost, published during the abort

    async def scenario() -> None:
        send = await _first_tool_running(h, started)
        h.session.abort()
        writer.release.set()
        with pytest.raises(RuntimeError, match="observer broke"):
            await asyncio.wait_for(send, HANG_GUARD)

    run(scenario())
    terminals = [e.stop_reason for e in h.of_type("session:turn_completed")]  # type: ignore[union-attr]
    assert [str(t) for t in terminals] == ["aborted"]  # the failure is raised after the abort's terminal
    assert len(h.of_type("cost:updated")) == 1
    assert [(c.cost_microcents, c.call_count, c.unpriced_calls) for c in persister.costs] == [(40, 1, 0)]
