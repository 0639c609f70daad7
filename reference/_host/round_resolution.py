"""A tool round's accounting, overlapping the round's dispatch.

When an attempt ends asking for tools, its actual usage still has to be resolved through the usage writer
(a durable write: money, missing prices, coverage), and its tools still have to run.  Neither needs the
other: the tools do not read the money and the write does not read the tools' results.  So the turn starts
the write and dispatches the round while it is in flight, instead of waiting for a durable write before the
first tool can start.  The rules that do depend on the write keep it in their path:

* the next provider call of the turn waits for the resolution (as it waits for its own pending record);
* the attempt's ``cost:updated`` is published only after the writer acknowledged it, by the turn's own
  task once the round has run, so the order of events does not depend on which of the two finished first;
* a failed write latches the session at the moment it fails, so a tool of the round that has not been
  dispatched yet is refused by the dispatch check, while a tool that was already running settles and its
  outcome is recorded like any other (the spec's already-started effect);
* a turn ended by abort still waits for the write and publishes its cost (what it spent is real);
* a turn ended by ``cancel`` also waits for the write before its cost row is recorded (known usage and its
  money stay accounted) but publishes nothing: the cancel already answered; ``cancel()`` itself never waits;
* a caller that cancels ``send_message`` hands the write to a referenced background set (:meth:`detach`),
  so it still completes and a failure still latches the session; nothing is published.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from relavium_reference._model.usage_writer import UsageSettled

__all__ = ["PendingResolution"]

Publish = Callable[[UsageSettled], Awaitable[None]]


class PendingResolution:
    """One attempt's usage write, running in its own task; finished once, by the turn or the session."""

    def __init__(self, write: Coroutine[Any, Any, UsageSettled | None], publish: Publish) -> None:
        self._task: asyncio.Task[UsageSettled | None] = asyncio.ensure_future(write)
        self._publish = publish
        self._done = False

    async def finish(self, *, publish: bool = True) -> None:
        """Wait for the write (a cancelled waiter never cancels it), then publish its cost once
        (``publish=False``: the turn was cancelled; the write still lands, nothing is published).

        A failed write has already latched the session inside the task and publishes nothing."""
        if self._done:
            return
        settled = await asyncio.shield(self._task)
        if self._done:  # another caller finished it while this one waited
            return
        self._done = True
        if settled is not None and publish:
            await self._publish(settled)

    def detach(self) -> None:
        """The caller is gone: keep the write running to its end in a referenced set; publish nothing."""
        self._done = True
        if not self._task.done():
            _BACKGROUND.add(self._task)
            self._task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Task[UsageSettled | None]] = set()
