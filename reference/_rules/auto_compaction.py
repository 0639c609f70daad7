"""Automatic compaction: whether the pre-send and after-turn triggers run, and the irreducible-fit check.

Pure.  Both triggers measure the actual next owned request
(:func:`relavium_reference._rules.compaction_measure.measure`) against the first attemptable entry's
authoritative window; they are allowed by the memory policy alone (never by funding), and they skip
when there is no authoritative window (unknown or custom, or a provider managing its own context).
Billed usage never enters: nothing here takes a usage figure.

Before a pre-send compaction runs, the **irreducible** part of the next request (the system text, the
tools, the kept part of the working transcript, the pending user and the largest summary wrapper: the
KD-COMP-3 wrapper around a summary of :data:`SUMMARY_MAX_TOKENS` tokens) is measured against the full
window (KD-COMP-9).  When it does not fit, no compaction can make the request fit: the pre-send compaction
is skipped and the turn can no longer start an overflow recovery.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from relavium_reference._model.llm import ToolDef
from relavium_reference._rules.compaction_measure import SUMMARY_MAX_TOKENS, Measurement
from relavium_reference._rules.compaction_plan import kept_slot_count
from relavium_reference._rules.projection import (
    Exchange,
    ProjectedRequest,
    estimate_tokens,
    project_request,
    summary_messages,
    working_messages,
)

__all__ = [
    "LARGEST_SUMMARY_CHARS",
    "Presend",
    "after_turn_runs",
    "irreducible_request",
    "irreducible_tokens",
    "presend_decision",
]

LARGEST_SUMMARY_CHARS = SUMMARY_MAX_TOKENS * 4
"""The characters of the largest summary a pass may return (its output cap, at 4 characters a token)."""


class Presend(enum.Enum):
    """What a turn does before its first main request."""

    NONE = "none"
    """No automatic work: not allowed, no authoritative window, or the trigger does not fire."""
    COMPACT = "compact"
    SKIP_IRREDUCIBLE = "skip_irreducible"
    """The trigger fires but the irreducible part cannot fit: skipped, and no recovery this turn."""


def irreducible_request(
    *,
    system: str,
    exchanges: Sequence[Exchange],
    pending_user: str,
    tools: Sequence[ToolDef] | None,
) -> ProjectedRequest:
    """The part of the next request no compaction can shrink, with the largest summary wrapper."""
    kept = exchanges[len(exchanges) - kept_slot_count(exchanges) :]
    history = [*summary_messages("x" * LARGEST_SUMMARY_CHARS), *working_messages(kept)]
    return project_request(system=system, history=history, pending_user=pending_user, tools=tools)


def irreducible_tokens(
    *,
    system: str,
    exchanges: Sequence[Exchange],
    pending_user: str,
    tools: Sequence[ToolDef] | None,
) -> int:
    """The KD-COMP-2 estimate of :func:`irreducible_request`."""
    return estimate_tokens(
        irreducible_request(system=system, exchanges=exchanges, pending_user=pending_user, tools=tools)
    )


def presend_decision(*, allowed: bool, measurement: Measurement | None, irreducible: int) -> Presend:
    """The pre-send decision: compact, skip for an irreducible request, or nothing.

    ``measurement`` is ``None`` when there is no authoritative window to measure against.  The
    irreducible part is compared with the full window (input alone, strictly over: KD-COMP-9).
    """
    if not allowed or measurement is None or measurement.window is None or not measurement.fires:
        return Presend.NONE
    if irreducible > measurement.window:
        return Presend.SKIP_IRREDUCIBLE
    return Presend.COMPACT


def after_turn_runs(*, allowed: bool, enabled: bool, measurement: Measurement | None) -> bool:
    """After a successful turn: compact when allowed, enabled (``afterTurnCompaction``) and it fires."""
    return allowed and enabled and measurement is not None and measurement.fires
