"""A broken implementation of request ownership (AS-PROJ-006), seen through the ``request-edits`` hook.

The engine builds each request on the list it handed over with the last one: when the new request starts
with everything the last one held (the next round of a turn, or the next turn), it extends that very list
in place instead of giving the new request a list of its own. A provider that edited the last request
(KD-PROJ-3) then changes what the engine sends next.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._wire.protocol import Callback
from relavium_reference._model.llm import LlmMessage, LlmRequest

__all__ = ["OWNERSHIP_BREAKS"]


class _SharedRequestList(ReferenceImplementation):
    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        # per handle: what the engine put in its last request, and the list it handed over with it
        self._last_lists: dict[str, tuple[list[dict[str, Any]], list[LlmMessage]]] = {}

    def handed(self, handle: str, request: LlmRequest) -> LlmRequest:
        own = [message.to_wire() for message in request.messages]
        last = self._last_lists.get(handle)
        if last is not None and own[: len(last[0])] == last[0]:
            shared = last[1]
            shared.extend(request.messages[len(last[0]) :])  # the new tail, on the list handed over before
            request.messages = shared
        self._last_lists[handle] = (own, request.messages)
        return request


OWNERSHIP_BREAKS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "request-list-shared",
        "each request extends, in place, the list handed to the provider with the previous one",
        ("AS-PROJ-006",),
        implementation=_SharedRequestList,
    ),
)
