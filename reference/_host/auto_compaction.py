"""Automatic compaction in a session: the pre-send and after-turn triggers around a turn.

:class:`AutoCompaction` is a collaborator of :class:`relavium_reference._host.session.AgentSession`,
which builds it with the narrow face of itself the triggers need (:class:`AutoCompactionPorts`).  Each step
the session may refine (a measurement, the entry windows, the pre-send, the runner, ...) is reached through
its port, so the session's own methods stay the single place each step is decided.

* **Pre-send** (:meth:`AutoCompaction.turn_body`, the body of the turn's own task, so the inner
  compaction shares the turn's signal): before the turn's first main request, the actual next owned request
  is measured (:meth:`AutoCompaction.measurement`); when the trigger fires, the
  irreducible-fit check may skip the compaction (the turn then cannot start an overflow recovery), else one
  compaction runs with the pending user kept.  A failed, skipped or nothing-to-fold compaction sends the
  original owned request (and suppresses recovery); a cancel or an abort of the turn during it sends no
  main request and the session settles the turn; a budget refusal settles ``budget_exceeded`` naming the
  cap.  The turn's request is built after the compaction, from the history it installed.
* **After-turn** (:meth:`AutoCompaction.after_turn`): after a successful turn has settled, the next
  request (history alone, no pending user: KD-COMP-9) is measured; when the trigger fires and
  ``SessionDeps.afterTurnCompaction`` is on, one compaction runs in the lifecycle's ``history`` state
  before ``sendMessage`` returns.  An ordinary failure falls back to the configured deterministic trim
  (``SessionDeps.maxMessages``, reason ``auto-fallback``); a cancelled or budget-refused one never trims.

Neither ever uses the manual unknown-window soft bound, and billed usage never drives either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from relavium_reference._host.session_compaction import CompactionReport
from relavium_reference._host.turn import PlanEntry, TurnEnd, TurnProgress, TurnSetup, run_turn
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.history_results import (
    CompactionBudgetRefused,
    CompactionCancelled,
    CompactionFailed,
    TrimResult,
)
from relavium_reference._model.invocation import UNKNOWN_MODEL
from relavium_reference._model.llm import ToolDef
from relavium_reference._model.shapes import AgentSnapshot, MemoryPolicySpec
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import ErrorCode, SessionStopReason
from relavium_reference._rules.auto_compaction import (
    Presend,
    after_turn_runs,
    irreducible_tokens,
    presend_decision,
)
from relavium_reference._rules.compaction_measure import (
    EntryWindow,
    Measurement,
    automatic_window,
    measure,
    output_reservation,
)
from relavium_reference._rules.lifecycle import Outcome, SessionInput, SessionState
from relavium_reference._rules.memory import automatic_compaction_allowed
from relavium_reference._rules.projection import Exchange, HistoryMessage, project_request

if TYPE_CHECKING:
    from relavium_reference._host.session_deps import SessionDeps

__all__ = ["AutoCompaction", "AutoCompactionPorts"]


@dataclass(frozen=True)
class AutoCompactionPorts:
    """What the automatic triggers read and move of their session; each member is read when used."""

    agent: Callable[[], AgentSnapshot]
    deps: Callable[[], SessionDeps]
    plan: Callable[[], Sequence[PlanEntry]]
    exchanges: Callable[[], Sequence[Exchange]]
    history: Callable[[], Sequence[HistoryMessage]]
    memory: Callable[[], MemoryPolicySpec]
    max_tokens_estimate: Callable[[], int | None]
    state: Callable[[], SessionState]
    enter: Callable[[SessionInput], Outcome]
    advertised: Callable[[TurnPolicy], tuple[str, ...]]
    turn_setup: Callable[[str, TurnPolicy], TurnSetup]
    run_compaction: Callable[[CompactionReason, str | None], Awaitable[CompactionReport]]
    """The session's runner: ``run_compaction(reason, pending_user)``."""
    trim: Callable[[int, Literal["manual", "auto-fallback"]], Awaitable[TrimResult]]
    # The session's own steps, each defaulting to this collaborator's method of the same meaning:
    allowed: Callable[[], bool]
    entry_windows: Callable[[], list[EntryWindow]]
    measurement: Callable[[str | None, TurnProgress, TurnPolicy], Measurement | None]
    irreducible: Callable[[str, TurnPolicy], int]
    presend: Callable[[str, TurnPolicy, TurnProgress], Awaitable[TurnEnd | None]]


class AutoCompaction:
    """The automatic triggers of a session: pre-send (inside the turn's task) and after-turn."""

    def __init__(self, ports: AutoCompactionPorts) -> None:
        self._ports = ports

    def allowed(self) -> bool:
        """Automatic work is permitted by the resolved memory policy alone (never by funding)."""
        return automatic_compaction_allowed(self._ports.memory())

    # -- measurement -----------------------------------------------------------------------------

    def entry_windows(self) -> list[EntryWindow]:
        """The plan's entries as the measurement sees them (an entry whose provider does not resolve
        cannot be attempted)."""
        deps = self._ports.deps()
        windows: list[EntryWindow] = []
        for entry in self._ports.plan():
            info = deps.models.get(entry.model, UNKNOWN_MODEL)
            try:
                deps.resolve_provider(entry.provider, entry.model)
            except Exception:
                windows.append(EntryWindow(entry.model, info, attemptable=False))
                continue
            windows.append(EntryWindow(entry.model, info))
        return windows

    def _tool_definitions(self, policy: TurnPolicy) -> list[ToolDef] | None:
        advertised = self._ports.advertised(policy)
        return self._ports.deps().tools.definitions(advertised) if advertised else None

    def measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        """The next owned request measured against the automatic window (``None``: no window).

        ``progress`` is the turn's record (a measurement never reads its usage: billed figures do not
        drive a trigger).
        """
        window = automatic_window(self._ports.entry_windows())
        if window is None:
            return None
        agent = self._ports.agent()
        request = project_request(
            system=agent.system_prompt,
            history=self._ports.history(),
            pending_user=pending_user,
            tools=self._tool_definitions(policy),
        )
        reservation = output_reservation(agent.max_tokens, self._ports.max_tokens_estimate())
        threshold = self._ports.deps().compact_threshold
        return measure(request, reservation=reservation, window=window, threshold=threshold)

    def irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        """The estimate of what no compaction can shrink (KD-COMP-9)."""
        return irreducible_tokens(
            system=self._ports.agent().system_prompt,
            exchanges=self._ports.exchanges(),
            pending_user=pending_user,
            tools=self._tool_definitions(policy),
        )

    # -- pre-send --------------------------------------------------------------------------------

    async def turn_body(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd:
        """The turn task: the pre-send compaction, then the turn on the history it left."""
        end = await self._ports.presend(text, policy, progress)
        if end is not None:
            return end
        return await run_turn(self._ports.turn_setup(text, policy), progress)

    async def presend(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd | None:
        """The pre-send compaction; a terminal when the turn must end without a main request."""
        ports = self._ports
        allowed = ports.allowed()
        measurement = ports.measurement(text, progress, policy) if allowed else None
        if measurement is None or not measurement.fires:
            return None
        irreducible = ports.irreducible(text, policy)
        decision = presend_decision(allowed=allowed, measurement=measurement, irreducible=irreducible)
        if decision is Presend.SKIP_IRREDUCIBLE:
            progress.presend_suppressed = True
            return None
        if decision is Presend.NONE:
            return None
        report = await ports.run_compaction("auto-threshold", text)
        result = report.result
        if isinstance(result, CompactionCancelled):
            raise asyncio.CancelledError  # the turn's own signal: the session settles the turn
        if isinstance(result, CompactionBudgetRefused):
            return TurnEnd(
                SessionStopReason.ERROR, error_code=ErrorCode.BUDGET_EXCEEDED, error_message=result.message
            )
        if not report.installed:
            progress.presend_suppressed = True  # failed or nothing folded: the original request goes out
        return None

    # -- after-turn ------------------------------------------------------------------------------

    async def after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        """After a successful, settled turn: the after-turn compaction, with its trim fallback."""
        ports = self._ports
        if ports.state() is not SessionState.IDLE:
            return  # cancelled (or otherwise not idle): no after-turn work
        allowed = ports.allowed()
        enabled = ports.deps().after_turn_compaction
        if not (allowed and enabled):
            return
        measurement = ports.measurement(None, progress, policy)
        if not after_turn_runs(allowed=allowed, enabled=enabled, measurement=measurement):
            return
        ports.enter(SessionInput.COMPACT)  # idle -> history: nothing races the after-turn work
        try:
            report = await ports.run_compaction("auto-threshold", None)
            limit = ports.deps().max_messages
            failed = isinstance(report.result, CompactionFailed)
            if failed and limit is not None and limit > 0 and ports.state() is SessionState.HISTORY:
                await ports.trim(limit, "auto-fallback")  # ordinary failure only: never on cancel or refusal
        finally:
            if ports.state() is SessionState.HISTORY:
                ports.enter(SessionInput.HISTORY_SETTLED)
