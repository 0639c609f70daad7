"""Measured compaction: what is measured, against which window, and when a trigger fires.

Pure.  The measurement is the KD-COMP-2 estimate of the **actual next owned request** (system text,
projected history, tools, this turn's kept exchange and the pending user), built by the one projection
(:func:`relavium_reference._rules.projection.project_request`) and compared with the window of the
**first attemptable entry** of the plan, with the shared output reservation.  Billed usage never enters:
nothing here takes a usage figure.

A window is authoritative only when the model metadata gives a positive size; an unknown or custom
window, or a provider that manages its own context, skips automatic work (:func:`automatic_window`).
Manual compaction may still run with unknown or mixed windows, under the 16,384-token soft input bound
(:func:`pass_input_limit`), which automatic paths never use.

The planning of the summary passes lives in :mod:`relavium_reference._rules.compaction_plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relavium_reference._model.invocation import ModelInfo
from relavium_reference._rules.projection import ProjectedRequest, estimate_tokens

__all__ = [
    "DEFAULT_COMPACT_THRESHOLD",
    "DEFAULT_OUTPUT_RESERVATION",
    "SOFT_INPUT_BOUND",
    "SUMMARY_MAX_TOKENS",
    "EntryWindow",
    "Measurement",
    "automatic_window",
    "first_attemptable",
    "measure",
    "output_reservation",
    "pass_input_limit",
    "trigger_fires",
]

DEFAULT_COMPACT_THRESHOLD = 0.8
DEFAULT_OUTPUT_RESERVATION = 4096
SUMMARY_MAX_TOKENS = 4096
"""The summariser's output cap: each pass asks for at most this many tokens (and reserves them)."""
SOFT_INPUT_BOUND = 16384
"""Manual unknown/mixed-window compaction keeps each pass's input at or below this (operational only)."""


def output_reservation(max_tokens: int | None, max_tokens_estimate: int | None) -> int:
    """KD-COMP-2: the request's ``maxTokens``, else ``SessionDeps.maxTokensEstimate``, else 4096."""
    if max_tokens is not None and max_tokens > 0:
        return max_tokens
    if max_tokens_estimate is not None and max_tokens_estimate > 0:
        return max_tokens_estimate
    return DEFAULT_OUTPUT_RESERVATION


def trigger_fires(input_tokens: int, reservation: int, window: int, threshold: float) -> bool:
    """The two strict comparisons of KD-COMP-2: over ``threshold * window``, or over the whole window."""
    return input_tokens > threshold * window or input_tokens + reservation > window


@dataclass(frozen=True)
class Measurement:
    """One measured request: its estimate, the reservation, and the window it was measured against."""

    input_tokens: int
    reservation: int
    window: int | None
    threshold: float

    @property
    def fires(self) -> bool:
        """A trigger fires (never without an authoritative window)."""
        if self.window is None:
            return False
        return trigger_fires(self.input_tokens, self.reservation, self.window, self.threshold)

    @property
    def fits(self) -> bool:
        """Input plus reservation within the window (``True`` when the window is unknown)."""
        return self.window is None or self.input_tokens + self.reservation <= self.window


def measure(
    request: ProjectedRequest, *, reservation: int, window: int | None, threshold: float
) -> Measurement:
    """Measure ``request`` (the real next owned request) against ``window``."""
    return Measurement(estimate_tokens(request), reservation, window, threshold)


@dataclass(frozen=True)
class EntryWindow:
    """One plan entry as the measurement sees it: its model, its metadata, and whether it can be attempted
    (its provider resolves: a host without a credential for it cannot)."""

    model: str
    info: ModelInfo
    attemptable: bool = True


def first_attemptable(entries: Sequence[EntryWindow]) -> EntryWindow | None:
    """The first entry of the plan that can be attempted, or ``None``."""
    return next((entry for entry in entries if entry.attemptable), None)


def automatic_window(entries: Sequence[EntryWindow]) -> int | None:
    """The window automatic work measures against: the first attemptable entry's authoritative window.

    ``None`` (automatic work is skipped) when no entry can be attempted, when that entry's window is
    unknown or custom, or when its provider manages its own context.
    """
    first = first_attemptable(entries)
    if first is None or first.info.self_managed:
        return None
    return first.info.authoritative_window


def pass_input_limit(entries: Sequence[EntryWindow], *, manual: bool) -> tuple[int | None, bool]:
    """The most input tokens one summary pass may carry, and whether the soft bound applies.

    Every known attemptable entry bounds it by its window less the summary's output reservation
    (:data:`SUMMARY_MAX_TOKENS`).  A manual compaction with an unknown attemptable window (all unknown,
    or mixed) is also held to :data:`SOFT_INPUT_BOUND`; automatic work never is (it returns the known
    bound alone, ``None`` when there is none).
    """
    attemptable = [entry for entry in entries if entry.attemptable]
    known = [entry.info.authoritative_window for entry in attemptable]
    bounds = [window - SUMMARY_MAX_TOKENS for window in known if window is not None]
    unknown = any(window is None for window in known)
    soft = manual and unknown
    if soft:
        bounds.append(SOFT_INPUT_BOUND)
    return (min(bounds) if bounds else None), soft
