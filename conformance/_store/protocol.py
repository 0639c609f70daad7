"""The session-store profile's messages: one row per method, and the store's declaration in ``hello``.

Every method is kit -> implementation; a store never calls the kit back.  A row names the method, its
params and result models, the capability a store must declare in ``hello`` for the kit to call it (a
store is judged only on the faces it declares) and the name of the handler that serves it in the
reference store implementation.  The reference is ``docs/protocol.md`` ("The session-store profile").

The declaration (``hello`` capabilities):

* ``session-store``: the profile itself;
* ``store:durable`` or ``store:process-local`` (none: read as ``process-local``, SS-GEN-009);
* ``store:placements:durable`` or ``store:placements:process-local`` (none: placements not understood);
* one ``store:<face>`` per optional face it has: ``forget``, ``pin`` (``pin`` and ``unpin``),
  ``noteTaskRun``, ``list``, ``listPlaced``, ``fork``, ``ownership`` (``ownerOf`` and ``register``),
  ``incarnationOf``;
* ``store:clock``: the store takes the kit's clock (``store.open`` ``clockMs``, then ``store.setClock``).

A store's refusal is the JSON-RPC error ``-32004`` with ``data: {"kind": "session_error", "code"}``.
The models are the kit's own (never the engine's), frozen and closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from relavium_conformance._wire.protocol import SESSION_ERROR

__all__ = [
    "FACES",
    "METHODS_BY_NAME",
    "SESSION_ERROR",
    "STORE_METHODS",
    "StoreDeclaration",
    "StoreMethod",
    "declaration_of",
]


FACES = ("forget", "pin", "noteTaskRun", "list", "listPlaced", "fork", "ownership", "incarnationOf")


class _Msg(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )


class _Open(_Msg):
    """Open the store over ``location`` (a directory the kit owns, the same for every connection and
    every restart of one case); ``clockMs`` starts the store's clock when it declares ``store:clock``."""

    location: StrictStr
    clock_ms: StrictInt | None = None


class _SetClock(_Msg):
    now_ms: StrictInt


class Placement(_Msg):
    kind: Literal["subagent"]
    scope: StrictStr | None = None
    parent_session_id: StrictStr | None = None
    root_session_id: StrictStr | None = None
    handle: StrictStr | None = None


class _Acquire(_Msg):
    session_id: StrictStr | None = None
    require_existing: StrictBool = False
    placement: Placement | None = None


class _Metadata(_Msg):
    created_at: StrictStr | None = None
    incarnation: StrictStr | None = None
    forked_from: StrictStr | None = None


class Acquired(_Msg):
    """``ref`` names the live session object: two acquisitions answer the same ``ref`` exactly when the
    store handed out one and the same session (KD-SS-4)."""

    session_id: Annotated[StrictStr, Field(min_length=1)]
    ref: Annotated[StrictStr, Field(min_length=1)]
    metadata: _Metadata


class _SessionId(_Msg):
    session_id: StrictStr


class _NoteTaskRun(_Msg):
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


class _Sessions(_Msg):
    sessions: tuple[Summary, ...]


class _ListPlaced(_Msg):
    kind: Literal["subagent"]
    older_than_ms: StrictInt | None = None
    scope: StrictStr | None = None


class PlacedRow(_Msg):
    session_id: StrictStr
    placed_at: StrictInt
    scope: StrictStr | None = None
    handle: StrictStr | None = None
    tuple_incomplete: Literal[True] | None = None


class _Rows(_Msg):
    rows: tuple[PlacedRow, ...]


class _Fork(_Msg):
    """``owner`` absent: no owner argument; ``null``: an explicit null (both inherit, SS-FORK-013)."""

    source_id: StrictStr
    owner: StrictStr | None = None


class _Forked(_Msg):
    session_id: StrictStr | None


class _Owner(_Msg):
    """``owner`` absent: no ownership row (``undefined``); ``null``: anonymous; a string: owned."""

    owner: StrictStr | None = None


class _Register(_Msg):
    """``owner`` is any JSON value, so that a case can send one the store must refuse (SS-REG-006)."""

    session_id: StrictStr
    owner: Any


class _Incarnation(_Msg):
    incarnation: StrictStr | None = None


class _Size(_Msg):
    size: Annotated[StrictInt, Field(ge=0)]


class _Ref(_Msg):
    ref: StrictStr


class _Append(_Msg):
    """``commit: false`` stages the entries as the turn in flight; ``store.commit`` commits them."""

    ref: StrictStr
    entries: tuple[dict[str, Any], ...]
    commit: StrictBool = True


class _Entries(_Msg):
    entries: tuple[dict[str, Any], ...]


class _BoundedTail(_Msg):
    entries: tuple[dict[str, Any], ...]


class _BoundedTailResult(_Msg):
    tail: tuple[dict[str, Any], ...]
    floor_entry_id: StrictStr | None


class _Branch(_Msg):
    branch: tuple[dict[str, Any], ...]


class _Conflict(_Msg):
    """``value`` describes the value to classify (KD-SS-5): ``{kind: session_error, code}``,
    ``{kind: foreign_error, message}``, ``{kind: unreadable}`` or ``{kind: plain, value}``."""

    value: dict[str, Any]


class _Verdict(_Msg):
    result: StrictBool


class _Empty(_Msg):
    pass


@dataclass(frozen=True)
class StoreMethod:
    """One row of the table: a kit -> implementation method of the session-store profile."""

    name: str
    params: type[BaseModel]
    result: type[BaseModel]
    capability: str
    handler: str
    direction: Literal["kit-to-implementation"] = "kit-to-implementation"


def _row(
    name: str, params: type[BaseModel], result: type[BaseModel], capability: str = "session-store"
) -> StoreMethod:
    room, verb = name.split(".", 1)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", verb).lower()
    return StoreMethod(name, params, result, capability, f"_{snake}" if room == "store" else f"_pure_{snake}")


STORE_METHODS: tuple[StoreMethod, ...] = (
    _row("store.open", _Open, _Empty),
    _row("store.setClock", _SetClock, _Empty, "store:clock"),
    _row("store.acquire", _Acquire, Acquired),
    _row("store.touch", _SessionId, _Empty),
    _row("store.release", _SessionId, _Empty),
    _row("store.forget", _SessionId, _Empty, "store:forget"),
    _row("store.pin", _SessionId, _Empty, "store:pin"),
    _row("store.unpin", _SessionId, _Empty, "store:pin"),
    _row("store.noteTaskRun", _NoteTaskRun, _Empty, "store:noteTaskRun"),
    _row("store.list", _Empty, _Sessions, "store:list"),
    _row("store.listPlaced", _ListPlaced, _Rows, "store:listPlaced"),
    _row("store.fork", _Fork, _Forked, "store:fork"),
    _row("store.ownerOf", _SessionId, _Owner, "store:ownership"),
    _row("store.register", _Register, _Empty, "store:ownership"),
    _row("store.incarnationOf", _SessionId, _Incarnation, "store:incarnationOf"),
    _row("store.size", _Empty, _Size),
    _row("store.dispose", _Empty, _Empty),
    _row("store.entries", _Ref, _Entries),
    _row("store.append", _Append, _Empty),
    _row("store.commit", _Ref, _Empty),
    _row("pure.boundedTail", _BoundedTail, _BoundedTailResult),
    _row("pure.hasConversationContent", _Branch, _Verdict),
    _row("pure.isSessionConflict", _Conflict, _Verdict),
)

METHODS_BY_NAME = {m.name: m for m in STORE_METHODS}


@dataclass(frozen=True)
class StoreDeclaration:
    """What a store declared in ``hello``, as the kit reads it (absent durability: process-local)."""

    profile: bool
    durability: Literal["durable", "process-local"]
    durability_declared: tuple[str, ...]
    placements: Literal["durable", "process-local"] | None
    placements_declared: tuple[str, ...]
    faces: frozenset[str]
    clock: bool

    def problems(self) -> list[str]:
        """A declaration that says two things at once cannot be read as one promise."""
        out = []
        if len(self.durability_declared) > 1:
            out.append("durability declared twice: " + ", ".join(self.durability_declared))
        if len(self.placements_declared) > 1:
            out.append("placement durability declared twice: " + ", ".join(self.placements_declared))
        return out

    def needs(self) -> frozenset[str]:
        """The capability words a case can ask for (``store:`` stripped)."""
        words = set(self.faces) | {self.durability}
        if self.placements is not None:
            words |= {"placements", f"placements:{self.placements}"}
        else:
            words.add("no-placements")
        if self.clock:
            words.add("clock")
        return frozenset(words)


def declaration_of(capabilities: tuple[str, ...]) -> StoreDeclaration:
    caps = set(capabilities)
    durability: tuple[str, ...] = tuple(d for d in ("durable", "process-local") if f"store:{d}" in caps)
    placements: tuple[Literal["durable", "process-local"], ...] = tuple(
        d for d in ("durable", "process-local") if f"store:placements:{d}" in caps
    )
    return StoreDeclaration(
        profile="session-store" in caps,
        durability="durable" if durability == ("durable",) else "process-local",
        durability_declared=durability,
        placements=placements[0] if len(placements) == 1 else None,
        placements_declared=placements,
        faces=frozenset(f for f in FACES if f"store:{f}" in caps),
        clock="store:clock" in caps,
    )
