"""Closing a provider's stream once the engine stops reading it.

An attempt (a turn's or a compaction pass's) reads its provider's stream up to the stop or error chunk
and then returns, leaving the stream suspended where it yielded that chunk.  Left alone, such a stream is
closed only when it is collected: the event loop's finaliser schedules its ``aclose`` after the attempt
has returned, or, when a reference cycle or a paused cyclic GC keeps it alive, much later.  For the HTTP
dialects an unclosed stream is an unclosed response holding its connection.  So the engine closes the
stream itself, in the attempt's own task, before the attempt's result is used: the provider's cleanup
(closing the response, releasing the connection) is part of the attempt, in a fixed place, whatever the
collector does.

A stream the provider gives without ``aclose`` (any async iterator is a stream) has nothing to close.  A
provider whose cleanup fails does not change the attempt's outcome: the chunks it gave were complete, and
what went wrong while closing is the provider's, not the turn's.  Cancellation still propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["close_stream"]


async def close_stream(chunks: AsyncIterator[Any]) -> None:
    """Close ``chunks`` if it can be closed; a failure of the provider's own cleanup is dropped."""
    close = getattr(chunks, "aclose", None)
    if close is None:
        return
    try:
        await close()
    except asyncio.CancelledError:
        raise
    except Exception:  # the provider's cleanup, not the attempt's outcome
        return
