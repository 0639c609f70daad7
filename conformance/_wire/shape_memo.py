"""The shape verdicts a checkout has already reached, kept between processes.

:func:`relavium_conformance._wire.model.shape_problem` judges a value against a shipped JSON Schema; the
corpus asks the same few hundred questions every time the kit starts (``run --list`` validates every
case).  A verdict depends only on the question (shape name, exact value) and on the judge: the schema
files, the judge's own code (``model.py``) and the jsonschema/referencing versions.  So the memo file
carries a fingerprint of the judge, and an entry is named by a hash of the question: a changed schema
or judge gives a new fingerprint (the old verdicts are dropped, never used); a changed value is a new
question.  The file sits beside the YAML parse cache (:func:`relavium_conformance._data.yaml_cache_dir`,
off in an installed kit and with ``RELAVIUM_CONFORMANCE_YAML_CACHE=0``).  Any problem with it (missing,
unreadable, corrupt, read-only folder) means judging afresh: never an error, never another verdict.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["forget", "memo_path", "recall", "remember"]

_FORMAT = 1
_LIMIT = 8192  # verdicts one process adds; the file keeps at most this many
_MEMO_FILE = "shape-verdicts.json"
_MAX_FILE = 16 << 20  # 8192 verdicts take about 2 MB: anything larger is not a memo of ours


class _State:
    loaded = False
    fingerprint = ""
    known: dict[str, str | None] = {}
    learned: dict[str, str | None] = {}
    hooked = False
    path: Path | None = None


def memo_path() -> Path | None:
    from relavium_conformance._data import yaml_cache_dir

    folder = yaml_cache_dir()
    return None if folder is None else folder.parent / _MEMO_FILE


def _judge_fingerprint() -> str:
    """A hash of everything a verdict rests on besides the question itself."""
    from importlib.metadata import version

    from relavium_conformance._data import schemas_dir

    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"shape-memo {_FORMAT}|jsonschema {version('jsonschema')}|".encode())
    digest.update(f"referencing {version('referencing')}|".encode())
    digest.update((Path(__file__).resolve().parent / "model.py").read_bytes())
    root = schemas_dir()
    for path in sorted(root.rglob("*.schema.json")):
        digest.update(b"\0" + path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _question(name: str, key: str) -> str:
    return hashlib.blake2b(f"{name}\0{key}".encode(), digest_size=16).hexdigest()


def _load() -> None:
    _State.loaded = True
    _State.known = {}
    _State.learned = {}
    _State.path = path = memo_path()
    if path is None:
        return
    import json

    from relavium_conformance._data import read_regular_file

    try:
        _State.fingerprint = _judge_fingerprint()
        # a FIFO, a device, a link or an endless file in its place is no memo: never a wait or a huge read
        stored = json.loads(read_regular_file(str(path), _MAX_FILE, follow=False).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested past the parser's depth
        return
    if not isinstance(stored, dict) or stored.get("fingerprint") != _State.fingerprint:
        return
    verdicts = stored.get("verdicts")
    if isinstance(verdicts, dict) and all(v is None or type(v) is str for v in verdicts.values()):
        _State.known = verdicts


def recall(name: str, key: str) -> tuple[bool, str | None]:
    """(True, verdict) when this exact question was judged before by this same judge."""
    if not _State.loaded:
        _load()
    question = _question(name, key)
    if question in _State.known:
        return True, _State.known[question]
    return False, None


def remember(name: str, key: str, problem: str | None) -> None:
    """Keep a fresh verdict; the file is written once, when the process ends."""
    if not _State.loaded:
        _load()
    if _State.path is None or not _State.fingerprint or len(_State.learned) >= _LIMIT:
        return  # (a long fuzz run asks endless new questions: the memo keeps the first ones only)
    _State.learned[_question(name, key)] = problem
    if not _State.hooked:
        import atexit

        _State.hooked = True
        atexit.register(_save)


def _save() -> None:
    path = _State.path
    if not _State.learned or path is None:
        return
    import contextlib
    import json
    import os
    import tempfile

    verdicts: dict[str, Any] = {**_State.known, **_State.learned}
    if len(verdicts) > _LIMIT:
        verdicts = dict(_State.learned)  # the newest questions win
    text = json.dumps({"fingerprint": _State.fingerprint, "verdicts": verdicts})  # ASCII: always encodes
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a full disk leaves no half-written file behind
        return
    _State.known, _State.learned = verdicts, {}


def forget() -> None:
    """Read the file afresh at the next question (tests, or after pointing the cache elsewhere)."""
    _State.loaded = False
    _State.path = None
    _State.fingerprint = ""
    _State.known = {}
    _State.learned = {}
