"""Broken implementations of automatic compaction (the pre-send and after-turn triggers).

Each is the reference session with one automatic-compaction behaviour changed; the
``compaction/auto-*`` cases citing its clauses must catch it (see
:mod:`relavium_conformance._selftest.proofs`).  They override the hooks of
:class:`relavium_reference._host.auto_compaction.SessionAutoCompaction`.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._host.turn import TurnEnd, TurnProgress, run_turn
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.history_results import CompactionCancelled, CompactionFailed
from relavium_reference._model.invocation import ModelInfo
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import ErrorCode, SessionStopReason
from relavium_reference._rules.compaction_measure import EntryWindow, Measurement, output_reservation
from relavium_reference._rules.lifecycle import SessionState

__all__ = ["AUTO_COMPACTION_BREAKS"]


class _AfterTurnIgnoresSetting(AgentSession):
    """After-turn compaction runs although ``afterTurnCompaction`` is false."""

    async def _after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        deps = self._deps
        self._deps = replace(deps, after_turn_compaction=True)
        try:
            await super()._after_turn(progress, policy)
        finally:
            self._deps = deps


class _MeasuresHistoryOnly(AgentSession):
    """The trigger measures the history alone: the pending user is left out of the measured request."""

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        return super()._automatic_measurement(None, progress, policy)


class _BilledUsageDrivesTrigger(AgentSession):
    """The trigger takes the turn's billed input usage when it is larger than the measured estimate."""

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        measured = super()._automatic_measurement(pending_user, progress, policy)
        billed = progress.usage.input_tokens
        if measured is None or billed <= measured.input_tokens:
            return measured
        return replace(measured, input_tokens=billed)


class _AssumesAWindow(AgentSession):
    """A model without a known window is taken to have a default window of 8000 tokens."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        models = dict(self._deps.models)
        for entry in self._plan:
            if not models.get(entry.model, ModelInfo()).authoritative_window:
                models[entry.model] = ModelInfo(context_window=8000)
        self._deps = replace(self._deps, models=models)


class _IgnoresSelfManaged(AgentSession):
    """A provider that manages its own context still gets automatic compaction."""

    def _entry_windows(self) -> list[EntryWindow]:
        return [replace(w, info=ModelInfo(w.info.context_window)) for w in super()._entry_windows()]


class _SoftBoundAutomatically(AgentSession):
    """Automatic compaction runs as a manual one would: the unknown-window soft bound and its
    acknowledgement apply to it too."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        return await super().run_compaction(reason, pending_user=pending_user, manual=True)


class _CancelledCompactionTrims(AgentSession):
    """A cancelled automatic compaction still falls back to the deterministic trim."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        limit = self._deps.max_messages
        if isinstance(report.result, CompactionCancelled) and not manual and limit:
            await self._trim(limit, "auto-fallback")
        return report


class _FailureKeepsEverything(AgentSession):
    """An ordinary after-turn compaction failure does not fall back to the configured trim."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionFailed) and not manual and pending_user is None:
            return replace(report, result=CompactionCancelled())  # after-turn: as if cancelled
        return report


class _CancelledPresendStillSends(AgentSession):
    """A cancel during the pre-send compaction ends the compaction, but the turn sends its request anyway."""

    async def _turn_body(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd:
        try:
            end = await self._presend(text, policy, progress)
        except asyncio.CancelledError:
            end = None
        if end is not None:
            return end
        return await run_turn(self._turn_setup(text, policy), progress)


class _NotSharingTheTurnSignal(AgentSession):
    """The inner compaction has a signal of its own: an abort of the turn does not stop it."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        job.cancelled = lambda: self.state is SessionState.CANCELLED
        return job

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        inner = asyncio.ensure_future(
            super().run_compaction(reason, pending_user=pending_user, manual=manual)
        )
        try:
            return await asyncio.shield(inner)
        except asyncio.CancelledError:
            await inner  # the turn's abort does not reach the compaction: it runs to its end
            raise


class _MeasuresUnattemptable(AgentSession):
    """Every plan entry counts as attemptable: the trigger may measure an entry that cannot be tried."""

    def _entry_windows(self) -> list[EntryWindow]:
        return [replace(w, attemptable=True) for w in super()._entry_windows()]


class _SmallestWindow(AgentSession):
    """The trigger measures against the smallest known window of the plan."""

    def _entry_windows(self) -> list[EntryWindow]:
        windows = super()._entry_windows()
        return sorted(windows, key=lambda w: w.info.authoritative_window or 1 << 62)


class _IgnoresReservation(AgentSession):
    """The trigger compares with the threshold alone (no input-plus-reservation comparison)."""

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        measured = super()._automatic_measurement(pending_user, progress, policy)
        return None if measured is None else replace(measured, reservation=0)


class _ReservationFromEstimate(AgentSession):
    """The output reservation is taken from maxTokensEstimate even when the request sets maxTokens."""

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        measured = super()._automatic_measurement(pending_user, progress, policy)
        if measured is None:
            return None
        return replace(measured, reservation=output_reservation(None, self._max_tokens_estimate))


class _AutomaticIgnoresPolicy(AgentSession):
    """Automatic compaction runs whatever the agent's memory policy says."""

    def _automatic_allowed(self) -> bool:
        return True


class _IgnoresIrreducible(AgentSession):
    """Pre-send compaction runs even when the irreducible part cannot fit the window."""

    def _irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        return 0


class _PresendFailureDropsMainRequest(AgentSession):
    """A failed or skipped pre-send compaction ends the turn without sending the main request."""

    async def _presend(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd | None:
        end = await super()._presend(text, policy, progress)
        if end is None and progress.presend_suppressed:
            return TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.INTERNAL)
        return end


AUTO_COMPACTION_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "after-turn-ignores-setting",
        "after-turn compaction runs although afterTurnCompaction is false",
        ("AS-COMP-013",),
        _AfterTurnIgnoresSetting,
    ),
    BrokenImplementation(
        "trigger-measures-history-only",
        "the automatic trigger measures the history without the pending user",
        ("AS-COMP-002",),
        _MeasuresHistoryOnly,
    ),
    BrokenImplementation(
        "billed-usage-drives-trigger",
        "the automatic trigger reads the turn's billed input usage instead of the measured next request",
        ("AS-COMP-005",),
        _BilledUsageDrivesTrigger,
    ),
    BrokenImplementation(
        "automatic-compaction-assumes-a-window",
        "a model whose window is unknown is measured against an assumed default window",
        ("AS-COMP-006",),
        _AssumesAWindow,
    ),
    BrokenImplementation(
        "automatic-compaction-ignores-self-managed",
        "a provider that manages its own context still gets automatic compaction",
        ("AS-COMP-006",),
        _IgnoresSelfManaged,
    ),
    BrokenImplementation(
        "soft-bound-applied-automatically",
        "automatic compaction uses the manual unknown-window soft bound and acknowledgement",
        ("AS-COMP-035",),
        _SoftBoundAutomatically,
    ),
    BrokenImplementation(
        "cancelled-compaction-trims",
        "a cancelled after-turn compaction still falls back to the deterministic trim",
        ("AS-COMP-046",),
        _CancelledCompactionTrims,
    ),
    BrokenImplementation(
        "after-turn-failure-keeps-everything",
        "an ordinary after-turn compaction failure does not fall back to the configured trim",
        ("AS-COMP-045",),
        _FailureKeepsEverything,
    ),
    BrokenImplementation(
        "cancelled-presend-still-sends",
        "a cancel during pre-send compaction still lets the turn send its main request",
        ("AS-COMP-012",),
        _CancelledPresendStillSends,
    ),
    BrokenImplementation(
        "inner-compaction-own-signal",
        "a compaction inside a turn has its own signal: an abort of the turn lets it run on and install",
        ("AS-COMP-015",),
        _NotSharingTheTurnSignal,
    ),
    BrokenImplementation(
        "trigger-measures-unattemptable-entry",
        "the trigger measures against a plan entry that cannot be attempted",
        ("AS-COMP-003",),
        _MeasuresUnattemptable,
    ),
    BrokenImplementation(
        "trigger-measures-smallest-window",
        "the trigger measures against the smallest window of the plan, not the first attemptable entry's",
        ("AS-COMP-003",),
        _SmallestWindow,
    ),
    BrokenImplementation(
        "trigger-ignores-reservation",
        "the trigger leaves out the comparison of input plus output reservation with the window",
        ("AS-COMP-007",),
        _IgnoresReservation,
    ),
    BrokenImplementation(
        "reservation-prefers-estimate",
        "the output reservation comes from maxTokensEstimate although the request sets maxTokens",
        ("AS-COMP-004",),
        _ReservationFromEstimate,
    ),
    BrokenImplementation(
        "automatic-compaction-ignores-policy",
        "automatic compaction runs although the memory policy does not permit it",
        ("AS-COMP-001",),
        _AutomaticIgnoresPolicy,
    ),
    BrokenImplementation(
        "presend-ignores-irreducible",
        "pre-send compaction runs although the irreducible part of the request cannot fit the window",
        ("AS-COMP-008",),
        _IgnoresIrreducible,
    ),
    BrokenImplementation(
        "presend-failure-drops-main-request",
        "a failed or skipped pre-send compaction ends the turn without sending the original request",
        ("AS-COMP-010",),
        _PresendFailureDropsMainRequest,
    ),
)
