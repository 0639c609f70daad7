"""The deliberately broken implementations, one module per area of the clause catalogue.

Each break is the reference engine with one behaviour changed; it is registered where it is defined by
:func:`relavium_conformance._selftest.base.break_of` and lives in the module of its first clause's area
(:data:`CLAUSE_AREAS`).  Importing this package imports every area module, which builds the registry:
:data:`BROKEN_IMPLEMENTATIONS`.  :mod:`relavium_conformance._selftest.proofs` runs every case citing a
break's clauses against it and reports whether at least one of them failed; a break no case catches is
a hole in the corpus.

Lives here: one module per clause area and this registry, nothing else.

Must not live here: the store profile's broken stores (``_selftest/stores/``), the selftest itself
(``_selftest/proofs.py``), compliant alternatives (``_selftest/compliant*.py``), and no module named with
a digit.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference``, ``_run``, ``_store`` and its own room ``_selftest`` (as the room does; tests/test_layering.py
holds the order), and the engine, internals included.
"""

from __future__ import annotations

from relavium_conformance._selftest.base import BrokenImplementation, registered_breaks
from relavium_conformance._selftest.breaks import (  # noqa: F401  (importing registers the breaks)
    automatic_compaction,
    budget,
    compaction,
    compaction_outcomes,
    context,
    events,
    export,
    history_operations,
    legacy,
    lifecycle,
    messages,
    observers,
    overflow,
    projection,
    security,
    session,
    turn_cap,
    usage,
    user_commands,
    validation,
)

__all__ = ["BROKEN_IMPLEMENTATIONS", "CLAUSE_AREAS", "BrokenImplementation", "area_module", "broken_by_name"]

CLAUSE_AREAS: tuple[tuple[str, int, int, str], ...] = (
    # (clause id prefix, first number, last number, module under breaks/)
    ("AS-SESS", 1, 999, "session"),
    ("AS-LIFE", 1, 24, "lifecycle"),  # start, sendMessage, turn policy, abort, cancel
    ("AS-LIFE", 25, 33, "user_commands"),  # runUserCommand
    ("AS-LIFE", 34, 43, "history_operations"),  # resume, compact, trimHistory, export
    ("AS-LIFE", 44, 999, "lifecycle"),
    ("AS-CAP", 1, 999, "turn_cap"),
    ("AS-OBS", 1, 999, "observers"),
    ("AS-CTX", 1, 999, "context"),
    ("AS-SEC", 1, 999, "security"),
    ("AS-EVT", 1, 999, "events"),
    ("AS-PROJ", 1, 999, "projection"),
    ("AS-COMP", 1, 15, "automatic_compaction"),  # triggers, pre-send compaction
    ("AS-COMP", 16, 35, "compaction"),  # passes, kept parts, the unknown-window acknowledgement
    ("AS-COMP", 36, 999, "compaction_outcomes"),  # moments, results, refusals, fall-back to trimming
    ("AS-FIN", 1, 999, "budget"),
    ("AS-OVF", 1, 999, "overflow"),
    ("AS-MSG", 1, 999, "messages"),
    ("AS-LEG", 1, 999, "legacy"),
    ("AS-EXP", 1, 999, "export"),
    ("AS-VAL", 1, 999, "validation"),
    ("AS-USE", 1, 999, "usage"),
)
"""Where a break lives: the module for the area of its first clause id (the prefix, and the number
within the prefix where one area is split over two modules)."""

BROKEN_IMPLEMENTATIONS: tuple[BrokenImplementation, ...] = registered_breaks()


def area_module(clause: str) -> str:
    """The module under ``breaks/`` for ``clause``'s area; ``KeyError`` for an id no row covers."""
    prefix, _, number = clause.rpartition("-")
    for area, first, last, module in CLAUSE_AREAS:
        if area == prefix and number.isdigit() and first <= int(number) <= last:
            return module
    raise KeyError(clause)


def broken_by_name(name: str) -> BrokenImplementation:
    """The registered break ``name``; ``KeyError`` when there is none."""
    for broken in BROKEN_IMPLEMENTATIONS:
        if broken.name == name:
            return broken
    raise KeyError(name)
