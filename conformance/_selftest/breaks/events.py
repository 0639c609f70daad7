"""Breaks of the event stream (clauses AS-EVT-*): sequence numbers and the event envelope."""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import handle_root
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession, TurnResult

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="gappy-sequence", summary="sequence numbers skip a value after each turn", clauses=("AS-EVT-002",)
)
class _GappySequence(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        self._stamper._next += 1  # skip a number after every turn
        return result


@break_of(
    name="cost-event-mistyped",
    summary="cost:updated carries costMicrocents as a string",
    clauses=("AS-EVT-001",),
)
class _MistypedCost(WireVariant):
    """``cost:updated`` says its cost in words: ``costMicrocents: "free"``."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "cost:updated":
            event["costMicrocents"] = "free"
        return event


@break_of(
    name="turn-completed-without-usage",
    summary="session:turn_completed leaves out the required tokensUsed",
    clauses=("AS-EVT-001",),
)
class _TurnCompletedWithoutUsage(WireVariant):
    """``session:turn_completed`` leaves out its required ``tokensUsed``."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed":
            event.pop("tokensUsed", None)
        return event


@break_of(
    name="turn-completed-stop-reason-out-of-enum",
    summary="session:turn_completed carries a stop reason outside the enum",
    clauses=("AS-EVT-001",),
)
class _UnknownStopReason(WireVariant):
    """``session:turn_completed`` carries a stop reason outside the enum (``done``)."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed" and event.get("stopReason") == "stop":
            event["stopReason"] = "done"
        return event


@break_of(
    name="sessions-share-a-counter",
    summary="the sessions of one host share one event counter",
    clauses=("AS-EVT-002",),
)
class _SharedCounter(WireVariant):
    """One event counter for all the sessions of a case: each event takes the next number of them all."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._side_counters: dict[str, int] = {}

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if isinstance(event.get("sequenceNumber"), int):
            number = self._side_counters.get(handle_root(handle), 0)
            self._side_counters[handle_root(handle)] = number + 1
            event["sequenceNumber"] = number
        return event


@break_of(
    name="events-to-the-first-session",
    summary="every session's events are delivered to the first session's host handle",
    clauses=("AS-EVT-002",),
)
class _EventsToTheFirst(WireVariant):
    """Every session's events are delivered to the host handle of the case's first session."""

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "host.emit":
            params["handle"] = handle_root(handle)
        return params


@break_of(
    name="steering-event-emitted",
    summary="a reserved steering event is emitted at each turn start",
    clauses=("AS-EVT-003",),
)
class _SteeringEmitted(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_started":
            event["type"] = "session:steering_requested"
        return event
