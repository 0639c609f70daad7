"""Broken implementations of automatic compaction (the pre-send and after-turn triggers).

Each is the reference session with one automatic-compaction behaviour changed; the
``compaction/auto-*`` cases citing its clauses must catch it (see
:mod:`relavium_conformance._selftest.proofs`).  They override the hooks of
:class:`relavium_reference._host.auto_compaction.SessionAutoCompaction`.
"""

from __future__ import annotations

from dataclasses import replace

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_reference import AgentSession
from relavium_reference._host.turn import TurnProgress
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._rules.compaction import Measurement

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
)
