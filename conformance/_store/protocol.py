"""The session-store profile's protocol: its rows of the method table, and the store's declaration.

The rows (``store.*`` and the store's ``pure.*`` helpers, messages in ``_wire/store_messages.py``) live
in the one method table, ``_wire/protocol.py``; every one is kit -> implementation (a store never calls
the kit back), and its capability is the face a store must declare for the kit to call it.

The declaration (``hello`` capabilities):

* ``session-store``: the profile itself;
* ``store:durable`` or ``store:process-local`` (none: read as ``process-local``, SS-GEN-009);
* ``store:placements:durable`` or ``store:placements:process-local`` (none: placements not understood);
* one ``store:<face>`` per optional face it has: ``forget``, ``pin`` (``pin`` and ``unpin``),
  ``noteTaskRun``, ``list``, ``listPlaced``, ``fork``, ``ownership`` (``ownerOf`` and ``register``),
  ``incarnationOf``;
* ``store:clock``: the store takes the kit's clock (``store.open`` ``clockMs``, then ``store.setClock``);
* ``store:rejects-requireExisting``: the store does not check existence and refuses every ``acquire``
  carrying ``requireExisting`` instead (the contract allows either; SS-LIFE-007).  The cases that use
  the option then check that refusal and stop there; the cases that need the check itself
  (``needs: [requireExisting]``) read unsupported; every other clause is judged by cases without it.
* ``store:replicas``: instances in several processes that open one location share one store (a
  database file, a database schema): the replica cases run processes of it side by side.  A store
  whose storage lives in its process (the TTL store) leaves it out and those cases read unsupported.

A store's refusal is the JSON-RPC error ``-32004`` with ``data: {"kind": "session_error", "code"}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relavium_conformance._wire.protocol import METHODS, SESSION_ERROR, Method

__all__ = [
    "FACES",
    "METHODS_BY_NAME",
    "REJECTS_REQUIRE_EXISTING",
    "SESSION_ERROR",
    "STORE_METHODS",
    "StoreDeclaration",
    "declaration_of",
]


FACES = (
    "forget",
    "pin",
    "noteTaskRun",
    "list",
    "listPlaced",
    "fork",
    "ownership",
    "incarnationOf",
    "replicas",
)


REJECTS_REQUIRE_EXISTING = "store:rejects-requireExisting"
"""The declaration of a store that refuses ``requireExisting`` rather than checking existence."""


STORE_METHODS: tuple[Method, ...] = tuple(
    row for row in METHODS if row.name.startswith("store.") or row.capability == "session-store"
)
"""The profile's rows of the method table (``_wire/protocol.py``)."""

METHODS_BY_NAME: dict[str, Method] = {row.name: row for row in STORE_METHODS}


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
    rejects_require_existing: bool = False

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
        words.add("rejects-requireExisting" if self.rejects_require_existing else "requireExisting")
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
        rejects_require_existing=REJECTS_REQUIRE_EXISTING in caps,
    )
