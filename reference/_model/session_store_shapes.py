"""Shapes of the session-store contract (``session-store.d.ts``) that the declaration leaves to a harness.

The declaration names ``Session``, ``SessionTreeEntry`` and ``SessionMetadata`` but imports them from a
harness module we do not have.  The kit's choices (``docs/kit-defined.md``):

* **KD-SS-3, the tree entry.**  An entry is a JSON object with ``id`` (non-empty string), ``parentId``
  (string or null) and ``type`` (non-empty string); a ``compaction`` entry also carries
  ``firstKeptEntryId``.  Any other field is carried verbatim and never interpreted by a store.
* **KD-SS-4, the session and its metadata.**  A session is a root-to-leaf path of entries: committed
  entries (what the store persisted, what a fork copies) followed by the entries of a turn still in
  flight (staged on the live session, not yet committed).  Its metadata is ``createdAt`` (ISO-8601),
  ``incarnation`` (minted once when the row is created) and ``forkedFrom`` (forks only).

Also here: :class:`SessionError`, the store's one refusal, with the fixed codes of KD-SS-1 and KD-SS-4,
and the summary and placement rows a store answers with.  No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from relavium_reference._model.errors import RelaviumError

__all__ = [
    "DAY_MS",
    "DEFAULT_TTL_MS",
    "UNKNOWN",
    "Durability",
    "PlacedRow",
    "SessionError",
    "SessionErrorCode",
    "SessionMetadata",
    "SessionPlacement",
    "StoreSummary",
    "Unknown",
    "check_entry",
]

DAY_MS = 24 * 60 * 60 * 1000
DEFAULT_TTL_MS = 7 * DAY_MS
"""The in-memory store's idle TTL: seven days."""

Durability = Literal["durable", "process-local"]


class Unknown:
    """The declaration's ``undefined``: no row for this id.  Distinct from ``None`` (an anonymous row)."""

    _instance: Unknown | None = None

    def __new__(cls) -> Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = Unknown()


class SessionErrorCode(StrEnum):
    NOT_FOUND = "not_found"
    PLACEMENT_REFUSED = "placement_refused"
    CONFLICT = "conflict"
    INVALID_OWNER = "invalid_owner"
    INVALID_ENTRY = "invalid_entry"


class SessionError(RelaviumError):
    """A store's refusal, with a stable ``code`` (KD-SS-1: ``conflict`` is the optimistic-lock loss)."""

    def __init__(self, code: SessionErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"SessionError(code={self.code.value!r})"


@dataclass(frozen=True)
class SessionPlacement:
    """The acquire-form placement declaration: create the session into the ``subagent`` partition."""

    kind: Literal["subagent"] = "subagent"
    scope: str | None = None
    parent_session_id: str | None = None
    root_session_id: str | None = None
    handle: str | None = None

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SessionPlacement:
        if data.get("kind") != "subagent":
            raise SessionError(SessionErrorCode.INVALID_ENTRY, "a placement's kind is subagent")
        return cls(
            scope=_opt_str(data, "scope"),
            parent_session_id=_opt_str(data, "parentSessionId"),
            root_session_id=_opt_str(data, "rootSessionId"),
            handle=_opt_str(data, "handle"),
        )


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise SessionError(SessionErrorCode.INVALID_ENTRY, f"placement {key} must be a string")
    return value


@dataclass(frozen=True)
class SessionMetadata:
    session_id: str
    created_at: str
    incarnation: str
    forked_from: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"createdAt": self.created_at, "incarnation": self.incarnation}
        if self.forked_from is not None:
            out["forkedFrom"] = self.forked_from
        return out


@dataclass(frozen=True)
class StoreSummary:
    """``SessionStoreSummary``: one row of ``list()``."""

    session_id: str
    last_active_at: int
    created_at: str | None = None
    last_task_id: str | None = None
    last_task_run_id: str | None = None
    forked_from: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionId": self.session_id, "lastActiveAt": self.last_active_at}
        for key, value in (
            ("createdAt", self.created_at),
            ("lastTaskId", self.last_task_id),
            ("lastTaskRunId", self.last_task_run_id),
            ("forkedFrom", self.forked_from),
        ):
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class PlacedRow:
    """``PlacedSessionRow``: the full ``(scope, handle)`` tuple, or ``tupleIncomplete``."""

    session_id: str
    placed_at: int
    scope: str | None
    handle: str | None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sessionId": self.session_id, "placedAt": self.placed_at}
        if self.scope is not None and self.handle is not None:
            out.update(scope=self.scope, handle=self.handle)
        else:
            out["tupleIncomplete"] = True
        return out


def check_entry(entry: Any) -> dict[str, Any]:
    """A tree entry (KD-SS-3) as a plain dict, or :class:`SessionError` ``invalid_entry``."""
    if not isinstance(entry, Mapping):
        raise SessionError(SessionErrorCode.INVALID_ENTRY, "a tree entry is an object")
    entry_id, parent, kind = entry.get("id"), entry.get("parentId", None), entry.get("type")
    if not isinstance(entry_id, str) or not entry_id:
        raise SessionError(SessionErrorCode.INVALID_ENTRY, "a tree entry's id is a non-empty string")
    if parent is not None and not isinstance(parent, str):
        raise SessionError(SessionErrorCode.INVALID_ENTRY, "a tree entry's parentId is a string or null")
    if not isinstance(kind, str) or not kind:
        raise SessionError(SessionErrorCode.INVALID_ENTRY, "a tree entry's type is a non-empty string")
    try:  # what a durable store writes: every store refuses what one of them could not keep
        json.dumps(entry, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        raise SessionError(SessionErrorCode.INVALID_ENTRY, "a tree entry is a JSON object") from None
    return dict(entry)
