"""Broken implementations of the event contract: events whose shape the event schema refuses.

Each is the reference engine with one field of one event damaged on the wire.  The generic event check
(``_judge/events.py``) must catch them on every transport, booking the failure on AS-EVT-001 (KD-EVT-2).
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.wire_variants import WireVariant

__all__ = ["EVENT_BREAKS"]


class _MistypedCost(WireVariant):
    """``cost:updated`` says its cost in words: ``costMicrocents: "free"``."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "cost:updated":
            event["costMicrocents"] = "free"
        return event


class _TurnCompletedWithoutUsage(WireVariant):
    """``session:turn_completed`` leaves out its required ``tokensUsed``."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed":
            event.pop("tokensUsed", None)
        return event


class _UnknownStopReason(WireVariant):
    """``session:turn_completed`` carries a stop reason outside the enum (``done``)."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed" and event.get("stopReason") == "stop":
            event["stopReason"] = "done"
        return event


EVENT_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "cost-event-mistyped",
        "cost:updated carries costMicrocents as a string",
        ("AS-EVT-001",),
        implementation=_MistypedCost,
    ),
    BrokenImplementation(
        "turn-completed-without-usage",
        "session:turn_completed leaves out the required tokensUsed",
        ("AS-EVT-001",),
        implementation=_TurnCompletedWithoutUsage,
    ),
    BrokenImplementation(
        "turn-completed-stop-reason-out-of-enum",
        "session:turn_completed carries a stop reason outside the enum",
        ("AS-EVT-001",),
        implementation=_UnknownStopReason,
    ),
)
