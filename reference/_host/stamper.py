"""The event stamper: adds the envelope to each payload at one point and hands it to the sink, in order.

The envelope is ``sessionId``, a per-session ``sequenceNumber`` starting at 0 with no gaps, and a UTC
``timestamp``; only a successfully validated event advances the counter.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, Protocol

from relavium_reference._model.events import SESSION_EVENT_ADAPTER, EventSink, SessionEvent
from relavium_reference._model.shapes import WireModel

__all__ = ["Clock", "EventStamper", "SystemClock", "format_timestamp"]


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def format_timestamp(moment: datetime) -> str:
    """ISO 8601, UTC, millisecond precision, ``Z`` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class EventStamper:
    """Adds the envelope to event payloads for one session and hands them to the sink, in order."""

    def __init__(self, session_id: str, sink: EventSink, clock: Clock) -> None:
        self._session_id = session_id
        self._sink = sink
        self._clock = clock
        self._next = 0

    @property
    def next_sequence(self) -> int:
        return self._next

    async def emit(self, event_type: type[WireModel], **payload: Any) -> SessionEvent:
        """Stamp one event, hand it to the sink, and wait for the sink's acknowledgement.

        Stamping and the hand-over happen synchronously, with no await between them, so the sink sees
        events in sequence order and a cancelled producer cannot leave a stamped event undelivered.
        Only the acknowledgement is awaited; no lock is held meanwhile, so a host that reacts to an
        event by calling the session (cancel, abort) can do so before acknowledging it: the nested
        event is stamped and handed over at once (KD-EVT-3).
        """
        draft = {
            "type": event_type.model_fields["type"].default,
            "sessionId": self._session_id,
            "sequenceNumber": self._next,
            "timestamp": format_timestamp(self._clock.now()),
            **{_camel(key): _wire(value) for key, value in payload.items() if value is not None},
        }
        event = SESSION_EVENT_ADAPTER.validate_python(draft)
        self._next += 1
        acknowledgement = self._sink(event)
        if acknowledgement is not None:
            await asyncio.shield(asyncio.ensure_future(acknowledgement))
        return event


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _wire(value: Any) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, tuple | list):
        return [_wire(item) for item in value]
    return value
