"""Broken implementations of sessions living side by side: one rule each, seen only with two sessions.

The kit names a case's second session ``<handle>.<name>`` beside its first, ``<handle>``: each break
below treats the sessions of one case (one handle root) as if they were one, where the rule says each
session stands alone. With a single session they behave exactly as the reference, so only the cases
that open two sessions catch them (``session/two-sessions-apart``), in-process and over stdio.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.messages import CreateParams
from relavium_conformance._wire.protocol import SESSION_STATE_ERROR, Callback

__all__ = ["SIDE_BY_SIDE_BREAKS"]


def _root(handle: str) -> str:
    return handle.split(".", 1)[0]


class _SharedCounter(WireVariant):
    """One event counter for all the sessions of a case: each event takes the next number of them all."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._side_counters: dict[str, int] = {}

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if isinstance(event.get("sequenceNumber"), int):
            number = self._side_counters.get(_root(handle), 0)
            self._side_counters[_root(handle)] = number + 1
            event["sequenceNumber"] = number
        return event


class _EventsToTheFirst(WireVariant):
    """Every session's events are delivered to the host handle of the case's first session."""

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "host.emit":
            params["handle"] = _root(handle)
        return params


class _OneSessionId(WireVariant):
    """Every session of a case is given the first one's session id (on its create answer and its events)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._first_ids: dict[str, str] = {}

    def _same(self, handle: str, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            first = self._first_ids.setdefault(_root(handle), value["sessionId"])
            value["sessionId"] = first
        return value

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        return dict(self._same(handle, event))

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        return self._same(str(params.get("handle")), result) if method == "session.create" else result


class _BusyAcrossSessions(WireVariant):
    """A send is refused busy while any session of the case has a turn in flight (one busy flag)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._side_sending: dict[str, int] = {}

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method != "session.send":
            return await super().operation(method, params)
        root = _root(str(params.get("handle")))
        if self._side_sending.get(root):
            raise RpcError(SESSION_STATE_ERROR, "refused (busy)", {"kind": "session_state", "code": "busy"})
        self._side_sending[root] = self._side_sending.get(root, 0) + 1
        try:
            return await super().operation(method, params)
        finally:
            self._side_sending[root] -= 1


class _SharedTranscript(ReferenceImplementation):
    """A case's second session works on the first one's working transcript (one history for both)."""

    def _create(self, params: CreateParams) -> dict[str, Any]:
        created = super()._create(params)
        root = _root(params.handle)
        if root != params.handle and root in self._sessions:
            self._sessions[params.handle]._exchanges = self._sessions[root]._exchanges
        return created


def _break(
    name: str, rule: str, clauses: tuple[str, ...], variant: type[ReferenceImplementation]
) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, implementation=variant)


SIDE_BY_SIDE_BREAKS: tuple[BrokenImplementation, ...] = (
    _break(
        "sessions-share-a-counter",
        "the sessions of one host share one event counter",
        ("AS-EVT-002",),
        _SharedCounter,
    ),
    _break(
        "events-to-the-first-session",
        "every session's events are delivered to the first session's host handle",
        ("AS-EVT-002",),
        _EventsToTheFirst,
    ),
    _break(
        "sessions-share-an-id",
        "a second session is given the first one's session id",
        ("AS-LIFE-005",),
        _OneSessionId,
    ),
    _break(
        "sessions-share-a-transcript",
        "a second session works on the first one's working transcript",
        ("AS-LIFE-008",),
        _SharedTranscript,
    ),
    _break(
        "busy-across-sessions",
        "a send is refused busy while another session's turn streams",
        ("AS-LIFE-049",),
        _BusyAcrossSessions,
    ),
)
