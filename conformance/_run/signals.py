"""Ordering one callback's answer after another callback, by events rather than time.

Some situations exist only while two of the implementation's requests are open at once: a tool still
running when a durable write fails, say.  A case scripts them with named signals on its answers:

* ``signal: NAME`` is raised when the callback reaches the kit (before any wait of its own);
* ``then: NAME`` is raised once the kit has its answer (or failure) ready, just before it goes back;
* ``after: NAME`` holds the answer until NAME was raised; then the kit yields a few turns of its loop, so
  the answer that raised NAME reaches the implementation first (over stdio: it is written first).

Delivery order is all the kit controls: when the implementation has acted on an answer is not observable.
A case whose verdict needs the earlier answer taken in before the later one marks those expectations with
KD-USE-2 (the engine acts on callback answers in their delivery order); the yielded turns are slack for a
kit whose answers leave through its own loop, never what a verdict rests on.

A signal that is never raised leaves its waiter unanswered, so the step times out and the case errors, its
reason naming the signal and the case's capabilities: an implementation that cannot reach the scripted
situation does not declare the capability the case needs.  An answer whose ``after`` is only its own ``then``
is refused when the case loads (it could never be answered).
"""

from __future__ import annotations

import asyncio

__all__ = ["Signals"]

_YIELDS = 3  # slack after a signal: the answer that raised it leaves the kit before the waiter's (see above)


class Signals:
    """The named signals of one case (a collaborator of the case world and of its accounting)."""

    def __init__(self) -> None:
        self._signals: dict[str, asyncio.Event] = {}
        self._waiting: set[str] = set()

    def never_raised(self) -> list[str]:
        """The signals an answer still waits for (named in the reason of a case that timed out)."""
        return sorted(n for n in self._waiting if not self._signal(n).is_set())

    def _signal(self, name: str) -> asyncio.Event:
        return self._signals.setdefault(name, asyncio.Event())

    def raise_signal(self, name: str | None) -> None:
        if name is not None:
            self._signal(name).set()

    async def wait_signal(self, name: str | None) -> None:
        if name is None:
            return
        self._waiting.add(name)
        await self._signal(name).wait()
        self._waiting.discard(name)
        for _ in range(_YIELDS):
            await asyncio.sleep(0)
