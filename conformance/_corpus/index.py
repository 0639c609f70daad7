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
* the interpreter's version and the libraries the loader rests on: the folders pydantic,
  pydantic_core, jsonschema, jsonschema_specifications, referencing and ruamel are installed in, and the
  names of the ``*.dist-info``/``*.egg-info`` folders there (which carry their versions).

Only regular files are read (a FIFO or device under ``fixtures/`` is keyed by its name and kind, never
opened); a linked folder is walked where it is first met, and every other path reaching it is keyed as
an alias of that first path, so retargeting a link changes the key.

A changed byte anywhere is a new key, and an index written under another key is never read: the full
load runs, with exactly its usual errors, and writes the index afresh.

Reading every byte to compute the key costs more than the rest of a listing, so the index also keeps a
*signature* of the same files: per keyed file its path, device, inode, size, modification and change
times (``os.stat``), with the same walk, environment lines, roots and non-file entries as the key.  A
listing whose signature equals the kept one is answered without reading the files.  On the local file
systems the kit is meant for, the kernel moves a file's change time at every write, rename and
``os.utime`` and no call sets it back, and a file added, removed or retargeted changes the walk, so a
file changed since the signature was kept cannot match it (an inode number may be reused by a save by
rename: the new change time is what tells).  The exception is a change within one tick of the file
system's clock of the moment it was last seen, the "racily clean" case git also guards against: a
signature is kept only when every file it describes last changed at least :data:`_SETTLED_NS` (2 s)
before the walk began, by the clock of the file system itself (the modification time of a file just
created in the cache folder, which must be on the same device as every keyed file; a local clock ahead
of a file server's cannot make a fresh file look old), and when a second walk after the key was computed
sees the same signature.  Until then (a fresh checkout, a file just edited) listings compute the key, and
the first one after the files have settled keeps the signature.  What the metadata cannot show is not
seen either, as with git: bytes written through a shared ``mmap`` after its first write fault, a file
server's attribute cache (NFS, FUSE mounts such as sshfs, whose change time is the modification time),
or a clock stepped back by hand; Windows keeps no signature (its ``st_ctime`` is the creation time).
``RELAVIUM_CONFORMANCE_YAML_CACHE=0`` turns the index off for such a checkout.

A load that fails writes nothing, so an error is reported again each time, never remembered.  A
missing, unreadable, corrupt, foreign or unwritable file just means the full load; the write is atomic
(a temporary file renamed over the old one).  Off in an installed kit and with
``RELAVIUM_CONFORMANCE_YAML_CACHE=0``, like the parse cache.

The selection functions live here too (:func:`select_cases`, :func:`exclude_cases`): they match entries
and case objects alike, so a listing from the index and a run from the cases select the same ids.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

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
_MAX_INDEX = 16 << 20  # the real index is about 100 kB; a larger file is not one
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


class CaseEntry(NamedTuple):
    """One case as a listing sees it (``suite`` is a vector case's suite, ``None`` for a transcript).

    (A named tuple rather than a dataclass: ``dataclasses`` imports ``inspect``, a fifth of what a
    listing costs beyond the interpreter's start.)"""

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


def _walk(root: Path, *, suffix: str = "", skip: str = "") -> list[tuple[str, str, str]]:
    """(kind, path under ``root``, full path or first path) of what lies under ``root``, in a fixed order:
    ``file`` for a regular file ending in ``suffix`` and not in ``skip``; ``other`` for anything else
    with such a name (FIFO, device, socket, dangling link), never opened; ``alias`` for a folder met
    before under another path (its first path in place of a full path), not walked again, so a link
    loop ends and a retargeted link is a new key.  ``__pycache__`` folders are left out.  Iterative:
    no depth of nesting can exhaust the stack."""
    found: list[tuple[str, str, str]] = []
    first: dict[tuple[int, int], str] = {}
    pending: list[tuple[str, str]] = [(str(root), "")]
    while pending:
        folder, base = pending.pop()
        status = os.stat(folder)
        seen = first.setdefault((status.st_dev, status.st_ino), base)
        if seen != base:
            found.append(("alias", base, seen))
            continue
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        folders: list[tuple[str, str]] = []
        for entry in entries:
            if entry.is_dir():  # linked folders too: the loader's glob of a suite folder follows links
                if entry.name != "__pycache__":
                    folders.append((entry.path, f"{base}{entry.name}/"))
            elif entry.name.endswith(suffix) and not (skip and entry.name.endswith(skip)):
                kind = "file" if entry.is_file() else "other"
                found.append((kind, base + entry.name, entry.path))
        pending.extend(reversed(folders))  # depth first, in name order
    return found


_MAX_KEYED_FILE = 1 << 30  # a fixture, module or schema larger than this is not something to hash


def _text(value: object) -> bytes:
    """Bytes for the key that any string gives, a lone surrogate or an undecodable file name included."""
    return os.fsencode(value) if isinstance(value, Path) else str(value).encode("utf-8", "surrogatepass")


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


def _trees(fixtures: Path, code: Iterable[Path], schemas: Path) -> list[tuple[str, Path, str, str]]:
    """(label, root, suffix, skip) of each tree the key and the signature walk."""
    trees = [("fixtures", fixtures, "", _NOT_READ), *(("code", root, ".py", "") for root in code)]
    trees.append(("schemas", schemas, "", ""))
    return trees


def corpus_key(fixtures: Path, code: Iterable[Path], schemas: Path, environment: Iterable[str] = ()) -> str:
    """The key of an index: a SHA-256 over every loader-read file under ``fixtures`` (path and bytes),
    every ``.py`` file under each ``code`` folder, every file under ``schemas`` and the ``environment``
    lines.  Raises ``OSError`` when a folder cannot be listed or a file cannot be read (a path the
    system cannot name included)."""
    import hashlib

    from relavium_conformance._data import read_regular_file

    try:
        digest = hashlib.sha256(b"corpus-index %d\0%s\0" % (_FORMAT, _text(fixtures)))
        for line in environment:
            digest.update(b"env\0%s\0" % _text(line))
        for label, root, suffix, skip in _trees(fixtures, code, schemas):
            digest.update(b"tree\0%s\0%s\0" % (label.encode(), _text(root)))
            for kind, relative, full in _walk(root, suffix=suffix, skip=skip):
                if kind != "file":  # (another folder's first path, or a file that is not regular)
                    digest.update(b"%s\0%s\0%s\0" % (kind.encode(), _text(relative), _text(full)))
                    continue
                raw = read_regular_file(full, _MAX_KEYED_FILE)
                digest.update(b"file\0%s\0%d\0" % (_text(relative), len(raw)))
                digest.update(raw)
    except (UnicodeError, ValueError) as exc:  # a name the system cannot encode, a NUL in a path
        raise OSError(f"a path under the corpus cannot be named: {exc}") from None
    return digest.hexdigest()


def _code_roots() -> list[Path]:
    """The folders of the judge's code: the kit's package and the engine's."""
    import relavium_reference

    return [Path(__file__).resolve().parent.parent, Path(relavium_reference.__file__).resolve().parent]


# What the full load runs, module by module: a function here that is not the kit's own (a test's stand-in)
# may give cases the key does not describe, so no index is used or kept while one is in place.
_LOADER = {
    "cases": ("load_case",),
    "discovery": (
        "read_corpus",
        "load_transcripts",
        "load_transcripts_from",
        "load_case",
        "load_vector_cases",
        "wire_twin",
    ),
    "vectors": ("load_vector_cases", "_manifest", "_read"),
}
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_kits_own(function: object, name: str) -> bool:
    code = getattr(function, "__code__", None)
    return (
        code is not None
        and code.co_name == name
        and os.path.dirname(os.path.dirname(os.path.abspath(code.co_filename))) == _PACKAGE
    )


def _loader_reads_only(fixtures: Path) -> bool:
    """Whether the full load, as this process has it, reads exactly the keyed fixtures: its case folders
    are ``fixtures/transcripts`` and ``fixtures/vectors`` and its functions are the kit's own.  They are
    unless a test has put a stand-in folder or function in place; a loader module not imported yet
    cannot have been, and is not imported to ask."""
    for name, folder_function, folder in (
        ("cases", "transcripts_dir", "transcripts"),
        ("discovery", "transcripts_dir", "transcripts"),
        ("vectors", "vectors_dir", "vectors"),
    ):
        module = sys.modules.get(f"relavium_conformance._corpus.{name}")
        if module is None:
            continue
        if not all(_is_kits_own(getattr(module, f, None), f) for f in _LOADER[name]):
            return False
        if getattr(module, folder_function)().resolve() != (fixtures / folder).resolve():
            return False
    return True


def _environment() -> list[str]:
    """The interpreter and the judge's libraries, as lines of the key and of the signature."""
    return [sys.version, sys.implementation.cache_tag or "", *_installed()]


def _current_key() -> str | None:
    """The key of the corpus as it is now, or ``None``: no index may be used or kept (a file cannot be
    read, or the loader reads cases from outside the keyed fixtures)."""
    from relavium_conformance._data import fixtures_dir, schemas_dir

    try:
        fixtures = fixtures_dir()
        if not _loader_reads_only(fixtures):
            return None
        return corpus_key(fixtures, _code_roots(), schemas_dir(), _environment())
    except (OSError, RecursionError, UnicodeError, ValueError):
        return None  # (an unreadable or unnamable file: the full load reports it, if it matters)


_SETTLED_NS = 2_000_000_000  # a file changed this recently may change again within one tick of its clock


class _Signature(NamedTuple):
    lines: list[str]  # one per environment line, tree and walked entry ("\0" between fields)
    began: int  # time.time_ns() when the walk began
    newest: int  # the latest modification or change time among the keyed files (their file system's clock)
    devices: frozenset[int]  # the devices the keyed files live on


def _signature() -> _Signature | None:
    """The corpus as its files' metadata shows it now (see the module's docstring), or ``None`` when no
    index may be used (as :func:`_current_key`) or a name cannot be held as UTF-8 text."""
    from relavium_conformance._data import fixtures_dir, schemas_dir

    began = time.time_ns()
    newest = 0
    devices: set[int] = set()
    try:
        fixtures = fixtures_dir()
        if not _loader_reads_only(fixtures):
            return None
        lines = [f"corpus-signature {_FORMAT}\0{fixtures}", *(f"env\0{line}" for line in _environment())]
        for label, root, suffix, skip in _trees(fixtures, _code_roots(), schemas_dir()):
            lines.append(f"tree\0{label}\0{root}")
            for kind, relative, full in _walk(root, suffix=suffix, skip=skip):
                if kind != "file":
                    lines.append(f"{kind}\0{relative}\0{full}")
                    continue
                status = os.stat(full)
                if not stat.S_ISREG(status.st_mode):
                    return None  # (changed kind since the walk: the key's read refuses it too)
                newest = max(newest, status.st_mtime_ns, status.st_ctime_ns)
                devices.add(status.st_dev)
                lines.append(
                    f"file\0{relative}\0{status.st_dev}\0{status.st_ino}\0{status.st_size}"
                    f"\0{status.st_mtime_ns}\0{status.st_ctime_ns}"
                )
        for line in lines:
            line.encode("utf-8")  # (a lone surrogate from an undecodable name: no JSON file can keep it)
    except (OSError, RecursionError, UnicodeError, ValueError):
        return None
    return _Signature(lines, began, newest, frozenset(devices))


def _fs_clock(folder: Path, devices: frozenset[int]) -> int | None:
    """The file system's own time now, read from a file created (and removed) in ``folder``, when every
    one of ``devices`` is ``folder``'s; ``None`` otherwise (another file system's clock says nothing of
    those, and a folder that cannot be written to says nothing at all)."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor, name = tempfile.mkstemp(dir=folder, prefix=".corpus-clock.", suffix=".tmp")
        try:
            status = os.fstat(descriptor)
        finally:
            os.close(descriptor)
            os.unlink(name)
    except OSError:
        return None
    return status.st_mtime_ns if devices <= {status.st_dev} else None


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


def _read_stored(path: Path) -> dict[str, Any] | None:
    """The index file as JSON of the current format, or ``None`` (no file, anything malformed)."""
    import json

    from relavium_conformance._data import read_regular_file

    try:  # only a regular file of bounded size, not through a link: a FIFO, /dev/zero... is no index
        stored = json.loads(read_regular_file(str(path), _MAX_INDEX, follow=False))
    except (OSError, ValueError, RecursionError):  # (RecursionError: JSON nested beyond the parser)
        return None
    if type(stored) is not dict or stored.get("format") != _FORMAT or type(stored.get("key")) is not str:
        return None
    return stored


def _entries(stored: dict[str, Any]) -> tuple[CaseEntry, ...] | None:
    rows = stored.get("cases")
    if type(rows) is not list or not rows:
        return None
    entries = [_entry_from_json(row) for row in rows]
    if any(entry is None for entry in entries):
        return None
    return tuple(entry for entry in entries if entry is not None)


def _write_index(path: Path, key: str, entries: tuple[CaseEntry, ...], signature: list[str] | None) -> None:
    """Keep the entries under ``key`` (and ``signature``, when given); any failure (read-only folder, full
    disk) keeps nothing."""
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
    document = {"format": _FORMAT, "key": key, "signature": signature, "cases": rows}
    try:  # (a text no UTF-8 can hold, a lone surrogate, keeps nothing: it is encoded before any file exists)
        data = json.dumps(document, ensure_ascii=False).encode()
    except (UnicodeError, ValueError):
        return
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".corpus-index.", suffix=".tmp")
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, path)  # atomic: a reader sees the old index or the new one
        temporary = None
    except OSError:
        return
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _still(seen: _Signature | None, folder: Path) -> list[str] | None:
    """``seen``'s lines when they may be kept beside a key computed after ``seen`` was taken: a second walk
    now sees the same (nothing changed while the key was computed), and every file had last changed
    :data:`_SETTLED_NS` before the first walk began, by its file system's clock (:func:`_fs_clock`; the
    local clock only measures how long ago that walk began).  Never on Windows."""
    if seen is None or sys.platform == "win32":  # (there st_ctime is the creation time: no write moves it)
        return None
    again = _signature()
    if again is None or again.lines != seen.lines:
        return None
    now = _fs_clock(folder, seen.devices)
    if now is None:
        return None
    began = now - (time.time_ns() - seen.began)  # when the first walk began, by the file system's clock
    return seen.lines if seen.newest < began - _SETTLED_NS else None


def _full_load() -> tuple[AnyCase, ...]:
    from relavium_conformance._corpus.discovery import read_corpus

    return read_corpus()


def corpus_index() -> tuple[CaseEntry, ...]:
    """The entry of every case of the kit's corpus (transcripts and vectors), sorted by id.

    From the index when its signature or its key matches the corpus as it is now; otherwise from the full
    load (:func:`relavium_conformance._corpus.discovery.read_corpus`, which raises its usual usage errors),
    whose entries are then kept, unless a file changed while it loaded.
    """
    path = index_path()
    if path is None:
        return tuple(entry_of(case) for case in _full_load())
    stored = _read_stored(path)
    seen = _signature()
    if stored is not None and seen is not None and stored.get("signature") == seen.lines:
        kept = _entries(stored)
        if kept is not None:
            return kept
    key = _current_key()
    if stored is not None and key is not None and stored["key"] == key:
        kept = _entries(stored)
        if kept is not None:
            if (
                lines := _still(seen, path.parent)
            ) is not None:  # (settled since kept, or touched: same bytes)
                _write_index(path, key, kept, lines)
            return kept
    entries = tuple(entry_of(case) for case in _full_load())
    if key is not None and _current_key() == key:
        _write_index(path, key, entries, _still(seen, path.parent))
    return entries
