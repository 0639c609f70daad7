"""Locating the kit's language-neutral data (``fixtures/`` and ``schemas/``).

In a wheel the two folders travel inside the package (``relavium_conformance/fixtures`` and
``relavium_conformance/schemas``).  In a checkout, and in an editable install, they are the
top-level folders of the repository.  One function serves both, preferring the installed data.

May import: ``_errors`` (the room below it; tests/test_layering.py holds the order).
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any, Literal

from relavium_conformance._errors import KitError

__all__ = [
    "CORPUS_JSON",
    "DataMissingError",
    "corpus_json_path",
    "data_root",
    "examples_dir",
    "fixtures_dir",
    "parse_yaml",
    "read_regular_file",
    "read_yaml",
    "schemas_dir",
    "yaml_cache_dir",
]

_PACKAGE_DIR = Path(__file__).resolve().parent


class DataMissingError(KitError, FileNotFoundError):
    """Neither the installed package data nor a checkout folder could be found.

    A :class:`KitError` like every error of the kit, and still a ``FileNotFoundError`` for callers that
    catch that."""


@functools.cache  # asked once per file read; where the data lives does not change while the kit runs
def data_root(kind: Literal["fixtures", "schemas"]) -> Path:
    installed = _PACKAGE_DIR / kind
    if installed.is_dir() and any(installed.iterdir()):
        return installed
    checkout = _PACKAGE_DIR.parent / kind
    if checkout.is_dir():
        return checkout
    raise DataMissingError(f"the kit's {kind}/ folder is missing (looked in {installed} and {checkout})")


def fixtures_dir() -> Path:
    return data_root("fixtures")


def schemas_dir() -> Path:
    return data_root("schemas")


def examples_dir() -> Path | None:
    """The example adapters: ``docs/examples/`` (checkout), ``relavium_conformance/examples`` (wheel)."""
    for candidate in (_PACKAGE_DIR / "examples", _PACKAGE_DIR.parent / "docs" / "examples"):
        if candidate.is_dir():
            return candidate
    return None


CORPUS_JSON = "corpus.json"
CORPUS_FORMAT = 1


def corpus_json_path() -> Path | None:
    """The JSON copy of the fixtures, generated when a wheel is built (absent in a checkout)."""
    path = fixtures_dir() / CORPUS_JSON
    return path if path.is_file() else None


def build_corpus_json(root: Path) -> dict[str, Any]:
    """Every YAML file under ``root`` as JSON data, keyed by its path under ``root``, with the SHA-256 of
    the exact YAML text it was read from, and the parser that read it (:func:`parser_version`).  The YAML
    stays the source: this copy is made at build time (``setup.py``) for readers without a YAML library,
    and for the kit to skip parsing while the same parser is installed."""
    import hashlib

    files: dict[str, Any] = {}
    for path in sorted(root.rglob("*.yaml")):
        raw = path.read_bytes()
        files[path.relative_to(root).as_posix()] = {
            "sha256": hashlib.sha256(raw).hexdigest(),
            "data": parse_yaml(raw.decode("utf-8")),
        }
    return {"format": CORPUS_FORMAT, "parser": parser_version(), "files": files}


_CORPUS_CACHE: dict[Path, dict[str, Any]] = {}


def _from_corpus_json(path: Path, raw: bytes) -> tuple[bool, Any]:
    """(True, data) when the JSON copy holds this exact file; (False, None) otherwise."""
    corpus = corpus_json_path()
    if corpus is None:
        return False, None
    root = corpus.parent
    try:
        key = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return False, None
    if root not in _CORPUS_CACHE:
        import json

        try:
            whole = json.loads(corpus.read_text(encoding="utf-8"))
            # parsed by another parser version (or by an older build that did not say): parse afresh
            same = whole.get("parser") == parser_version()
            _CORPUS_CACHE[root] = whole.get("files", {}) if same else {}
        except (OSError, ValueError, AttributeError, RecursionError):
            _CORPUS_CACHE[root] = {}
    entry = _CORPUS_CACHE[root].get(key)
    if not isinstance(entry, dict):
        return False, None
    import hashlib

    if entry.get("sha256") != hashlib.sha256(raw).hexdigest():
        return False, None  # the YAML changed since the copy was made: the YAML wins
    return True, entry.get("data")


def parse_yaml(text: str) -> Any:
    """Parse YAML text with the kit's one parser: ruamel's pure-Python safe loader, always.

    (Without ``pure=True`` ruamel switches to its C extension when installed, which reads some of our
    fixtures differently.)  Raises whatever the parser raises; :func:`read_yaml` wraps it for files.
    """
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.composer.warn_double_anchors = False  # an anchor named twice is YAML: no stderr, no raise
    return yaml.load(text)


def read_regular_file(path: str, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file at ``path``; ``OSError`` when it is anything else (FIFO, device,
    folder; a link too unless ``follow``) or larger than ``limit`` bytes.  Never waits on a FIFO and never
    reads more than ``limit`` + 1 bytes: what the caches read may be anything a folder holds."""
    import os
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path}: not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(descriptor, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise OSError(f"{path}: larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(descriptor)


_CACHE_ENV = "RELAVIUM_CONFORMANCE_YAML_CACHE"
_CACHE_VERSION = f"{CORPUS_FORMAT}"
_MAX_CACHED = 64 << 20  # a cached parse larger than this is no entry of ours (the largest is about 1 MB)


@functools.cache
def parser_version() -> str:
    """The YAML parser as a name with its version (``ruamel.yaml-0.18.6``), from its installed metadata
    folder's name, which costs a folder listing rather than an import; ``ruamel.yaml-unknown`` without
    one.  Part of every parse cache entry's name: parses by another version are never served."""
    import os
    from importlib.util import find_spec

    try:
        spec = find_spec("ruamel.yaml")  # imports the ``ruamel`` namespace package only
        folder = os.path.dirname(os.path.dirname(os.path.dirname(spec.origin or ""))) if spec else ""
        names = sorted(os.listdir(folder)) if folder else []
    except (ImportError, OSError, ValueError):
        names = []
    for name in names:
        for prefix in ("ruamel.yaml-", "ruamel_yaml-"):
            if name.startswith(prefix) and name.endswith((".dist-info", ".egg-info")):
                return "ruamel.yaml-" + name[len(prefix) :].rsplit(".", 1)[0]
    return "ruamel.yaml-unknown"


def yaml_cache_dir() -> Path | None:
    """Where a checkout keeps the JSON copies of the YAML it has parsed, or ``None`` (installed kit, or the
    cache turned off with ``RELAVIUM_CONFORMANCE_YAML_CACHE=0``).  ``RELAVIUM_CONFORMANCE_YAML_CACHE=DIR``
    keeps the cache under ``DIR`` instead (``DIR/yaml``, and the shape verdicts beside it), installed or not.

    The same idea as the wheel's ``corpus.json``, kept up to date by use instead of by a build: one JSON
    file per YAML text, named by the SHA-256 of that exact text, so an entry can never describe a file
    that has changed since (an edit gives a new name; nothing is ever stale, only unused).
    """
    import os

    setting = os.environ.get(_CACHE_ENV, "1")
    if setting == "0":
        return None
    if setting not in ("", "1"):  # a folder: the cache lives there (the test suite points it at tmp)
        return Path(setting) / "yaml"
    if (_PACKAGE_DIR / "fixtures").is_dir():
        return None
    checkout = _PACKAGE_DIR.parent
    if not (checkout / "fixtures").is_dir():
        return None
    return checkout / ".relavium-cache" / "yaml"


def _cache_key(raw: bytes) -> str:
    """An entry's name: the SHA-256 of the exact YAML text, then the parser that read it."""
    import hashlib

    return f"{hashlib.sha256(raw).hexdigest()}.{parser_version()}"


def _from_yaml_cache(raw: bytes) -> tuple[bool, Any]:
    folder = yaml_cache_dir()
    if folder is None:
        return False, None
    import json

    try:  # a regular file of bounded size only (a FIFO or /dev/zero in its place is no entry)
        entry = json.loads(read_regular_file(str(folder / f"{_cache_key(raw)}.json"), _MAX_CACHED))
    except (OSError, ValueError, RecursionError):  # (RecursionError: JSON nested beyond the parser)
        return False, None
    if not isinstance(entry, dict) or entry.get("version") != _CACHE_VERSION or "data" not in entry:
        return False, None
    return True, entry["data"]


def _is_json_data(value: Any) -> bool:
    """Only what JSON gives back exactly: str keys, lists (not tuples), finite numbers, no dates."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _is_json_data(item) for key, item in value.items())
    if kind is list:
        return all(_is_json_data(item) for item in value)
    if kind is float:
        return value == value and value not in (float("inf"), float("-inf"))
    return value is None or kind in (str, int, bool)


def _into_yaml_cache(raw: bytes, data: Any) -> None:
    """Keep the parse for next time; any failure (read-only checkout, odd data) just keeps nothing."""
    folder = yaml_cache_dir()
    if folder is None or not _is_json_data(data):
        return
    import json
    import os
    import tempfile

    try:  # encoded before any file exists: a text UTF-8 cannot hold (a lone surrogate) keeps nothing
        text = json.dumps({"version": _CACHE_VERSION, "data": data}, ensure_ascii=False).encode()
    except (UnicodeError, ValueError, RecursionError):
        return
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(text)
        os.replace(tmp, folder / f"{_cache_key(raw)}.json")  # atomic: a reader sees all or nothing
        tmp = None
    except OSError:
        return
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def read_yaml(path: Path, what: str = "file") -> Any:
    """Read a YAML file of the kit's, or raise a usage error naming the file (never a traceback).

    The parse is skipped when a JSON copy of this exact text exists: the wheel's ``corpus.json``, or in a
    checkout the parse cache (:func:`yaml_cache_dir`), which this function fills.
    """
    from relavium_conformance._errors import KitUsageError

    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KitUsageError(f"{path}: the {what} cannot be read ({type(exc).__name__})") from None
    found, data = _from_corpus_json(path, raw)
    if found:
        return data
    found, data = _from_yaml_cache(raw)
    if found:
        return data
    try:
        data = parse_yaml(text)
    except Exception as exc:
        raise KitUsageError(f"{path}: not readable YAML ({type(exc).__name__})") from None
    _into_yaml_cache(raw, data)
    return data
