"""The corpus index: what a listing shows of each case, kept between processes; and case selection.

``run --list`` prints each case's id and clauses, and selects on ids, areas, clause ids and vector
suites; it needs none of the validated case objects, yet they can only be trusted once the whole corpus
has been parsed and validated, which builds every case model (pydantic) and judges the vector shapes
(jsonschema).  :func:`corpus_index` does that full load once, keeps the :class:`CaseEntry` of every case
in ``corpus-index.json`` beside the YAML parse cache (:func:`relavium_conformance._data.yaml_cache_dir`),
and answers later processes from that file while nothing it rests on has changed.

The file is named by one key, a SHA-256 over everything a listing rests on:

* every file under ``fixtures/`` the loader may read (every file but the golden snapshots, which only a
  run reads), by path and exact bytes;
* the judge: the bytes of every ``.py`` file of the kit and of the engine, and every file under
  ``schemas/``;
* the interpreter's version and the installed distributions (the names of every ``*.dist-info`` on
  ``sys.path``, which carry their versions: pydantic, jsonschema, ruamel.yaml...).

A changed byte anywhere is a new key, and an index written under another key is never read: the full
load runs, with exactly its usual errors, and writes the index afresh.  A load that fails writes
nothing, so an error is reported again each time, never remembered.  A missing, unreadable, corrupt,
foreign or unwritable file just means the full load; the write is atomic (a temporary file renamed
over the old one).  Off in an installed kit and with ``RELAVIUM_CONFORMANCE_YAML_CACHE=0``, like the
parse cache.

The selection functions live here too (:func:`select_cases`, :func:`exclude_cases`): they match entries
and case objects alike, so a listing from the index and a run from the cases select the same ids.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from relavium_conformance._corpus.cases import AnyCase

__all__ = [
    "CaseEntry",
    "Selectable",
    "corpus_index",
    "corpus_key",
    "entry_of",
    "exclude_cases",
    "index_path",
    "select_cases",
]

_FORMAT = 1
_INDEX_FILE = "corpus-index.json"
_NOT_READ = ".snapshot.json"  # golden snapshots: read by a run, never by the loader


class Selectable(Protocol):
    """What selection looks at: a case object (:class:`Case`, :class:`VectorCase`) or a :class:`CaseEntry`."""

    @property
    def id(self) -> str: ...

    @property
    def area(self) -> str: ...

    @property
    def clauses(self) -> tuple[str, ...]: ...


S = TypeVar("S", bound=Selectable)


@dataclass(frozen=True)
class CaseEntry:
    """One case as a listing sees it (``suite`` is a vector case's suite, ``None`` for a transcript)."""

    id: str
    title: str
    area: str
    clauses: tuple[str, ...]
    capabilities: tuple[str, ...]
    suite: str | None = None


def entry_of(case: AnyCase) -> CaseEntry:
    """The entry of a loaded case."""
    suite = getattr(case, "suite", None)
    return CaseEntry(
        id=case.id,
        title=case.title,
        area=case.area,
        clauses=tuple(case.clauses),
        capabilities=tuple(case.capabilities),
        suite=suite if isinstance(suite, str) else None,
    )


# --- selection ---------------------------------------------------------------------------------------


def _keys(case: Selectable) -> list[str]:
    keys = [case.id, case.area, *case.clauses, *{re.sub(r"-\d{3}$", "", c) for c in case.clauses}]
    suite = getattr(case, "suite", None)  # a vector case also answers to its suite
    if isinstance(suite, str):
        keys.append(f"{case.area}/{suite}")
    return keys


def select_cases(cases: tuple[S, ...], patterns: list[str]) -> tuple[S, ...]:
    """Keep cases whose id, area or a cited clause (or clause area, e.g. ``AS-CAP``) matches a pattern.

    Patterns are exact ids/areas/clause ids or shell-style globs (``lifecycle/*``, ``AS-LIFE-0*``); a
    vector case also answers to its suite (``vectors/export``).
    """
    if not patterns:
        return cases
    import fnmatch

    def matches(case: S, pattern: str) -> bool:
        return any(fnmatch.fnmatchcase(key, pattern) for key in _keys(case))

    return tuple(c for c in cases if any(matches(c, p) for p in patterns))


def exclude_cases(cases: tuple[S, ...], patterns: Sequence[str]) -> tuple[S, ...]:
    """Drop the cases any pattern matches (the matching of :func:`select_cases`)."""
    if not patterns:
        return cases
    dropped = {case.id for case in select_cases(cases, list(patterns))}
    return tuple(case for case in cases if case.id not in dropped)


# --- the index ---------------------------------------------------------------------------------------


def index_path() -> Path | None:
    """Where the index lives (beside the parse cache), or ``None`` when the caches are off."""
    from relavium_conformance._data import yaml_cache_dir

    folder = yaml_cache_dir()
    return None if folder is None else folder.parent / _INDEX_FILE


def _files(root: Path, *, suffix: str = "", skip: str = "") -> list[tuple[str, str]]:
    """(path under ``root``, full path) of every file under ``root`` ending in ``suffix`` and not in
    ``skip``, in a fixed order (``__pycache__`` folders left out)."""
    found: list[tuple[str, str]] = []
    entered: set[tuple[int, int]] = set()

    def visit(folder: str, base: str) -> None:
        status = os.stat(folder)
        if (status.st_dev, status.st_ino) in entered:
            return  # a linked folder seen before (a link loop is entered once)
        entered.add((status.st_dev, status.st_ino))
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        for entry in entries:
            if entry.is_dir():  # linked folders too: the loader's glob of a suite folder follows links
                if entry.name != "__pycache__":
                    visit(entry.path, f"{base}{entry.name}/")
            elif entry.name.endswith(suffix) and not (skip and entry.name.endswith(skip)):
                found.append((base + entry.name, entry.path))

    visit(str(root), "")
    return found


def _read_bytes(path: str) -> bytes:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(descriptor, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


_JUDGES = ("pydantic", "pydantic_core", "jsonschema", "jsonschema_specifications", "referencing", "ruamel")


def _installed() -> list[str]:
    """The distributions installed where the judge's libraries are (pydantic, jsonschema, ruamel.yaml...),
    with their versions: the names of the metadata folders there (``pydantic-2.9.2.dist-info``)."""
    from importlib.util import find_spec

    folders: set[str] = set()
    for name in _JUDGES:
        spec = find_spec(name)
        for location in (spec.submodule_search_locations or ()) if spec is not None else ():
            folders.add(os.path.dirname(location))
    names: set[str] = set()
    for folder in sorted(folders):
        try:
            names.update(n for n in os.listdir(folder) if n.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    return [*sorted(folders), *sorted(names)]


def corpus_key(fixtures: Path, code: Iterable[Path], schemas: Path, environment: Iterable[str] = ()) -> str:
    """The key of an index: a SHA-256 over every loader-read file under ``fixtures`` (path and bytes),
    every ``.py`` file under each ``code`` folder, every file under ``schemas`` and the ``environment``
    lines.  Raises ``OSError`` when a file cannot be read."""
    import hashlib

    digest = hashlib.sha256(f"corpus-index {_FORMAT}\0{fixtures}\0".encode())
    for line in environment:
        digest.update(f"env\0{line}\0".encode())
    trees = [("fixtures", fixtures, "", _NOT_READ), *(("code", root, ".py", "") for root in code)]
    trees.append(("schemas", schemas, "", ""))
    for label, root, suffix, skip in trees:
        digest.update(f"tree\0{label}\0{root}\0".encode())
        for relative, full in _files(root, suffix=suffix, skip=skip):
            raw = _read_bytes(full)
            digest.update(f"file\0{relative}\0{len(raw)}\0".encode())
            digest.update(raw)
    return digest.hexdigest()


def _code_roots() -> list[Path]:
    """The folders of the judge's code: the kit's package and the engine's."""
    import relavium_reference

    return [Path(__file__).resolve().parent.parent, Path(relavium_reference.__file__).resolve().parent]


def _loader_reads_only(fixtures: Path) -> bool:
    """Whether the case folders the loader reads, as this process has it, are inside ``fixtures`` (the
    keyed folder).  They are unless a test has pointed ``transcripts_dir``/``vectors_dir`` elsewhere; a
    loader module not imported yet cannot have been, and is not imported to ask."""
    folders: list[Path] = []
    for name, function in (("cases", "transcripts_dir"), ("vectors", "vectors_dir")):
        module = sys.modules.get(f"relavium_conformance._corpus.{name}")
        if module is not None:
            folders.append(getattr(module, function)())
    keyed = fixtures.resolve()
    return all(folder.resolve().is_relative_to(keyed) for folder in folders)


def _current_key() -> str | None:
    """The key of the corpus as it is now, or ``None``: no index may be used or kept (a file cannot be
    read, or the loader reads cases from outside the keyed fixtures)."""
    from relavium_conformance._data import fixtures_dir, schemas_dir

    fixtures = fixtures_dir()
    if not _loader_reads_only(fixtures):
        return None
    environment = [sys.version, sys.implementation.cache_tag or "", *_installed()]
    try:
        return corpus_key(fixtures, _code_roots(), schemas_dir(), environment)
    except (OSError, RecursionError):
        return None  # (an unreadable file or a folder loop: the full load reports it, if it matters)


def _strings(value: Any) -> tuple[str, ...] | None:
    if type(value) is list and all(type(item) is str for item in value):
        return tuple(value)
    return None


def _entry_from_json(row: Any) -> CaseEntry | None:
    if type(row) is not dict or set(row) != {"id", "title", "area", "clauses", "capabilities", "suite"}:
        return None
    clauses, capabilities = _strings(row["clauses"]), _strings(row["capabilities"])
    text = (row["id"], row["title"], row["area"])
    if clauses is None or capabilities is None or not all(type(v) is str for v in text):
        return None
    if row["suite"] is not None and type(row["suite"]) is not str:
        return None
    return CaseEntry(row["id"], row["title"], row["area"], clauses, capabilities, row["suite"])


def _read_index(path: Path, key: str) -> tuple[CaseEntry, ...] | None:
    """The entries kept under ``key``, or ``None`` (no file, another key, anything malformed)."""
    import json

    try:
        stored = json.loads(_read_bytes(str(path)))
    except (OSError, ValueError):
        return None
    if type(stored) is not dict or stored.get("format") != _FORMAT or stored.get("key") != key:
        return None
    rows = stored.get("cases")
    if type(rows) is not list or not rows:
        return None
    entries = [_entry_from_json(row) for row in rows]
    if any(entry is None for entry in entries):
        return None
    return tuple(entry for entry in entries if entry is not None)


def _write_index(path: Path, key: str, entries: tuple[CaseEntry, ...]) -> None:
    """Keep the entries under ``key``; any failure (read-only folder, full disk) keeps nothing."""
    import json
    import tempfile

    rows = [
        {
            "id": e.id,
            "title": e.title,
            "area": e.area,
            "clauses": list(e.clauses),
            "capabilities": list(e.capabilities),
            "suite": e.suite,
        }
        for e in entries
    ]
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".corpus-index.", suffix=".tmp")
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"format": _FORMAT, "key": key, "cases": rows}, out, ensure_ascii=False)
        os.replace(temporary, path)  # atomic: a reader sees the old index or the new one
        temporary = None
    except OSError:
        return
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def corpus_index() -> tuple[CaseEntry, ...]:
    """The entry of every case of the kit's corpus (transcripts and vectors), sorted by id.

    From the index when one was written under the current key; otherwise from the full load
    (:func:`relavium_conformance._corpus.cases.read_corpus`, which raises its usual usage errors), whose
    entries are then kept, unless a file changed while it loaded.
    """
    path = index_path()
    key = _current_key() if path is not None else None
    if path is not None and key is not None:
        kept = _read_index(path, key)
        if kept is not None:
            return kept
    from relavium_conformance._corpus.cases import read_corpus

    entries = tuple(entry_of(case) for case in read_corpus())
    if path is not None and key is not None and _current_key() == key:
        _write_index(path, key, entries)
    return entries
