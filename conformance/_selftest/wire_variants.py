"""Implementations that differ from the reference only in what they put on the wire.

Each is the reference engine behind the message set with one edit applied to what it sends the kit:
the events it delivers (``host.emit``) and the results of its operations.  They come in two kinds:

* **broken**: the edit breaks a rule (an event field of the wrong type, a required field left out); the
  cases must fail, in-process and over stdio (``selftest --serve NAME`` serves any of them);
* **compliant alternatives**: the edit is another behaviour the specification allows (an unknown event
  field, no ``tokensUsed.model``, sequence numbers that continue across a resume); every case must pass,
  so the kit never demands what the specification leaves open.
"""

from __future__ import annotations

import copy
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._wire.protocol import Callback

__all__ = ["WireVariant"]


class WireVariant(ReferenceImplementation):
    """The reference engine with :meth:`event` applied to every delivered event and :meth:`result` to
    every operation's result (both unchanged here; each variant overrides one)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        self._seen_events: dict[str, int] = {}
        self._offsets: dict[str, int] = {}
        # A hook this variant leaves as it is passes the engine's own objects on, as the reference does;
        # an overridden one edits a deep copy (the engine's objects stay as it made them).
        kind = type(self)
        edits_events = kind.event is not WireVariant.event
        edits_outgoing = kind.outgoing is not WireVariant.outgoing
        self._edits_results = kind.result is not WireVariant.result

        async def edited(method: str, params: dict[str, Any]) -> Any:
            handle = str(params.get("handle"))
            if method == "host.emit" and isinstance(params.get("event"), dict):
                if edits_events:
                    params = {**params, "event": self.event(handle, copy.deepcopy(params["event"]))}
                self._seen_events[handle] = self._seen_events.get(handle, 0) + 1
            edited_params = self.outgoing(handle, method, copy.deepcopy(params)) if edits_outgoing else params
            if edited_params is None:
                return {}  # this variant skips the callback and acts as if the kit had acknowledged it
            return await callback(method, edited_params)

        super().__init__(edited, **options)

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            handle = str(params.get("handle"))
            self._offsets[handle] = self._seen_events.get(handle, 0)
        result = await self.operation(method, params)
        return self.result(method, params, copy.deepcopy(result)) if self._edits_results else result

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        """Serve one operation (the reference's answer, unless a variant changes it)."""
        return await super().handle(method, params)

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """A callback's params as this variant sends them; None skips the callback."""
        return params

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        """The event as this variant delivers it."""
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        """The operation's result as this variant answers it."""
        return result

    def events_before_resume(self, handle: str) -> int:
        """How many events the session delivered before its latest resume (0 if never resumed)."""
        return self._offsets.get(handle, 0)
