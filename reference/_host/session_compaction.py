"""Compaction in the session: manual ``compact()``, and the one runner every other path calls.

:class:`SessionCompactions` is a collaborator of :class:`relavium_reference._host.session.AgentSession`,
which builds it with the narrow face of itself a compaction needs (:class:`CompactionPorts`).
:meth:`SessionCompactions.run` runs **one** compaction in a task of its own that ``cancel`` (and, inside a
turn, ``abort``) cancels, and reports its typed result and whether it installed a new summary and history
(:class:`CompactionReport`).  Manual ``compact()`` moves the session through the
lifecycle's ``history`` state around it; pre-send, after-turn and overflow-recovery compaction call the
runner from within the turn they belong to (they share its interruption).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from relavium_reference._host.compaction_runner import (
    FAILED_MESSAGES,
    CompactionJob,
    CompactionReport,
    run_compaction,
)
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.usage import SessionUsage
from relavium_reference._model.events import CompactionReason, SessionCompactionFailed
from relavium_reference._model.history_results import (
    CompactionCancelled,
    CompactionFailed,
    CompactionResult,
    NothingToCompact,
)
from relavium_reference._model.shapes import MemoryPolicySpec
from relavium_reference._rules.compaction_plan import nothing_to_fold
from relavium_reference._rules.lifecycle import Outcome, SessionInput, SessionState
from relavium_reference._rules.memory import compaction_refusal
from relavium_reference._rules.projection import Exchange

__all__ = ["INTERRUPTED_MESSAGE", "CompactionPorts", "CompactionReport", "SessionCompactions"]

INTERRUPTED_MESSAGE = "the turn was aborted during the compaction"


@dataclass(frozen=True)
class CompactionPorts:
    """What a session's compactions read and move of their session; each member is read when used."""

    state: Callable[[], SessionState]
    enter: Callable[[SessionInput], Outcome]
    memory: Callable[[], MemoryPolicySpec]
    exchanges: Callable[[], Sequence[Exchange]]
    usage: Callable[[], SessionUsage]
    latch: Callable[[], None]
    stamper: Callable[[], EventStamper]
    job: Callable[[CompactionReason, bool, str | None], CompactionJob]
    """The session's job for one compaction: ``job(reason, manual, pending_user)``."""
    run: Callable[[CompactionReason, bool], Awaitable[CompactionReport]]
    """The session's runner (``AgentSession.run_compaction``): ``run(reason, manual)``."""


class SessionCompactions:
    """A session's compactions: manual ``compact()`` and the one runner every other path calls."""

    def __init__(self, ports: CompactionPorts) -> None:
        self._ports = ports
        self.task: asyncio.Task[CompactionReport] | None = None
        """The compaction running now (the session's ``cancel`` cancels it)."""

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        """Summarise the older working context (started and idle only).

        The lifecycle refusal comes first, then the memory policy's refusal, then ``nothing_to_compact``
        (nothing older than the latest completed exchange), all before any provider planning, event or
        egress.  Otherwise one compaction runs (see :mod:`relavium_reference._host.compaction_runner`); the
        session is idle again on every exit.
        """
        ports = self._ports
        ports.enter(SessionInput.COMPACT)  # idle -> history: nothing races the compaction
        try:
            refusal = compaction_refusal(ports.memory())
            if refusal is not None:
                return refusal
            if nothing_to_fold(ports.exchanges()):
                return NothingToCompact()
            report = await ports.run(reason, True)
            return report.result
        finally:
            if ports.state() is SessionState.HISTORY:
                ports.enter(SessionInput.HISTORY_SETTLED)

    async def run(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        """Run one compaction now; the report says whether it installed a new summary and history.

        This is the runner pre-send, after-turn and overflow-recovery compaction call (``manual`` only
        for ``compact()``: it alone may use the unknown-window soft bound).  A cancellation (or, inside
        a turn, an abort) while it runs ends it as ``cancelled`` with nothing installed; an observer's
        own failure propagates unchanged.
        """
        ports = self._ports
        if not await ports.usage().opened():  # an accounting boundary: a resumed instance adopts here
            ports.latch()
            return CompactionReport(CompactionFailed(message=FAILED_MESSAGES["pass_failed"]), installed=False)
        job = ports.job(reason, manual, pending_user)
        task = asyncio.create_task(run_compaction(job))
        self.task = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # our caller (the turn) was cancelled: the compaction ends too
            task.cancel()
            await asyncio.wait({task})
            await self._close_interrupted(job)
            raise
        finally:
            self.task = None
        if task.cancelled():
            await self._close_interrupted(job)
            return CompactionReport(CompactionCancelled(), installed=False)
        return task.result()

    async def _close_interrupted(self, job: CompactionJob) -> None:
        """An interrupted compaction's open moment ends once: the session's cancellation closes it
        itself; an abort of the turn it runs in closes it with the failed-moment event."""
        if job.opened and self._ports.state() is not SessionState.CANCELLED:
            job.opened = False
            await self._ports.stamper().emit(
                SessionCompactionFailed, reason=job.reason, outcome="failed", message=INTERRUPTED_MESSAGE
            )
