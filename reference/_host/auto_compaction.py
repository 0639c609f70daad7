"""Automatic compaction in a session: the pre-send and after-turn triggers around a turn.

:class:`SessionAutoCompaction` is mixed into :class:`relavium_reference._host.session.AgentSession`
(above :class:`~relavium_reference._host.session_compaction.SessionCompaction`, whose runner it calls).

* **Pre-send** (:meth:`SessionAutoCompaction._turn_body`, the body of the turn's own task, so the inner
  compaction shares the turn's signal): before the turn's first main request, the actual next owned request
  is measured (:meth:`SessionAutoCompaction._automatic_measurement`); when the trigger fires, the
  irreducible-fit check may skip the compaction (the turn then cannot start an overflow recovery), else one
  compaction runs with the pending user kept.  A failed, skipped or nothing-to-fold compaction sends the
  original owned request (and suppresses recovery); a cancel or an abort of the turn during it sends no
  main request and the session settles the turn; a budget refusal settles ``budget_exceeded`` naming the
  cap.  The turn's request is built after the compaction, from the history it installed.
* **After-turn** (:meth:`SessionAutoCompaction._after_turn`): after a successful turn has settled, the next
  request (history alone, no pending user: KD-COMP-9) is measured; when the trigger fires and
  ``SessionDeps.afterTurnCompaction`` is on, one compaction runs in the lifecycle's ``history`` state
  before ``sendMessage`` returns.  An ordinary failure falls back to the configured deterministic trim
  (``SessionDeps.maxMessages``, reason ``auto-fallback``); a cancelled or budget-refused one never trims.

Neither ever uses the manual unknown-window soft bound, and billed usage never drives either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import cached_property
from typing import Literal

from relavium_reference._host.session_compaction import SessionCompaction
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup, run_turn
from relavium_reference._model.history_results import (
    CompactionBudgetRefused,
    CompactionCancelled,
    CompactionFailed,
    TrimResult,
)
from relavium_reference._model.invocation import UNKNOWN_MODEL
from relavium_reference._model.llm import ToolDef
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
from relavium_reference._rules.lifecycle import SessionInput, SessionState
from relavium_reference._rules.memory import automatic_compaction_allowed
from relavium_reference._rules.projection import HistoryMemo, HistoryMessage, project_request

__all__ = ["SessionAutoCompaction"]


class SessionAutoCompaction(SessionCompaction):
    """The automatic triggers of a session (the session provides the methods below)."""

    @cached_property
    def _histories(self) -> HistoryMemo:
        return HistoryMemo()

    def _history(self) -> Sequence[HistoryMessage]:
        """Selection and summary placement of the working transcript (before any folding), projected
        afresh only when the slots changed otherwise than by appending (see ``HistoryMemo``)."""
        return self._histories.project(self._exchanges, self._memory, self._preamble)

    def _advertised(self, policy: TurnPolicy) -> tuple[str, ...]:  # provided by the session
        raise NotImplementedError

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:  # provided by the session
        raise NotImplementedError

    async def _trim(self, max_messages: int, reason: Literal["manual", "auto-fallback"]) -> TrimResult:
        raise NotImplementedError  # provided by the session

    def _automatic_allowed(self) -> bool:
        """Automatic work is permitted by the resolved memory policy alone (never by funding)."""
        return automatic_compaction_allowed(self._memory)

    # -- measurement -----------------------------------------------------------------------------

    def _entry_windows(self) -> list[EntryWindow]:
        """The plan's entries as the measurement sees them (an entry whose provider does not resolve
        cannot be attempted)."""
        windows: list[EntryWindow] = []
        for entry in self._plan:
            info = self._deps.models.get(entry.model, UNKNOWN_MODEL)
            try:
                self._deps.resolve_provider(entry.provider, entry.model)
            except Exception:
                windows.append(EntryWindow(entry.model, info, attemptable=False))
                continue
            windows.append(EntryWindow(entry.model, info))
        return windows

    def _tool_definitions(self, policy: TurnPolicy) -> list[ToolDef] | None:
        advertised = self._advertised(policy)
        return self._deps.tools.definitions(advertised) if advertised else None

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        """The next owned request measured against the automatic window (``None``: no window).

        ``progress`` is the turn's record (a measurement never reads its usage: billed figures do not
        drive a trigger).
        """
        window = automatic_window(self._entry_windows())
        if window is None:
            return None
        request = project_request(
            system=self._agent.system_prompt,
            history=self._history(),
            pending_user=pending_user,
            tools=self._tool_definitions(policy),
        )
        reservation = output_reservation(self._agent.max_tokens, self._max_tokens_estimate)
        threshold = self._deps.compact_threshold
        return measure(request, reservation=reservation, window=window, threshold=threshold)

    def _irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        """The estimate of what no compaction can shrink (KD-COMP-9)."""
        return irreducible_tokens(
            system=self._agent.system_prompt,
            exchanges=self._exchanges,
            pending_user=pending_user,
            tools=self._tool_definitions(policy),
        )

    # -- pre-send --------------------------------------------------------------------------------

    async def _turn_body(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd:
        """The turn task: the pre-send compaction, then the turn on the history it left."""
        end = await self._presend(text, policy, progress)
        if end is not None:
            return end
        return await run_turn(self._turn_setup(text, policy), progress)

    async def _presend(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd | None:
        """The pre-send compaction; a terminal when the turn must end without a main request."""
        allowed = self._automatic_allowed()
        measurement = self._automatic_measurement(text, progress, policy) if allowed else None
        if measurement is None or not measurement.fires:
            return None
        irreducible = self._irreducible(text, policy)
        decision = presend_decision(allowed=allowed, measurement=measurement, irreducible=irreducible)
        if decision is Presend.SKIP_IRREDUCIBLE:
            progress.presend_suppressed = True
            return None
        if decision is Presend.NONE:
            return None
        report = await self.run_compaction("auto-threshold", pending_user=text)
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

    async def _after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        """After a successful, settled turn: the after-turn compaction, with its trim fallback."""
        if not self._in_state(SessionState.IDLE):
            return  # cancelled (or otherwise not idle): no after-turn work
        allowed = self._automatic_allowed()
        enabled = self._deps.after_turn_compaction
        if not (allowed and enabled):
            return
        measurement = self._automatic_measurement(None, progress, policy)
        if not after_turn_runs(allowed=allowed, enabled=enabled, measurement=measurement):
            return
        self._enter(SessionInput.COMPACT)  # idle -> history: nothing races the after-turn work
        try:
            report = await self.run_compaction("auto-threshold")
            limit = self._deps.max_messages
            failed = isinstance(report.result, CompactionFailed)
            if failed and limit is not None and limit > 0 and self._in_state(SessionState.HISTORY):
                await self._trim(limit, "auto-fallback")  # ordinary failure only: never on cancel or refusal
        finally:
            if self._in_state(SessionState.HISTORY):
                self._enter(SessionInput.HISTORY_SETTLED)

    def _in_state(self, state: SessionState) -> bool:
        return self.state is state
