"""Compaction in the session: manual ``compact()``, and the one runner every other path calls.

:class:`SessionCompaction` is mixed into :class:`relavium_reference._host.session.AgentSession`.
:meth:`SessionCompaction.run_compaction` runs **one** compaction in a task of its own that ``cancel``
(and, inside a turn, ``abort``) cancels, and reports its typed result and whether it installed a new
summary and history (:class:`CompactionReport`).  Manual ``compact()`` moves the session through the
lifecycle's ``history`` state around it; pre-send, after-turn and overflow-recovery compaction call the
runner from within the turn they belong to (they share its interruption).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Literal

from relavium_reference._host.compaction_runner import (
    FAILED_MESSAGES,
    CompactionJob,
    CompactionReport,
    run_compaction,
)
from relavium_reference._host.session_deps import SessionDeps
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.turn import PlanEntry
from relavium_reference._host.usage import SessionUsage
from relavium_reference._model.events import CompactionReason, SessionCompactionFailed
from relavium_reference._model.history_results import (
    CompactionCancelled,
    CompactionFailed,
    CompactionResult,
    NothingToCompact,
)
from relavium_reference._model.records import CostEntry
from relavium_reference._model.shapes import AgentSnapshot, MemoryPolicySpec
from relavium_reference._rules.compaction_plan import kept_slot_count
from relavium_reference._rules.lifecycle import Outcome, SessionInput, SessionState
from relavium_reference._rules.memory import compaction_refusal
from relavium_reference._rules.projection import Exchange

__all__ = ["INTERRUPTED_MESSAGE", "CompactionReport", "SessionCompaction"]

INTERRUPTED_MESSAGE = "the turn was aborted during the compaction"


class SessionCompaction:
    """The compaction half of a session (the session provides the state below)."""

    _agent: AgentSnapshot
    _deps: SessionDeps
    _plan: tuple[PlanEntry, ...]
    _memory: MemoryPolicySpec
    _stamper: EventStamper
    _exchanges: list[Exchange]
    _preamble: str | None
    _interrupt: Literal["abort", "cancel"] | None
    _compaction_task: asyncio.Task[CompactionReport] | None
    _request_ids: Iterator[str]
    _max_tokens_estimate: int | None
    _usage: SessionUsage
    _latched: bool
    session_id: str
    agent_ref: str

    @property
    def state(self) -> SessionState:  # provided by the session
        raise NotImplementedError

    def _enter(self, event: SessionInput) -> Outcome:  # provided by the session
        raise NotImplementedError

    async def _append_boundary(self, kept_slots: int, text: str | None = None) -> None:  # the session's
        raise NotImplementedError

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        """Summarise the older working context (started and idle only).

        The lifecycle refusal comes first, then the memory policy's refusal, then ``nothing_to_compact``
        (nothing older than the latest completed exchange), all before any provider planning, event or
        egress.  Otherwise one compaction runs (see :mod:`relavium_reference._host.compaction_runner`); the
        session is idle again on every exit.
        """
        self._enter(SessionInput.COMPACT)  # idle -> history: nothing races the compaction
        try:
            refusal = compaction_refusal(self._memory)
            if refusal is not None:
                return refusal
            if kept_slot_count(self._exchanges) >= len(self._exchanges):
                return NothingToCompact()
            report = await self.run_compaction("manual", manual=True)
            return report.result
        finally:
            if self.state is SessionState.HISTORY:
                self._enter(SessionInput.HISTORY_SETTLED)

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        """Run one compaction now; the report says whether it installed a new summary and history.

        This is the runner pre-send, after-turn and overflow-recovery compaction call (``manual`` only
        for ``compact()``: it alone may use the unknown-window soft bound).  A cancellation (or, inside
        a turn, an abort) while it runs ends it as ``cancelled`` with nothing installed; an observer's
        own failure propagates unchanged.
        """
        if not await self._usage.opened():  # an accounting boundary: a resumed instance adopts here
            self._latched = True
            return CompactionReport(CompactionFailed(message=FAILED_MESSAGES["pass_failed"]), installed=False)
        job = self._compaction_job(reason, manual=manual, pending_user=pending_user)
        task = asyncio.create_task(run_compaction(job))
        self._compaction_task = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # our caller (the turn) was cancelled: the compaction ends too
            task.cancel()
            await asyncio.wait({task})
            await self._close_interrupted(job)
            raise
        finally:
            self._compaction_task = None
        if task.cancelled():
            await self._close_interrupted(job)
            return CompactionReport(CompactionCancelled(), installed=False)
        return task.result()

    async def _close_interrupted(self, job: CompactionJob) -> None:
        """An interrupted compaction's open moment ends once: the session's cancellation closes it
        itself; an abort of the turn it runs in closes it with the failed-moment event."""
        if job.opened and self.state is not SessionState.CANCELLED:
            job.opened = False
            await self._stamper.emit(
                SessionCompactionFailed, reason=job.reason, outcome="failed", message=INTERRUPTED_MESSAGE
            )

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        deps = self._deps

        def cancelled() -> bool:
            if self.state is SessionState.CANCELLED:
                return True
            return not manual and self._interrupt is not None

        def install(folded_slots: int, summary: str) -> None:
            self._exchanges = self._exchanges[folded_slots:]
            self._preamble = summary

        async def record_cost(entry: CostEntry) -> None:
            if deps.persister is not None:
                await deps.persister.record_cost(self.session_id, entry)

        return CompactionJob(
            reason=reason,
            manual=manual,
            exchanges=tuple(self._exchanges),
            summary=self._preamble,
            pending_user=pending_user,
            system=self._agent.system_prompt,
            memory=self._memory,
            plan=self._plan,
            resolve_provider=deps.resolve_provider,
            models=deps.models,
            admission=deps.admission,
            stamper=self._stamper,
            node_id=self.agent_ref,
            on_compaction_start=deps.on_compaction_start,
            append_boundary=self._append_boundary,
            install=install,
            cancelled=cancelled,
            record_cost=record_cost,
            next_request_id=self._request_ids.__next__,
            max_tokens_estimate=self._max_tokens_estimate,
            prepare_provider=deps.prepare_provider,
            usage=self._usage.writer,
            latch=lambda: setattr(self, "_latched", True),
        )
