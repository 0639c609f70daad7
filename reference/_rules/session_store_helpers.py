"""The session-store contract's pure helpers: ``boundedTail``, ``hasConversationContent``,
``isSessionConflict`` and ``hasSessionFork``.  No I/O; none of them modifies what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relavium_reference._model.session_store_shapes import SessionError, SessionErrorCode

__all__ = [
    "CONVERSATION_TYPES",
    "bounded_tail",
    "has_conversation_content",
    "has_session_fork",
    "is_session_conflict",
]

CONVERSATION_TYPES = frozenset({"message"})
"""KD-SS-2: the entry types that count as conversation content."""


def bounded_tail(path_entries: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], str | None]:
    """The smallest self-contained tail of a root-to-leaf path, and its floor entry id.

    The floor is the ``firstKeptEntryId`` of the **latest** compaction on the path; the tail runs from
    the floor entry to the leaf.  Without a compaction, or with a floor that is not on this path, the
    whole input comes back (a new list of the same entries) with floor ``None``.
    """
    whole = list(path_entries)
    for entry in reversed(whole):
        if entry.get("type") == "compaction":
            floor = entry.get("firstKeptEntryId")
            break
    else:
        return whole, None
    if not isinstance(floor, str):
        return whole, None
    for index, entry in enumerate(whole):
        if entry.get("id") == floor:
            return whole[index:], floor
    return whole, None


def has_conversation_content(branch: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the branch holds conversation (KD-SS-2): an entry count is never the proxy."""
    return any(entry.get("type") in CONVERSATION_TYPES for entry in branch)


def is_session_conflict(value: object) -> bool:
    """True exactly for a :class:`SessionError` with code ``conflict`` (KD-SS-1).

    Both reads (the class test and the code) are guarded: a value that cannot be read is not a
    conflict, and the predicate never raises.  A foreign error that mentions a conflict is not one.
    """
    try:
        if not isinstance(value, SessionError):
            return False
        return bool(value.code == SessionErrorCode.CONFLICT)
    except Exception:
        return False


def has_session_fork(store: object) -> bool:
    """Whether ``store`` offers ``fork`` (the structural test, guarded like the conflict predicate)."""
    try:
        return callable(getattr(store, "fork", None))
    except Exception:
        return False
