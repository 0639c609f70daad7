"""The turn's one-shot overflow recovery.

Most tests give the session a stand-in recovery (the turn's ``recover`` port) that records its calls and
answers as told, and a window for the model, then check what the turn did: how many provider
invocations, the terminal, the usage.  The last ones run the engine's own recovery compaction
(``_host/overflow_recovery.py``) under a refusing admission and under an abort.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from tests.reference.enginekit import AGENT, Harness, default_tools, run, text_call, tool_call

from relavium_reference import (
    AgentSession,
    AgentSnapshot,
    ScriptedProvider,
    SessionContext,
    SessionDeps,
    SessionEvent,
)
from relavium_reference._host.turn import Recovered, RecoveryRefused, TurnSetup
from relavium_reference._model.invocation import ModelInfo
from relavium_reference._model.shapes import MemoryNone
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import ErrorCode
from relavium_reference._rules.compaction_plan import SUMMARISER_SYSTEM

WINDOW = 20000  # far over the requests: no pre-send trigger fires (that is tested elsewhere)


def overflow_call(
    *, evidence: str | None = "official", usage: dict[str, int] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {
        "kind": "context_overflow",
        "provider": "openai",
        "status": 400,
        "code": "context_length_exceeded",
        "message": "This model's maximum context length is 4097 tokens.",
    }
    if evidence is not None:
        error["evidence"] = evidence
    chunk: dict[str, Any] = {"type": "error", "error": error}
    if usage is not None:
        chunk["usage"] = usage
    return {"chunks": [chunk]}


Outcome = Recovered | RecoveryRefused | None


class _Recovering(AgentSession):
    """The reference session with a stand-in recovery (the model has an authoritative window)."""

    outcomes: list[Outcome]
    presend_failed = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recoveries: list[TurnSetup] = []

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        if self.presend_failed and self._progress is not None:
            self._progress.presend_suppressed = True  # what a failed pre-send compaction leaves

        async def recover(current: TurnSetup) -> Outcome:
            self.recoveries.append(current)
            return self.outcomes.pop(0) if self.outcomes else None

        return replace(setup, recover=recover)


def _session(
    calls: Sequence[dict[str, Any]],
    outcomes: Sequence[Outcome],
    *,
    agent: AgentSnapshot = AGENT,
    observer: Callable[[SessionEvent], Awaitable[None]] | None = None,
) -> Harness:
    provider = ScriptedProvider({"calls": list(calls)})
    events: list[SessionEvent] = []

    async def sink(event: SessionEvent) -> None:
        events.append(event)
        if observer is not None:
            await observer(event)

    async def no_sleep(_seconds: float) -> None:
        return None

    session = _Recovering(
        agent=agent,
        context=SessionContext(working_dir="."),
        deps=SessionDeps(
            resolve_provider=lambda _p, _m: provider,
            emit=sink,
            tools=default_tools(),
            sleep=no_sleep,
            models={"model-a": ModelInfo(context_window=WINDOW)},
        ),
        session_id="s-test",
    )
    session.outcomes = list(outcomes)
    return Harness(session=session, events=events, provider=provider)


def _send(harness: Any, text: str = "q") -> Any:
    async def scenario() -> Any:
        await harness.session.start()
        return await harness.session.send_message(text)

    return run(scenario())


def _requests(harness: Any) -> int:
    provider: ScriptedProvider = harness.provider
    return len(provider.requests)


@pytest.mark.clauses("AS-OVF-006", "AS-OVF-012")
def test_one_recovery_then_a_fresh_retry_and_usage_summed() -> None:
    folded = Recovered(history=())
    h = _session(
        [overflow_call(usage={"inputTokens": 900, "outputTokens": 0}), text_call("ok", input_tokens=30)],
        [folded],
    )
    result = _send(h)
    assert result.status == "completed"
    assert result.text == "ok"
    assert len(h.session.recoveries) == 1
    assert _requests(h) == 2
    assert (result.tokens_used.input, result.tokens_used.output) == (930, 5)  # both attempts


@pytest.mark.clauses("AS-OVF-011", "AS-OVF-003")
def test_an_overflow_on_the_retry_is_final() -> None:
    h = _session([overflow_call(), overflow_call()], [Recovered(history=()), Recovered(history=())])
    result = _send(h)
    assert result.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert result.error.message == f"context window exceeded for model model-a ({WINDOW} tokens)"
    assert result.error.retryable is False
    assert len(h.session.recoveries) == 1
    assert _requests(h) == 2


@pytest.mark.clauses("AS-OVF-014", "AS-OVF-005")
def test_no_restart_after_a_tool_round() -> None:
    h = _session([tool_call("c1", "echo"), overflow_call()], [Recovered(history=())])
    result = _send(h)
    assert result.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert result.error.message.endswith("; tools already ran")
    assert h.session.recoveries == []
    assert _requests(h) == 2


@pytest.mark.clauses("AS-OVF-008", "AS-COMP-009")
def test_a_failed_presend_compaction_suppresses_recovery() -> None:
    h = _session([overflow_call()], [Recovered(history=())])
    h.session.presend_failed = True
    result = _send(h)
    assert result.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert h.session.recoveries == []


@pytest.mark.clauses("AS-OVF-006", "AS-OVF-016")
def test_downgraded_or_unstated_evidence_never_recovers_and_says_size_unknown() -> None:
    for evidence in ("downgraded", None):
        h = _session([overflow_call(evidence=evidence)], [Recovered(history=())])
        result = _send(h)
        assert result.error.message == "context window exceeded for model model-a (window size unknown)"
        assert h.session.recoveries == []


@pytest.mark.clauses("AS-OVF-006")
def test_no_recovery_without_automatic_permission() -> None:
    agent = AGENT.model_copy(update={"memory": MemoryNone(type="none")})
    h = _session([overflow_call()], [Recovered(history=())], agent=agent)
    result = _send(h)
    assert result.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert h.session.recoveries == []


@pytest.mark.clauses("AS-OVF-009")
def test_nothing_to_fold_keeps_the_original_overflow() -> None:
    h = _session([overflow_call()], [None])
    result = _send(h)
    assert result.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert result.error.message == f"context window exceeded for model model-a ({WINDOW} tokens)"
    assert len(h.session.recoveries) == 1
    assert _requests(h) == 1


@pytest.mark.clauses("AS-OVF-010")
def test_a_budget_refusal_settles_budget_exceeded() -> None:
    h = _session([overflow_call()], [RecoveryRefused(message="the cost cap of 100 microcents refused it")])
    result = _send(h)
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED
    assert result.error.message == "the cost cap of 100 microcents refused it"
    assert _requests(h) == 1


class _Rethrown(Exception):
    """An observer's failure that carries a genuine overflow seen on an earlier call."""


@pytest.mark.clauses("AS-OVF-007")
def test_an_observer_rethrowing_an_earlier_overflow_cannot_start_recovery() -> None:
    earlier: list[Any] = []

    async def observer(event: SessionEvent) -> None:
        if event.type == "session:turn_completed" and getattr(event, "error", None) is not None:
            earlier.append(event.error)
        if event.type == "agent:token" and earlier:
            raise _Rethrown(earlier[0])

    h = _session(
        [overflow_call(), text_call("partial")],
        [None, Recovered(history=())],
        observer=observer,
    )
    session = h.session

    async def scenario() -> Any:
        await session.start()
        first = await session.send_message("one")
        with pytest.raises(_Rethrown):
            await session.send_message("two")
        return first

    first = run(scenario())
    assert first.error.code is ErrorCode.CONTEXT_OVERFLOW
    # the first turn's genuine overflow asked for its one recovery (nothing to fold); the observer's
    # rethrow of that overflow in the second turn is the host's failure, never a recovery
    assert len(session.recoveries) == 1
    second = h.of_type("session:turn_completed")[-1]
    assert second.error is not None
    assert second.error.code is ErrorCode.INTERNAL


class _RaisesEarlierOverflow:
    """A provider that raises an exception carrying an overflow it saw before, instead of yielding one."""

    def __init__(self, error: Any) -> None:
        self.error = error
        self.requests: list[Any] = []

    def stream(self, request: Any) -> Any:
        self.requests.append(request)
        raise _Rethrown(self.error)


@pytest.mark.clauses("AS-OVF-007")
def test_a_raised_overflow_is_not_a_classified_one() -> None:
    h = _session([], [Recovered(history=())])
    earlier = overflow_call()["chunks"][0]["error"]
    provider = _RaisesEarlierOverflow(earlier)
    h.session._deps = replace(h.session._deps, resolve_provider=lambda _p, _m: provider)
    result = _send(h)
    assert result.error.code is ErrorCode.INTERNAL
    assert h.session.recoveries == []


class _RefuseSummaries:
    """An admission that refuses every summary pass (a budget that cannot afford the compaction)."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    async def admit(self, request: Any) -> Any:
        from relavium_reference._model.invocation import AdmissionRefused, Admitted

        self.asked.append(request)
        if request.purpose == "summary":
            return AdmissionRefused(message="the cost cap of 500 microcents refuses the summary")
        return Admitted()

    async def release(self, request: Any) -> None:
        return None


@pytest.mark.clauses("AS-OVF-010")
def test_the_real_recovery_refused_by_the_budget_settles_budget_exceeded() -> None:
    admission = _RefuseSummaries()
    provider = ScriptedProvider({"calls": [text_call("one"), text_call("two"), overflow_call()]})

    async def sink(event: SessionEvent) -> None:
        events.append(event)

    async def no_sleep(_seconds: float) -> None:
        return None

    events: list[SessionEvent] = []
    session = AgentSession(
        agent=AGENT,
        context=SessionContext(working_dir="."),
        deps=SessionDeps(
            resolve_provider=lambda _p, _m: provider,
            emit=sink,
            tools=default_tools(),
            sleep=no_sleep,
            models={"model-a": ModelInfo(context_window=WINDOW)},
            admission=admission,
        ),
    )

    async def scenario() -> Any:
        await session.start()
        await session.send_message("first")
        await session.send_message("second")
        return await session.send_message("third")

    result = run(scenario())
    assert result.error.code is ErrorCode.BUDGET_EXCEEDED
    assert result.error.message == "the cost cap of 500 microcents refuses the summary"
    assert [r.purpose for r in admission.asked][-1] == "summary"
    assert len(provider.requests) == 3  # the refused pass never egressed, and no retry followed
    assert not [e for e in events if e.type.startswith("session:compact")]  # no moment opened
    assert len(session.exchanges) == 2  # nothing installed


class _HoldsTheSummary:
    """Answers the turns from a script and holds the summary pass until the test aborts the turn."""

    def __init__(self, calls: Sequence[dict[str, Any]]) -> None:
        self._script = ScriptedProvider({"calls": list(calls)})
        self.holding = asyncio.Event()

    def stream(self, request: Any) -> Any:
        if request.system == SUMMARISER_SYSTEM:
            return self._hold()
        return self._script.stream(request)

    async def _hold(self) -> Any:
        self.holding.set()
        await asyncio.Event().wait()
        yield  # pragma: no cover - never reached


@pytest.mark.clauses("AS-OVF-006")
def test_an_abort_during_the_recovery_pass_closes_its_moment_once() -> None:
    provider = _HoldsTheSummary([text_call("one"), text_call("two"), overflow_call()])
    events: list[SessionEvent] = []

    async def sink(event: SessionEvent) -> None:
        events.append(event)

    async def no_sleep(_seconds: float) -> None:
        return None

    session = AgentSession(
        agent=AGENT,
        context=SessionContext(working_dir="."),
        deps=SessionDeps(
            resolve_provider=lambda _p, _m: provider,
            emit=sink,
            tools=default_tools(),
            sleep=no_sleep,
            models={"model-a": ModelInfo(context_window=WINDOW)},
        ),
    )

    async def scenario() -> Any:
        await session.start()
        await session.send_message("first")
        await session.send_message("second")
        turn = asyncio.ensure_future(session.send_message("third"))
        await provider.holding.wait()
        session.abort()
        return await turn

    result = run(scenario())
    assert result.status == "aborted"
    moments = [e.type for e in events if e.type.startswith("session:compact")]
    assert moments == ["session:compacting", "session:compaction_failed"]
    assert len(session.exchanges) == 2  # nothing installed
