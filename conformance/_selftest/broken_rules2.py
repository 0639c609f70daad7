"""Broken sessions, second set: one rule of the cap, observer, cancellation, command, policy and
persistence accounting each.

Each is the reference session with one decision changed in its own code (a subclass), so that the
cases citing the rule's clause must see the difference on every transport.  The breaks are small on
purpose: the smallest change that makes the rule false.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation, run_command_approved
from relavium_reference import AgentSession, SessionStopReason, TurnPolicy, TurnResult
from relavium_reference._host.session import DEFAULT_SESSION_MAX_TURNS, SessionDeps
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.events import (
    AgentToken,
    SessionCancelled,
    SessionEvent,
    SessionTurnCompleted,
    SessionTurnStarted,
    TokensUsed,
)
from relavium_reference._rules.lifecycle import SessionInput, SessionState
from relavium_reference._rules.projection import Exchange

__all__ = ["SESSION_BREAKS"]


class _Observed(AgentSession):
    """A base: sees every event the session hands its sink (:meth:`seen`), and whether the sink failed."""

    def __init__(self, *, deps: SessionDeps, **kwargs: Any) -> None:
        sink = deps.emit
        self.sink_failed = False

        async def emit(event: SessionEvent) -> None:
            try:
                acknowledged = sink(event)
                if acknowledged is not None:
                    await acknowledged
            except Exception:
                self.sink_failed = True
                raise
            await self.seen(event)

        super().__init__(deps=replace(deps, emit=emit), **kwargs)

    async def seen(self, event: SessionEvent) -> None:
        return None


class _ToolRoundIsATurn(_Observed):
    """Every tool round is published as a turn of its own (a terminal, then a new start)."""

    async def seen(self, event: SessionEvent) -> None:
        if event.type == "agent:tool_result":
            await self._stamper.emit(
                SessionTurnCompleted,
                stop_reason=SessionStopReason.STOP,
                tokens_used=TokensUsed(input=0, output=0),
            )
            await self._stamper.emit(SessionTurnStarted)


class _CancelReplaysTokens(_Observed):
    """After session:cancelled the transient token events are delivered again, as a replay log."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._replay_log: list[str] = []

    async def seen(self, event: SessionEvent) -> None:
        if isinstance(event, AgentToken):
            self._replay_log.append(event.token)

    async def cancel(self) -> None:
        await super().cancel()
        replay, self._replay_log = self._replay_log, []
        for token in replay:
            await self._stamper.emit(AgentToken, node_id=self.agent_ref, token=token, model=self._agent.model)


class _EmptyFinalNotCommitted(AgentSession):
    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        if not end.text:
            return True  # an empty final is not worth a row: the explicit terminal is lost
        return await super()._commit(text, end, progress)


class _PolicyChangeReseats(AgentSession):
    """setTurnPolicy rebuilds the instance: the conversation so far is lost."""

    def set_turn_policy(self, policy: TurnPolicy | None) -> None:
        super().set_turn_policy(policy)
        self._exchanges = []


class _AbortEmitsCancelled(AgentSession):
    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        result = await super()._settle_interrupted(progress)
        if result.status == "aborted":
            await self._stamper.emit(SessionCancelled)
        return result


class _CommandRunsWithoutHook(AgentSession):
    """A user command with no approval hook runs, where the model's run_command call is refused."""

    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        if self._policy.confirm is not None:
            return await super().run_user_command(command, args)
        return await run_command_approved(self, command, args)


class _CommandReachesTheModel(AgentSession):
    """A user command and its output join the conversation the model sees next."""

    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        outcome = await super().run_user_command(command, args)
        line = " ".join(["!" + command, *args])
        self._exchanges.append(Exchange(user=line, assistant=str(getattr(outcome, "stdout", ""))))
        return outcome


class _DefaultCapHundred(AgentSession):
    def __init__(self, *, deps: SessionDeps, **kwargs: Any) -> None:
        super().__init__(deps=deps, **kwargs)
        if deps.max_turns is None:
            self._max_turns = 2 * DEFAULT_SESSION_MAX_TURNS


class _ZeroCapIsZero(AgentSession):
    def __init__(self, *, deps: SessionDeps, **kwargs: Any) -> None:
        super().__init__(deps=deps, **kwargs)
        if deps.max_turns == 0:
            self._max_turns = 0


class _CapCountsRequests(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        if progress.engaged:
            self._turns_used += max(1, progress.attempts)


class _MaxTurnsIgnored(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_turns = DEFAULT_SESSION_MAX_TURNS


class _AbortedTurnIsFree(AgentSession):
    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        progress.engaged = False  # an interrupted turn is not counted
        return await super()._settle_interrupted(progress)


class _SilentTurnIsFree(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        if progress.engaged and progress.usage.input_tokens + progress.usage.output_tokens > 0:
            self._turns_used += 1


class _LatchForgotten(AgentSession):
    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        committed = await super()._commit(text, end, progress)
        self._latched = False
        return committed


class _SecondCancelEmits(AgentSession):
    async def cancel(self) -> None:
        if self._state is SessionState.CANCELLED:
            await self._stamper.emit(SessionCancelled)
            return
        await super().cancel()


class _ResumeResetsTheCap(AgentSession):
    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._turns_used = 0
        return session


class _SinkFailureIsFree(_Observed):
    async def send_message(self, text: str) -> TurnResult:
        try:
            return await super().send_message(text)
        except Exception:
            self._turns_used = max(0, self._turns_used - 1)
            raise


class _SinkFailureHasNoTerminal(_Observed):
    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if not self.sink_failed:
            return await super()._settle(end, progress)
        self.sink_failed = False
        self._count_turn(progress)
        self._enter(SessionInput.TURN_SETTLED)
        return TurnResult(
            status="failed", stop_reason=SessionStopReason.ERROR, tokens_used=self._tokens(progress)
        )


class _TurnStartFailureKeepsBusy(_Observed):
    async def send_message(self, text: str) -> TurnResult:
        try:
            return await super().send_message(text)
        except Exception:
            if self._turns_used == 0 and self.sink_failed:
                self._state = SessionState.STREAMING  # the running state is never released
            raise


class _RefusedStartUsesASlot(_Observed):
    async def send_message(self, text: str) -> TurnResult:
        used = self._turns_used
        try:
            return await super().send_message(text)
        except Exception:
            if self._turns_used == used:
                self._turns_used += 1
            raise


class _TurnStartedAfterCancel(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        if self._state is SessionState.CANCELLED:
            await self._stamper.emit(SessionTurnStarted)
        return await super().send_message(text)


class _CommitCancelPublishes(AgentSession):
    """A cancel that arrives while the host commits the turn still publishes its completion."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        result = await super()._settle(end, progress)
        if result.status == "cancelled" and end.succeeded and progress.resolved:
            await self._stamper.emit(
                SessionTurnCompleted, stop_reason=end.stop_reason, tokens_used=result.tokens_used
            )
        return result


class _AbortedTurnCommitted(AgentSession):
    """An aborted turn is committed as a turn with an empty reply."""

    _text = ""

    async def send_message(self, text: str) -> TurnResult:
        self._text = text
        return await super().send_message(text)

    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        if self._interrupt == "abort":
            await self._commit(self._text, TurnEnd(SessionStopReason.STOP, text=""), progress)
        return await super()._settle_interrupted(progress)


def _b(name: str, rule: str, clauses: tuple[str, ...], session: type[AgentSession]) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, session)


SESSION_BREAKS: tuple[BrokenImplementation, ...] = (
    _b(
        "tool-round-is-a-turn",
        "each tool round is published as a turn of its own",
        ("AS-SESS-006",),
        _ToolRoundIsATurn,
    ),
    _b(
        "cancel-replays-tokens",
        "after session:cancelled the turn's token events are delivered again as a replay",
        ("AS-LIFE-003",),
        _CancelReplaysTokens,
    ),
    _b(
        "empty-final-not-committed",
        "a turn whose final text is empty commits no rows (no explicit empty terminal)",
        ("AS-LIFE-009",),
        _EmptyFinalNotCommitted,
    ),
    _b(
        "policy-change-reseats",
        "setTurnPolicy rebuilds the instance and loses the conversation",
        ("AS-LIFE-011",),
        _PolicyChangeReseats,
    ),
    _b(
        "abort-emits-cancelled",
        "an abort also emits session:cancelled",
        ("AS-LIFE-019",),
        _AbortEmitsCancelled,
    ),
    _b(
        "command-runs-without-hook",
        "a user command runs with no approval hook, where the model's run_command is refused",
        ("AS-LIFE-025",),
        _CommandRunsWithoutHook,
    ),
    _b(
        "command-reaches-the-model",
        "a user command and its output join the model's next request",
        ("AS-LIFE-029",),
        _CommandReachesTheModel,
    ),
    _b("default-cap-hundred", "without maxTurns the cap is 100, not 50", ("AS-CAP-001",), _DefaultCapHundred),
    _b(
        "zero-cap-is-zero",
        "maxTurns 0 allows no turn instead of the default",
        ("AS-CAP-002",),
        _ZeroCapIsZero,
    ),
    _b(
        "cap-counts-requests",
        "every provider request of a turn uses a cap slot, tool rounds included",
        ("AS-CAP-003",),
        _CapCountsRequests,
    ),
    _b(
        "max-turns-ignored",
        "the maxTurns dependency is ignored (always 50)",
        ("AS-CAP-007",),
        _MaxTurnsIgnored,
    ),
    _b(
        "aborted-turn-is-free",
        "an engaged turn that is aborted uses no cap slot",
        ("AS-CAP-010",),
        _AbortedTurnIsFree,
    ),
    _b(
        "silent-turn-is-free",
        "an engaged turn that reported zero tokens uses no cap slot",
        ("AS-CAP-011",),
        _SilentTurnIsFree,
    ),
    _b(
        "latch-forgotten",
        "after a failed commit the session is not latched: the next send reaches the provider",
        ("AS-MSG-016",),
        _LatchForgotten,
    ),
    _b(
        "second-cancel-emits",
        "a second cancel emits session:cancelled again",
        ("AS-CAP-019",),
        _SecondCancelEmits,
    ),
    _b(
        "resume-resets-the-cap",
        "a resumed instance starts its hard cap from zero",
        ("AS-CAP-021",),
        _ResumeResetsTheCap,
    ),
    _b(
        "sink-failure-is-free",
        "a turn whose observer failed after engagement uses no cap slot",
        ("AS-OBS-009",),
        _SinkFailureIsFree,
    ),
    _b(
        "sink-failure-has-no-terminal",
        "a turn whose observer failed publishes no fixed terminal",
        ("AS-OBS-010",),
        _SinkFailureHasNoTerminal,
    ),
    _b(
        "turn-start-failure-keeps-busy",
        "a failing turn-start notification leaves the session busy",
        ("AS-OBS-015",),
        _TurnStartFailureKeepsBusy,
    ),
    _b(
        "refused-start-uses-a-slot",
        "a turn refused at its start notification still uses a cap slot",
        ("AS-OBS-016",),
        _RefusedStartUsesASlot,
    ),
    _b(
        "turn-started-after-cancel",
        "a send after cancel emits session:turn_started before it is refused",
        ("AS-OBS-019",),
        _TurnStartedAfterCancel,
    ),
    _b(
        "commit-cancel-publishes",
        "a cancel during the commit still publishes session:turn_completed",
        ("AS-OBS-026",),
        _CommitCancelPublishes,
    ),
    _b(
        "aborted-turn-committed",
        "an aborted turn is committed with an empty reply",
        ("AS-PROJ-025",),
        _AbortedTurnCommitted,
    ),
)
