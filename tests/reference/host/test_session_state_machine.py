"""A Hypothesis state machine over the session: random operations and provider behaviours against a model.

After every step: the session's state is the model's; sequence numbers are gap-free from 0; nothing
follows ``session:cancelled``; every ``session:turn_started`` has exactly one terminal unless the session
was cancelled during that turn; the hard cap is never exceeded and only engaged turns use a slot.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from tests.reference.enginekit import GatedProvider, make_session

from relavium_reference import SessionState, SessionStateError
from relavium_reference._model.llm import (
    LlmError,
    StopChunk,
    StreamErrorChunk,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

MAX_TURNS = 3
USAGE = Usage(input_tokens=2, output_tokens=1)


def _reply(kind: str) -> list[Any]:
    if kind == "text":
        return [TextDelta(text="hi"), StopChunk(stop_reason="stop", usage=USAGE)]
    if kind == "empty":
        return [StopChunk(stop_reason="stop", usage=USAGE)]
    if kind == "error":
        return [StreamErrorChunk(error=LlmError(kind="auth"))]
    if kind == "tool":
        return [
            ToolCallStart(id="c", name="echo"),
            ToolCallEnd(id="c"),
            StopChunk(stop_reason="tool_use", usage=USAGE),
            TextDelta(text="after tool"),
            StopChunk(stop_reason="stop", usage=USAGE),
        ]
    raise AssertionError(kind)


class SessionMachine(RuleBasedStateMachine):
    @initialize(started=st.booleans())
    def setup(self, started: bool) -> None:
        self.runner = asyncio.Runner()
        self.provider = GatedProvider([])
        self.h = self.runner.run(self._make())
        self.model_state = SessionState.CREATED
        self.used = 0  # slots the model expects: every send that reached the provider
        if started:
            self.start()

    async def _make(self) -> Any:
        return make_session(self.provider, max_turns=MAX_TURNS)

    def teardown(self) -> None:
        self.runner.close()

    # -- helpers --------------------------------------------------------------------------------

    def _send(self, calls: list[list[Any]], interrupt: str | None) -> Any:
        async def scenario() -> Any:
            if calls:
                # the tool reply is two provider calls: split at the first tool_use stop
                flat = calls[0]
                split = next(
                    (i + 1 for i, c in enumerate(flat) if getattr(c, "stop_reason", None) == "tool_use"), None
                )
                self.provider.calls = [flat[:split], flat[split:]] if split else [flat]
            self.provider.waiting.clear()
            self.provider.gate.clear()
            task = asyncio.create_task(self.h.session.send_message("q"))
            if interrupt is None:
                while not task.done():
                    self.provider.gate.set()
                    await asyncio.sleep(0)
                return await task
            while not (self.provider.waiting.is_set() or task.done()):
                await asyncio.sleep(0)  # the turn is in flight at the provider, or already over
            if interrupt == "abort":
                self.h.session.abort()
            else:
                await self.h.session.cancel()
            while not task.done():
                self.provider.gate.set()
                await asyncio.sleep(0)
            return await task

        return self.runner.run(scenario())

    # -- rules ----------------------------------------------------------------------------------

    @rule()
    def start(self) -> None:
        try:
            self.runner.run(self.h.session.start())
        except SessionStateError:
            assert self.model_state is not SessionState.CREATED
            return
        assert self.model_state is SessionState.CREATED
        self.model_state = SessionState.IDLE

    @rule(
        kind=st.sampled_from(["text", "empty", "error", "tool"]),
        interrupt=st.sampled_from([None, None, "abort", "cancel"]),
    )
    def send(self, kind: str, interrupt: str | None) -> None:
        before = self.h.session.turns_used
        if self.model_state is not SessionState.IDLE:
            try:
                self.runner.run(self.h.session.send_message("q"))
            except SessionStateError:
                return
            raise AssertionError("a send outside idle must be refused")
        requests_before = len(self.provider.requests)
        result = self._send([_reply(kind)], interrupt)
        assert self.model_state is SessionState.IDLE
        over_cap = before >= MAX_TURNS
        if over_cap:
            assert result.error is not None
            assert result.error.code.value == "turn_limit"
            assert len(self.provider.requests) == requests_before  # no egress past the cap
        else:
            self.used += 1  # the provider was invoked: this turn uses a slot, whatever its ending
        if interrupt == "cancel":
            self.model_state = SessionState.CANCELLED
            if not over_cap:  # past the cap the turn ends before the cancel arrives
                assert result.status == "cancelled"
        elif interrupt is None and not over_cap:
            assert result.status == ("failed" if kind == "error" else "completed")
        self.provider.calls = []

    @rule()
    def abort_when_idle(self) -> None:
        count = len(self.h.events)
        self.h.session.abort()
        assert len(self.h.events) == count

    @rule()
    def cancel(self) -> None:
        self.runner.run(self.h.session.cancel())
        self.model_state = SessionState.CANCELLED

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def state_matches_the_model(self) -> None:
        if hasattr(self, "h"):
            assert self.h.session.state is self.model_state

    @invariant()
    def sequence_is_gap_free_and_cancel_is_last(self) -> None:
        if not hasattr(self, "h"):
            return
        events = self.h.events
        assert [e.sequence_number for e in events] == list(range(len(events)))
        types = [e.type for e in events]
        assert types.count("session:cancelled") <= 1
        if "session:cancelled" in types:
            assert types[-1] == "session:cancelled"

    @invariant()
    def one_terminal_per_turn(self) -> None:
        if not hasattr(self, "h"):
            return
        open_turn = False
        for event in self.h.events:
            if event.type == "session:turn_started":
                assert not open_turn
                open_turn = True
            elif event.type == "session:turn_completed":
                assert open_turn
                open_turn = False
            elif event.type == "session:cancelled":
                open_turn = False

    @invariant()
    def cap_is_never_exceeded_and_slots_follow_engagement(self) -> None:
        if hasattr(self, "h"):
            assert self.h.session.turns_used <= MAX_TURNS
            assert self.h.session.turns_used == self.used


SessionMachine.TestCase.settings = settings(
    max_examples=80, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestSessionMachine = SessionMachine.TestCase
