"""Breaks of automatic compaction (clauses AS-COMP-001 to 015): the pre-send and after-turn triggers,
the window measured against, and what a skipped or refused pre-send compaction does to the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_reference import AgentSession
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._host.turn import TurnEnd, TurnProgress, run_turn
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.history_results import CompactionBudgetRefused, CompactionFailed
from relavium_reference._model.invocation import ModelInfo
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import ErrorCode, SessionStopReason
from relavium_reference._rules.auto_compaction import LARGEST_SUMMARY_CHARS
from relavium_reference._rules.compaction_measure import (
    DEFAULT_COMPACT_THRESHOLD,
    EntryWindow,
    Measurement,
    output_reservation,
)
from relavium_reference._rules.compaction_plan import kept_slot_count
from relavium_reference._rules.lifecycle import SessionState
from relavium_reference._rules.projection import (
    HistoryMessage,
    estimate_tokens,
    project_request,
    working_messages,
)

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


# -- the trigger's measurement, edited: most breaks below change one thing of it, in some moments only --

_Edit = Callable[[AgentSession, Measurement], Measurement]
_When = Callable[[AgentSession, Measurement, str | None], bool]


def _always(_session: AgentSession, _measured: Measurement, _pending_user: str | None) -> bool:
    return True


def _after_turn(_session: AgentSession, _measured: Measurement, pending_user: str | None) -> bool:
    """The after-turn moment: no user text is waiting to be sent."""
    return pending_user is None


def _reservation_unset(session: AgentSession) -> bool:
    """Neither maxTokens nor maxTokensEstimate is set: the 4096 default reservation applies."""
    return session._agent.max_tokens is None and session._max_tokens_estimate is None


def _retyped(kind: type[Measurement]) -> _Edit:
    """The same measurement as ``kind``, a ``Measurement`` whose comparison differs."""
    return lambda _session, m: kind(m.input_tokens, m.reservation, m.window, m.threshold)


def _edited(edit: _Edit, *, when: _When = _always) -> Any:
    """An ``_automatic_measurement`` that gives the engine's measurement through ``edit`` where ``when``
    holds (and unchanged elsewhere, or ``None`` where the engine measures nothing)."""

    def _automatic_measurement(
        self: AgentSession, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        measured = AgentSession._automatic_measurement(self, pending_user, progress, policy)
        if measured is None or not when(self, measured, pending_user):
            return measured
        return edit(self, measured)

    return _automatic_measurement


@break_of(
    name="after-turn-ignores-setting",
    summary="after-turn compaction runs although afterTurnCompaction is false",
    clauses=("AS-COMP-013",),
)
class _AfterTurnIgnoresSetting(AgentSession):
    """After-turn compaction runs although ``afterTurnCompaction`` is false."""

    async def _after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        deps = self._deps
        self._deps = replace(deps, after_turn_compaction=True)
        try:
            await super()._after_turn(progress, policy)
        finally:
            self._deps = deps


@break_of(
    name="trigger-measures-history-only",
    summary="the automatic trigger measures the history without the pending user",
    clauses=("AS-COMP-002",),
)
class _MeasuresHistoryOnly(AgentSession):
    """The trigger measures the history alone: the pending user is left out of the measured request."""

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        return super()._automatic_measurement(None, progress, policy)


@break_of(
    name="billed-usage-drives-trigger",
    summary=(
        "the automatic trigger reads the turn's billed input usage instead of the measured next request"
    ),
    clauses=("AS-COMP-005",),
)
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


@break_of(
    name="automatic-compaction-assumes-a-window",
    summary="a model whose window is unknown is measured against an assumed default window",
    clauses=("AS-COMP-006",),
)
class _AssumesAWindow(AgentSession):
    """A model without a known window is taken to have a default window of 8000 tokens."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        models = dict(self._deps.models)
        for entry in self._plan:
            if not models.get(entry.model, ModelInfo()).authoritative_window:
                models[entry.model] = ModelInfo(context_window=8000)
        self._deps = replace(self._deps, models=models)


@break_of(
    name="automatic-compaction-ignores-self-managed",
    summary="a provider that manages its own context still gets automatic compaction",
    clauses=("AS-COMP-006",),
)
class _IgnoresSelfManaged(AgentSession):
    """A provider that manages its own context still gets automatic compaction."""

    def _entry_windows(self) -> list[EntryWindow]:
        return [replace(w, info=ModelInfo(w.info.context_window)) for w in super()._entry_windows()]


@break_of(
    name="cancelled-presend-still-sends",
    summary="a cancel during pre-send compaction still lets the turn send its main request",
    clauses=("AS-COMP-012",),
)
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


@break_of(
    name="inner-compaction-own-signal",
    summary=(
        "a compaction inside a turn has its own signal: an abort of the turn lets it run on and install"
    ),
    clauses=("AS-COMP-015",),
)
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


@break_of(
    name="trigger-measures-unattemptable-entry",
    summary="the trigger measures against a plan entry that cannot be attempted",
    clauses=("AS-COMP-003",),
)
class _MeasuresUnattemptable(AgentSession):
    """Every plan entry counts as attemptable: the trigger may measure an entry that cannot be tried."""

    def _entry_windows(self) -> list[EntryWindow]:
        return [replace(w, attemptable=True) for w in super()._entry_windows()]


@break_of(
    name="trigger-measures-smallest-window",
    summary=(
        "the trigger measures against the smallest window of the plan, not the first attemptable entry's"
    ),
    clauses=("AS-COMP-003",),
)
class _SmallestWindow(AgentSession):
    """The trigger measures against the smallest known window of the plan."""

    def _entry_windows(self) -> list[EntryWindow]:
        windows = super()._entry_windows()
        return sorted(windows, key=lambda w: w.info.authoritative_window or 1 << 62)


@break_of(
    name="trigger-ignores-reservation",
    summary="the trigger leaves out the comparison of input plus output reservation with the window",
    clauses=("AS-COMP-007",),
)
class _IgnoresReservation(AgentSession):
    """The trigger compares with the threshold alone (no input-plus-reservation comparison)."""

    _automatic_measurement = _edited(lambda _session, measured: replace(measured, reservation=0))


@break_of(
    name="reservation-prefers-estimate",
    summary="the output reservation comes from maxTokensEstimate although the request sets maxTokens",
    clauses=("AS-COMP-004",),
)
class _ReservationFromEstimate(AgentSession):
    """The output reservation is taken from maxTokensEstimate even when the request sets maxTokens."""

    _automatic_measurement = _edited(
        lambda session, measured: replace(
            measured, reservation=output_reservation(None, session._max_tokens_estimate)
        )
    )


@break_of(
    name="automatic-compaction-ignores-policy",
    summary="automatic compaction runs although the memory policy does not permit it",
    clauses=("AS-COMP-001",),
)
class _AutomaticIgnoresPolicy(AgentSession):
    """Automatic compaction runs whatever the agent's memory policy says."""

    def _automatic_allowed(self) -> bool:
        return True


@break_of(
    name="presend-ignores-irreducible",
    summary=("pre-send compaction runs although the irreducible part of the request cannot fit the window"),
    clauses=("AS-COMP-008",),
)
class _IgnoresIrreducible(AgentSession):
    """Pre-send compaction runs even when the irreducible part cannot fit the window."""

    def _irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        return 0


@break_of(
    name="presend-failure-drops-main-request",
    summary="a failed or skipped pre-send compaction ends the turn without sending the original request",
    clauses=("AS-COMP-010",),
)
class _PresendFailureDropsMainRequest(AgentSession):
    """A failed or skipped pre-send compaction ends the turn without sending the main request."""

    async def _presend(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd | None:
        end = await super()._presend(text, policy, progress)
        if end is None and progress.presend_suppressed:
            return TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.INTERNAL)
        return end


@break_of(
    name="presend-refusal-sends-original",
    summary=(
        "a budget refusal of pre-send compaction is taken for a failure: the original main request goes out"
    ),
    clauses=("AS-COMP-011",),
)
class _PresendRefusalSendsOriginal(AgentSession):
    """A pre-send budget refusal is taken for an ordinary failure: the original main request goes out."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionBudgetRefused) and pending_user is not None:
            return CompactionReport(CompactionFailed(message=report.result.message), installed=False)
        return report


@dataclass(frozen=True)
class _InclusiveThreshold(Measurement):
    """A measurement whose threshold comparison includes the bound itself."""

    @property
    def fires(self) -> bool:
        if self.window is None:
            return False
        over_window = self.input_tokens + self.reservation > self.window
        return self.input_tokens >= self.threshold * self.window or over_window


@dataclass(frozen=True)
class _InclusiveReservation(Measurement):
    """A measurement whose reservation comparison includes a request that fills the window exactly."""

    @property
    def fires(self) -> bool:
        if self.window is None:
            return False
        over_threshold = self.input_tokens > self.threshold * self.window
        return over_threshold or self.input_tokens + self.reservation >= self.window


@break_of(
    name="trigger-threshold-inclusive",
    summary="the automatic trigger fires at exactly threshold x window (>= instead of the strict >)",
    clauses=("AS-COMP-007",),
)
class _ThresholdInclusive(AgentSession):
    """The threshold comparison is ``>=``: a request measured exactly at the bound compacts."""

    _automatic_measurement = _edited(_retyped(_InclusiveThreshold))


@break_of(
    name="trigger-reservation-inclusive",
    summary="the automatic trigger fires when input plus the reservation exactly fills the window",
    clauses=("AS-COMP-007",),
)
class _ReservationInclusive(AgentSession):
    """The window comparison is ``>=``: a request whose input plus reservation equals the window compacts."""

    _automatic_measurement = _edited(_retyped(_InclusiveReservation))


@break_of(
    name="default-threshold-ignored",
    summary="with compactThreshold unset, the trigger measures against 0.9 instead of the default 0.8",
    clauses=("AS-COMP-007",),
)
class _DefaultThresholdIgnored(AgentSession):
    """The host's unset threshold (the dataclass default) is read as 0.9: no case sets 0.8 explicitly."""

    _automatic_measurement = _edited(
        lambda _session, measured: replace(measured, threshold=0.9),
        when=lambda _session, measured, _pending: measured.threshold == DEFAULT_COMPACT_THRESHOLD,
    )


@break_of(
    name="trigger-default-reservation-ignored",
    summary="with neither maxTokens nor maxTokensEstimate set, the trigger reserves no output at all",
    clauses=("AS-COMP-007", "AS-COMP-003"),
)
class _TriggerDefaultReservationIgnored(AgentSession):
    """The trigger's reservation falls to 0 instead of 4096 when nothing sets it."""

    _automatic_measurement = _edited(
        lambda _session, measured: replace(measured, reservation=0),
        when=lambda session, _measured, _pending: _reservation_unset(session),
    )


@break_of(
    name="after-turn-threshold-inclusive",
    summary=(
        "the after-turn trigger fires when the next request measures exactly threshold x window (>=); the "
        "pre-send comparison stays strict"
    ),
    clauses=("AS-COMP-007",),
)
class _AfterTurnThresholdInclusive(AgentSession):
    """After the turn (no pending user), the threshold comparison is ``>=``; before it, strict."""

    _automatic_measurement = _edited(_retyped(_InclusiveThreshold), when=_after_turn)


@dataclass(frozen=True)
class _RoundedFill(Measurement):
    """A measurement whose threshold comparison reads the fill as a whole percentage of the window."""

    @property
    def fires(self) -> bool:
        if self.window is None:
            return False
        percent = round(100 * self.input_tokens / self.window)
        over_threshold = percent > round(100 * self.threshold)
        return over_threshold or self.input_tokens + self.reservation > self.window


@break_of(
    name="after-turn-threshold-on-a-rounded-percentage",
    summary=(
        "after the turn the threshold is compared with the context fill rounded to a whole percentage, "
        "so a next request a token over threshold x window does not compact"
    ),
    clauses=("AS-COMP-007",),
)
class _AfterTurnRoundedFill(AgentSession):
    """After the turn, the trigger reads the fill the session reports (a whole percentage)."""

    _automatic_measurement = _edited(_retyped(_RoundedFill), when=_after_turn)


def _presend_default(session: AgentSession, _measured: Measurement, pending_user: str | None) -> bool:
    """A pre-send measurement (a pending user) with neither maxTokens nor maxTokensEstimate set."""
    return pending_user is not None and _reservation_unset(session)


@break_of(
    name="presend-default-reservation-free-space-inclusive",
    summary=(
        "with neither maxTokens nor maxTokensEstimate set, the pre-send trigger compacts when the window "
        "leaves 4096 tokens or fewer free (<=), so a request exactly filling it with the 4096 compacts"
    ),
    clauses=("AS-COMP-007", "AS-COMP-003"),
)
class _PresendDefaultFreeSpaceInclusive(AgentSession):
    """The pre-send trigger's default path asks for more than 4096 tokens free instead of 4096."""

    _automatic_measurement = _edited(_retyped(_InclusiveReservation), when=_presend_default)


@break_of(
    name="presend-default-reservation-ignored",
    summary=(
        "with neither maxTokens nor maxTokensEstimate set, the pre-send trigger reads the request's unset "
        "maxTokens as no reservation; the after-turn trigger keeps 4096"
    ),
    clauses=("AS-COMP-007", "AS-COMP-003"),
)
class _PresendDefaultReservationIgnored(AgentSession):
    """The pre-send trigger reserves nothing when nothing sets the reservation."""

    _automatic_measurement = _edited(
        lambda _session, measured: replace(measured, reservation=0), when=_presend_default
    )


@break_of(
    name="irreducible-compared-inclusively",
    summary=(
        "pre-send compaction is skipped when the irreducible part of the request exactly fills the window "
        "(>= instead of the strict >), although it fits"
    ),
    clauses=("AS-COMP-008",),
)
class _IrreducibleInclusive(AgentSession):
    """The irreducible part is compared with ``>=``: one token added to it is the same thing."""

    def _irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        return super()._irreducible(pending_user, policy) + 1


@break_of(
    name="irreducible-wrapper-without-its-tags",
    summary=(
        "the irreducible-fit check counts the largest summary as its 16,384 characters alone, leaving out "
        "the wrapper text the summary travels in"
    ),
    clauses=("AS-COMP-008",),
)
class _IrreducibleWithoutTags(AgentSession):
    """The largest summary wrapper is measured as the bare summary text: its own text is not counted."""

    def _irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        exchanges = self._exchanges
        kept = exchanges[len(exchanges) - kept_slot_count(exchanges) :]
        history = [HistoryMessage("user", "x" * LARGEST_SUMMARY_CHARS), *working_messages(kept)]
        tools = self._auto._tool_definitions(policy)
        system = self._agent.system_prompt
        request = project_request(system=system, history=history, pending_user=pending_user, tools=tools)
        return estimate_tokens(request)


# A break only the generated ``compaction`` area finds (``generated.BOUNDARY_BREAKS``, ``docs/proofs.md``)


@break_of(
    name="after-turn-reservation-ignores-estimate",
    summary=(
        "after the turn (no request yet, so no maxTokens) the trigger reserves the 4096 default, ignoring "
        "SessionDeps.maxTokensEstimate; the pre-send trigger keeps it"
    ),
    clauses=("AS-COMP-007", "AS-COMP-003"),
)
class _AfterTurnReservationIgnoresEstimate(AgentSession):
    """The after-turn measurement takes its reservation from the agent's ``max_tokens`` or 4096 alone."""

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        measured = super()._automatic_measurement(pending_user, progress, policy)
        if measured is None or pending_user is not None:
            return measured
        return replace(measured, reservation=output_reservation(self._agent.max_tokens, None))
