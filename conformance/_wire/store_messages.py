"""The session-store profile's messages (``store.*`` and the store's ``pure.*`` helpers).

The kit's own models, one per params and result object; the rows that carry them are in the method
table (:mod:`relavium_conformance._wire.protocol`).  Tree entries travel as plain JSON objects (KD-SS-3).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from relavium_conformance._wire.model import KitWire

__all__ = [
    "Acquired",
    "PlacedRow",
    "Placement",
    "StoreAcquire",
    "StoreAppend",
    "StoreBoundedTail",
    "StoreBoundedTailResult",
    "StoreBranch",
    "StoreConflict",
    "StoreEmpty",
    "StoreEntries",
    "StoreFork",
    "StoreForked",
    "StoreIncarnation",
    "StoreListPlaced",
    "StoreMetadata",
    "StoreNoteTaskRun",
    "StoreOpen",
    "StoreOwner",
    "StoreRef",
    "StoreRegister",
    "StoreRows",
    "StoreSessionId",
    "StoreSessions",
    "StoreSetClock",
    "StoreSize",
    "StoreVerdict",
    "Summary",
]


class _Msg(KitWire):
    pass


class StoreOpen(_Msg):
    """Open the store over ``location`` (a directory the kit owns, the same for every connection and
    every restart of one case); ``clockMs`` starts the store's clock when it declares ``store:clock``."""

    location: StrictStr
    clock_ms: StrictInt | None = None


class StoreSetClock(_Msg):
    now_ms: StrictInt


class Placement(_Msg):
    kind: Literal["subagent"]
    scope: StrictStr | None = None
    parent_session_id: StrictStr | None = None
    root_session_id: StrictStr | None = None
    handle: StrictStr | None = None


class StoreAcquire(_Msg):
    session_id: StrictStr | None = None
    require_existing: StrictBool = False
    placement: Placement | None = None


class StoreMetadata(_Msg):
    created_at: StrictStr | None = None
    incarnation: StrictStr | None = None
    forked_from: StrictStr | None = None


class Acquired(_Msg):
    """``ref`` names the live session object: two acquisitions answer the same ``ref`` exactly when the
    store handed out one and the same session (KD-SS-4)."""

    session_id: Annotated[StrictStr, Field(min_length=1)]
    ref: Annotated[StrictStr, Field(min_length=1)]
    metadata: StoreMetadata


class StoreSessionId(_Msg):
    session_id: StrictStr


class StoreNoteTaskRun(_Msg):
    session_id: StrictStr
    task_id: StrictStr
    run_id: StrictStr | None = None


class Summary(_Msg):
    session_id: StrictStr
    last_active_at: StrictInt
    created_at: StrictStr | None = None
    last_task_id: StrictStr | None = None
    last_task_run_id: StrictStr | None = None
    forked_from: StrictStr | None = None


class StoreSessions(_Msg):
    sessions: tuple[Summary, ...]


class StoreListPlaced(_Msg):
    kind: Literal["subagent"]
    older_than_ms: StrictInt | None = None
    scope: StrictStr | None = None


class PlacedRow(_Msg):
    session_id: StrictStr
    placed_at: StrictInt
    scope: StrictStr | None = None
    handle: StrictStr | None = None
    tuple_incomplete: Literal[True] | None = None


class StoreRows(_Msg):
    rows: tuple[PlacedRow, ...]


class StoreFork(_Msg):
    """``owner`` absent: no owner argument; ``null``: an explicit null (both inherit, SS-FORK-013)."""

    source_id: StrictStr
    owner: StrictStr | None = None


class StoreForked(_Msg):
    session_id: StrictStr | None


class StoreOwner(_Msg):
    """``owner`` absent: no ownership row (``undefined``); ``null``: anonymous; a string: owned."""

    owner: StrictStr | None = None


class StoreRegister(_Msg):
    """``owner`` is any JSON value, so that a case can send one the store must refuse (SS-REG-006)."""

    session_id: StrictStr
    owner: Any


class StoreIncarnation(_Msg):
    incarnation: StrictStr | None = None


class StoreSize(_Msg):
    size: Annotated[StrictInt, Field(ge=0)]


class StoreRef(_Msg):
    ref: StrictStr


class StoreAppend(_Msg):
    """``commit: false`` stages the entries as the turn in flight; ``store.commit`` commits them."""

    ref: StrictStr
    entries: tuple[dict[str, Any], ...]
    commit: StrictBool = True


class StoreEntries(_Msg):
    entries: tuple[dict[str, Any], ...]


class StoreBoundedTail(_Msg):
    entries: tuple[dict[str, Any], ...]


class StoreBoundedTailResult(_Msg):
    tail: tuple[dict[str, Any], ...]
    floor_entry_id: StrictStr | None


class StoreBranch(_Msg):
    branch: tuple[dict[str, Any], ...]


class StoreConflict(_Msg):
    """``value`` describes the value to classify (KD-SS-5): ``{kind: session_error, code}``,
    ``{kind: foreign_error, message}``, ``{kind: unreadable}`` or ``{kind: plain, value}``."""

    value: dict[str, Any]


class StoreVerdict(_Msg):
    result: StrictBool


class StoreEmpty(_Msg):
    pass
