"""The compaction of an overflow recovery: the session's one compaction runner, reason ``auto-overflow``.

:func:`recover_overflow` is the turn's ``recover`` port (:class:`~relavium_reference._host.turn.TurnSetup`):
it runs only when the turn's private recovery facts allow it (``_rules.overflow.may_recover``), once, and
answers what the turn does next.  The compaction is the one every other path runs
(:meth:`relavium_reference._host.session.AgentSession.run_compaction`, with the turn's
pending user kept verbatim and never the manual soft bound), so its planning, passes, marker and events
are those of KD-COMP-7:

* nothing older than the latest completed exchange, or an ordinary failure (the moment, when opened,
  closes with ``session:compaction_failed``) → ``None``: nothing is installed, the original overflow stands;
* a budget refusal → :class:`RecoveryRefused` with its safe message (the turn settles ``budget_exceeded``);
  a refused first admission opens no moment;
* an abort of the turn during it closes the open moment once before the turn ends as aborted (a cancel of
  the session closes it itself);
* otherwise one summary and history replacement, one durable boundary marker, one ``session:compacted``
  (reason ``auto-overflow``) and :class:`Recovered` with the new working history for the one fresh retry.

The summariser's spend never enters the turn's usage and uses no slot of the hard cap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from relavium_reference._host.compaction_runner import CompactionReport
from relavium_reference._host.turn import Recovered, RecoveryRefused, TurnSetup
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.history_results import CompactionBudgetRefused, CompactionCancelled
from relavium_reference._rules.projection import HistoryMessage

__all__ = ["recover_overflow"]


class _Session(Protocol):
    """The parts of an :class:`~relavium_reference._host.session.AgentSession` a recovery uses."""

    def _history(self) -> Sequence[HistoryMessage]: ...

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport: ...


async def recover_overflow(session: _Session, setup: TurnSetup) -> Recovered | RecoveryRefused | None:
    """The one compaction of an overflow recovery (see the module text)."""
    report = await session.run_compaction("auto-overflow", pending_user=setup.pending_user)
    result = report.result
    if isinstance(result, CompactionCancelled):
        raise asyncio.CancelledError  # the turn's own signal: the session settles the turn
    if isinstance(result, CompactionBudgetRefused):
        return RecoveryRefused(message=result.message)
    if not report.installed:
        return None
    return Recovered(history=session._history())
