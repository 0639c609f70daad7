"""The kit's own small judges of answers the vector suites receive (no engine code involved).

* :func:`resume_state_problem`: a resume state's metadata is sound (spans ordered, disjoint, in bounds,
  each ``[user]`` or ``[user, assistant]``; sequence seeds, when given, one per message and increasing).
* :func:`epoch_ms` and :func:`canonical_timestamp`: the store's timestamp column (KD-DB-3) and the one
  text form a stored timestamp reads back as.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from relavium_conformance._wire.model import shape_problem

__all__ = ["canonical_timestamp", "epoch_ms", "resume_state_problem"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def resume_state_problem(state: Any) -> str | None:
    """Why ``state`` (wire form) is not a sound resume state, or ``None``: the shape first, then spans."""
    problem = shape_problem("session-resume-state", state)
    if problem is not None:
        return problem
    messages: list[dict[str, Any]] = state["messages"]
    seqs: list[int] = state.get("messageSequences", [])
    if seqs and len(seqs) != len(messages):
        return "messageSequences must give one sequence number per message"
    if any(later <= earlier for earlier, later in itertools.pairwise(seqs)):
        return "messageSequences must increase"
    previous_end = 0
    for span in state["completedTurnSpans"]:
        start, end = span["start"], span["end"]
        if not 0 <= start < end <= len(messages):
            return "a completed turn span lies outside the messages"
        if start < previous_end:
            return "completed turn spans overlap or are out of order"
        roles = [message["role"] for message in messages[start:end]]
        if roles not in (["user"], ["user", "assistant"]):
            return "a completed turn span must be [user] or [user, assistant]"
        previous_end = end
    return None


def epoch_ms(timestamp: str) -> int:
    """ISO 8601 text (``Z`` or an offset) to integer epoch milliseconds, truncating below the millisecond."""
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def canonical_timestamp(ms: int) -> str:
    """Epoch milliseconds to the one stored text form, ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
