"""Discovery: every golden transcript of a folder (with their wire twins) and the kit's whole corpus.

:func:`load_cases` is the kit's corpus, read once per process: the transcripts under
``fixtures/transcripts/`` (``cases.py`` is their format), the ``-over-http`` twin of each that asks for one
(``twins.py``) and the vector cases (``vectors.py``), sorted by id.  :func:`load_transcripts_from` reads a
port's own folder of cases, in the same format and with the same checks.
"""

from __future__ import annotations

import functools
from pathlib import Path

from relavium_conformance._corpus.cases import AnyCase, Case, load_case, transcripts_dir
from relavium_conformance._corpus.twins import wire_twin
from relavium_conformance._corpus.vectors import load_vector_cases
from relavium_conformance._errors import KitUsageError

__all__ = ["load_cases", "load_transcripts", "load_transcripts_from", "read_corpus"]


def load_transcripts() -> tuple[Case, ...]:
    """Every case under ``fixtures/transcripts/``, sorted by id. Finding none is an error."""
    return load_transcripts_from(transcripts_dir())


def load_transcripts_from(root: Path) -> tuple[Case, ...]:
    """Every case under ``root`` (a port's own cases, same format and checks), sorted by id."""
    paths = sorted(p for p in root.rglob("*.yaml") if not p.name.startswith("_"))
    if not paths:
        raise KitUsageError(f"no golden transcripts found under {root}")
    cases = tuple(load_case(p, root=root) for p in paths)
    cases += tuple(wire_twin(case) for case in cases if case.wire_twin)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise KitUsageError(f"duplicate case id {case.id}")
        seen.add(case.id)
    return tuple(sorted(cases, key=lambda c: c.id))


def read_corpus() -> tuple[AnyCase, ...]:
    """Every golden transcript and every vector case, sorted by id, read afresh from the files (finding
    none of either is an error); :func:`load_cases` is the same, read once per process."""
    return tuple(sorted((*load_transcripts(), *load_vector_cases()), key=lambda c: c.id))


@functools.cache
def load_cases() -> tuple[AnyCase, ...]:
    """Every golden transcript and every vector case, sorted by id. Finding none of either is an error."""
    return read_corpus()
