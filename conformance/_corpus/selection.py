"""Which cases a run sees: the kit's corpus, a port's own case folders, ``--select`` and ``--exclude``.

A port's own cases (``run --cases DIR``, the plugin's ``--relavium-cases DIR``) are golden transcripts
in the kit's format, validated exactly as the kit's are; their ids are their paths under ``DIR`` and
must not collide with the kit's.  ``--exclude`` takes the same patterns as ``--select`` (ids, areas,
clause ids, clause areas, globs) and removes what they match.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from relavium_conformance._corpus.cases import AnyCase
from relavium_conformance._corpus.catalogue import unknown_ids
from relavium_conformance._corpus.discovery import load_cases, load_transcripts_from
from relavium_conformance._corpus.index import exclude_cases
from relavium_conformance._errors import KitUsageError

__all__ = ["exclude_cases", "gather_cases"]


def gather_cases(extra_dirs: Sequence[Path] = ()) -> tuple[AnyCase, ...]:
    """The kit's cases plus every case under ``extra_dirs``, sorted by id."""
    cases: list[AnyCase] = list(load_cases())
    seen = {case.id for case in cases}
    for folder in extra_dirs:
        if not folder.is_dir():
            raise KitUsageError(f"--cases {folder}: not a folder")
        for case in load_transcripts_from(folder.resolve()):
            if case.id in seen:
                raise KitUsageError(f"{case.source}: case id {case.id!r} is already taken")
            unknown = unknown_ids(case.clauses)
            if unknown:
                raise KitUsageError(f"{case.source}: cites unknown clause ids {', '.join(unknown)}")
            seen.add(case.id)
            cases.append(case)
    return tuple(sorted(cases, key=lambda c: c.id))
