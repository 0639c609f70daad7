"""Deliberately broken implementations: each breaks one named rule of the specification.

They prove that the kit's cases bite.  Each is the reference engine with one behaviour changed, served
through the same message set; :mod:`relavium_conformance._selftest` runs every case citing the broken
rule's clauses against it and reports whether at least one of them failed.  A broken implementation no
case catches is a hole in the corpus.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from relavium_reference import (
    AgentSession,
    SessionInput,
    SessionState,
    SessionStopReason,
    TurnPolicy,
    TurnResult,
)
from relavium_reference._commands import CommandAllowlist
from relavium_reference._events import SessionStarted, SessionTurnCompleted, TokensUsed
from relavium_reference._projection import Exchange, HistoryMessage
from relavium_reference._turn import TurnEnd, TurnProgress, TurnSetup

from ._protocol import Callback
from ._reference_impl import ReferenceImplementation

__all__ = ["BROKEN_IMPLEMENTATIONS", "BrokenImplementation", "broken_by_name"]


@dataclass(frozen=True)
class BrokenImplementation:
    name: str
    rule: str  # the rule it breaks, in one line
    clauses: tuple[str, ...]  # the clauses whose cases must catch it
    session: type[AgentSession]

    def factory(self) -> Callable[[Callback], ReferenceImplementation]:
        def make(callback: Callback) -> ReferenceImplementation:
            return ReferenceImplementation(callback, session_factory=self.session, name=f"broken:{self.name}")

        return make


class _NoHardCap(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_turns = 10**9


class _UnengagedTurnsUseSlot(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        self._turns_used += 1


class _AbortKeepsTheUser(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "aborted":
            self._exchanges.append(Exchange(user=text, assistant=""))
        return result


class _TurnCompletedAfterCancel(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "cancelled":
            await self._stamper.emit(
                SessionTurnCompleted,
                stop_reason=SessionStopReason.ABORTED,
                tokens_used=TokensUsed(input=0, output=0),
            )
        return result


class _LateAbortDiscards(AgentSession):
    def abort(self) -> None:
        if self._progress is not None:
            self._progress.resolved = False
        super().abort()


class _AbortWhenIdleEmits(AgentSession):
    def abort(self) -> None:
        if self._turn_task is None and self._state.value == "idle":
            self._interrupt = None
            asyncio.get_running_loop().create_task(
                self._stamper.emit(
                    SessionTurnCompleted,
                    stop_reason=SessionStopReason.ABORTED,
                    tokens_used=TokensUsed(input=0, output=0),
                )
            )
        super().abort()


class _ToolPairsLeak(AgentSession):
    """Carries the previous turn's tool results into the next request, as assistant text."""

    _leak: str = ""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        if not self._leak:
            return setup
        history = [*setup.history, HistoryMessage("assistant", self._leak)]
        return TurnSetup(**{**setup.__dict__, "history": history})

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if progress.tool_history:
            self._leak = "[tool results: " + ", ".join(e.tool_call_id for e in progress.tool_history) + "]"
        return await super()._settle(end, progress)


class _PolicyAppliesMidTurn(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        session = self

        async def live_confirm(request: Any) -> bool:
            return await session._policy.approves(request)

        live = TurnPolicy(advertise=policy.advertise, confirm=live_confirm)
        return super()._turn_setup(text, live)


class _GappySequence(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        self._stamper._next += 1  # skip a number after every turn
        return result


class _ContextNotEchoed(AgentSession):
    async def start(self) -> None:
        self._apply(SessionInput.START)
        self._state = SessionState.IDLE
        context = self._context.model_copy(update={"variables": None})
        await self._stamper.emit(
            SessionStarted, agent_ref=self.agent_ref, model=self._agent.model, context=context
        )


class _NoToolRoundGuard(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return TurnSetup(**{**setup.__dict__, "max_tool_turns": 10**6})


class _CommandRunsWhenDenied(AgentSession):
    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        async def yes(_request: Any) -> bool:
            return True

        kept = self._policy
        self._policy = TurnPolicy(advertise=kept.advertise, confirm=yes)
        try:
            return await super().run_user_command(command, args)
        finally:
            self._policy = kept


class _AllowlistIgnored(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._allowlist = CommandAllowlist(globs=("*",))


class _CommandThroughShell(AgentSession):
    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        if not self._allowlist.allows(command):
            return await super().run_user_command(command, args)
        kept = self._allowlist
        self._allowlist = CommandAllowlist(names=("sh",))
        try:
            return await super().run_user_command("sh", ["-c", " ".join([command, *args])])
        finally:
            self._allowlist = kept


BROKEN_IMPLEMENTATIONS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "no-hard-cap", "a send past the hard cap still runs", ("AS-CAP-004", "AS-CAP-005"), _NoHardCap
    ),
    BrokenImplementation(
        "unengaged-turns-use-slot",
        "a turn refused before any provider invocation still uses a cap slot",
        ("AS-CAP-009", "AS-CAP-012"),
        _UnengagedTurnsUseSlot,
    ),
    BrokenImplementation(
        "aborted-turn-kept",
        "an aborted turn's user message stays in the transcript",
        ("AS-LIFE-018",),
        _AbortKeepsTheUser,
    ),
    BrokenImplementation(
        "turn-completed-after-cancel",
        "a cancelled turn still publishes session:turn_completed",
        ("AS-LIFE-021", "AS-LIFE-023"),
        _TurnCompletedAfterCancel,
    ),
    BrokenImplementation(
        "late-abort-discards-reply",
        "an abort after the turn resolved discards the reply",
        ("AS-LIFE-022",),
        _LateAbortDiscards,
    ),
    BrokenImplementation(
        "idle-abort-emits",
        "an abort with no turn in flight emits a terminal",
        ("AS-LIFE-020",),
        _AbortWhenIdleEmits,
    ),
    BrokenImplementation(
        "tool-pairs-leak",
        "a tool round's results reach the next turn's request",
        ("AS-LIFE-010", "AS-MSG-009"),
        _ToolPairsLeak,
    ),
    BrokenImplementation(
        "policy-applies-mid-turn",
        "a policy change during a turn takes effect in that same turn",
        ("AS-LIFE-012",),
        _PolicyAppliesMidTurn,
    ),
    BrokenImplementation(
        "gappy-sequence", "sequence numbers skip a value after each turn", ("AS-EVT-002",), _GappySequence
    ),
    BrokenImplementation(
        "context-variables-dropped",
        "session:started does not echo context.variables",
        ("AS-SEC-007",),
        _ContextNotEchoed,
    ),
    BrokenImplementation(
        "no-tool-round-guard",
        "the within-turn tool-round guard never fires",
        ("AS-CAP-006",),
        _NoToolRoundGuard,
    ),
    BrokenImplementation(
        "denied-command-runs",
        "a user command runs although its approval was refused",
        ("AS-LIFE-030",),
        _CommandRunsWhenDenied,
    ),
    BrokenImplementation(
        "allowlist-ignored",
        "a user command off the allowlist still reaches approval",
        ("AS-LIFE-026",),
        _AllowlistIgnored,
    ),
    BrokenImplementation(
        "command-through-shell",
        "a user command line is run through a shell",
        ("AS-LIFE-027", "AS-LIFE-028"),
        _CommandThroughShell,
    ),
)


def broken_by_name(name: str) -> BrokenImplementation:
    for broken in BROKEN_IMPLEMENTATIONS:
        if broken.name == name:
            return broken
    raise KeyError(name)
