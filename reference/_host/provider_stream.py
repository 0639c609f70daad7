"""Closing a provider's stream once the engine stops reading it.

An attempt (a turn's or a compaction pass's) reads its provider's stream up to the stop or error chunk
and then returns, leaving the stream suspended where it yielded that chunk.  Left alone, such a stream is
closed only when it is collected, or, when a reference cycle or a paused cyclic GC keeps it alive, much
later; for the HTTP dialects an unclosed stream is an unclosed response holding its connection.  So the
engine schedules the stream's close itself, at the moment it stops reading (:func:`close_soon`): the
provider's cleanup (closing the response, releasing the connection) starts on the loop's next turn,
whatever the collector does.

The attempt does not wait for that cleanup.  Waiting would put a suspension point between the attempt's
last chunk and what the turn does with it: an abort or cancel landing there would lose a tool round's
usage write (KD-USE-1), and a provider whose cleanup never ends would hang the turn.  The close runs in a
task of its own, kept referenced until it ends.  A stream the provider gives without ``aclose`` (any async
iterator is a stream) has nothing to close; what a provider's cleanup raises is the provider's, not the
turn's, and is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

__all__ = ["close_soon", "closing"]

_CLOSING: set[asyncio.Future[None]] = set()  # the closes still running, referenced until they end


def close_soon(chunks: AsyncIterator[Any]) -> None:
    """Schedule the close of ``chunks`` (if it can be closed) without waiting for it.

    The provider's ``aclose`` is called in the close's own task, not here: nothing of the provider's
    cleanup runs in the attempt, so nothing it raises (a ``CancelledError`` included) reaches the turn."""
    close = getattr(chunks, "aclose", None)
    if close is None:
        return
    task = asyncio.ensure_future(_quietly(close))
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


async def _quietly(close: Callable[[], Awaitable[Any]]) -> None:
    try:
        await close()
    except (Exception, GeneratorExit):  # the provider's cleanup, not the attempt's outcome
        return


def closing() -> int:
    """How many scheduled closes are still running (for tests and diagnostics)."""
    return len(_CLOSING)
