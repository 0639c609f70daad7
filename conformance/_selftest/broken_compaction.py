"""Broken implementations of measured compaction.

Each is the reference session with one compaction behaviour changed; the ``compaction/*`` cases citing
its clauses must catch it (see :mod:`relavium_conformance._selftest.proofs`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._host.turn import TurnSetup
from relavium_reference._model.events import CompactionReason, SessionCompacted, SessionCompacting
from relavium_reference._model.history_results import CompactionBudgetRefused, CompactionFailed
from relavium_reference._model.invocation import Admission, AdmissionRefused, AdmissionRequest, Admitted
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._rules.projection import project_history, summary_messages

__all__ = ["COMPACTION_BREAKS"]


class _SummaryInTheSystemPrompt(AgentSession):
    """Places the running summary in the system prompt (the older release's placement)."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        if not self._preamble:
            return setup
        wrapper = summary_messages(self._preamble)[0].text
        agent = setup.agent.model_copy(update={"system_prompt": f"{setup.agent.system_prompt}\n\n{wrapper}"})
        return replace(setup, agent=agent, history=project_history(self._exchanges, self._memory, None))


class _FailedCompactionDropsTurns(AgentSession):
    """A failed compaction still drops the older turns it meant to fold."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionFailed):
            self._exchanges = self._exchanges[-1:]
        return report


class _DropsKeptTurnCount(AgentSession):
    """``session:compacted`` leaves out ``keptTurnCount``."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        inner = job.stamper

        class _Stamper:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                if event_type is SessionCompacted:
                    payload.pop("kept_turn_count", None)
                return await inner.emit(event_type, **payload)

        job.stamper = _Stamper()  # type: ignore[assignment]
        return job


class _RefusalHidesTheCap(AgentSession):
    """A budget-refused compaction answers with a generic message instead of the cap's safe one."""

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        report = await super().run_compaction(reason, pending_user=pending_user, manual=manual)
        if isinstance(report.result, CompactionBudgetRefused):
            return replace(report, result=report.result.model_copy(update={"message": "refused"}))
        return report


class _MomentBeforeAdmission(AgentSession):
    """Opens the compaction moment before its first admission, so a refusal there leaves it open."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        inner, stamper = job.admission, job.stamper

        class _Early:
            opened = False

            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                if request.purpose == "summary" and not self.opened:
                    self.opened = True
                    await stamper.emit(SessionCompacting, reason=job.reason)
                return await inner.admit(request)

            async def release(self, request: AdmissionRequest) -> None:
                await inner.release(request)

        early: Admission = _Early()
        job.admission = early
        return job


COMPACTION_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "compacted-summary-in-system",
        "the running summary is placed in the system prompt instead of a user-role message",
        ("AS-PROJ-005",),
        _SummaryInTheSystemPrompt,
    ),
    BrokenImplementation(
        "failed-compaction-drops-turns",
        "a failed compaction still drops the older turns from the working history",
        ("AS-COMP-023",),
        _FailedCompactionDropsTurns,
    ),
    BrokenImplementation(
        "compacted-without-kept-turn-count",
        "session:compacted leaves out keptTurnCount",
        ("AS-MSG-030",),
        _DropsKeptTurnCount,
    ),
    BrokenImplementation(
        "compaction-refusal-hides-the-cap",
        "a budget-refused manual compaction answers a generic message instead of the cap's safe message",
        ("AS-COMP-041",),
        _RefusalHidesTheCap,
    ),
    BrokenImplementation(
        "compaction-moment-before-admission",
        "the compaction moment opens before the first admission, so a refusal there still opened it",
        ("AS-COMP-037",),
        _MomentBeforeAdmission,
    ),
)
