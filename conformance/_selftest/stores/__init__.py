"""The broken session stores, one module per area of the session-store clause catalogue.

Each is a reference store with one obligation of the declaration taken away: most are the durable
SQLite store with one method changed, two are the TTL store, some swap one pure helper, one declares two
durabilities at once.  Each is registered where it is defined by
:func:`relavium_conformance._selftest.stores.registry.store_break_of` and lives in the module of its
first clause's area (:data:`CLAUSE_AREAS`); importing this package builds :data:`BROKEN_STORES`.
:mod:`relavium_conformance._selftest.stores.proofs` catches each with the store cases citing its
clauses.

Lives here: one module per SS- clause area, the registry (``registry.py``) and the store profile's
selftest (``proofs.py``).

Must not live here: the agent-session breaks (``_selftest/breaks/``) and the store cases themselves
(``_store/``).

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference``, ``_run``, ``_store`` and its own room ``_selftest`` (as the room does; tests/test_layering.py
holds the order), and the engine, internals included.
"""

from __future__ import annotations

from relavium_conformance._selftest.stores import (  # noqa: F401  (importing registers the stores)
    forks,
    general,
    history,
    lifecycle,
    ownership,
    placement,
    registration,
    runs,
)
from relavium_conformance._selftest.stores.registry import BrokenStore, registered_stores

__all__ = ["BROKEN_STORES", "CLAUSE_AREAS", "BrokenStore", "area_module"]

CLAUSE_AREAS: dict[str, str] = {
    # clause id prefix -> module under stores/
    "SS-GEN": "general",  # isSessionConflict, the durability declaration
    "SS-TYPE": "placement",  # the placement shapes
    "SS-OWN": "ownership",
    "SS-INC": "ownership",  # incarnationOf: who a session id is now
    "SS-REG": "registration",
    "SS-PLACE": "placement",
    "SS-LIFE": "lifecycle",
    "SS-FORK": "forks",
    "SS-RUN": "runs",
    "SS-HIST": "history",
}
"""Where a broken store lives: the module for the area of its first clause id."""

BROKEN_STORES: tuple[BrokenStore, ...] = registered_stores()


def area_module(clause: str) -> str:
    """The module under ``stores/`` for ``clause``'s area; ``KeyError`` for an id no row covers."""
    return CLAUSE_AREAS[clause.rpartition("-")[0]]
