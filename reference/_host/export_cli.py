"""``relavium-conformance export``: write a persisted session's workflow scaffold to a file.

::

    relavium-conformance export --db PATH SESSION_ID [--out FILE] [--force] [--json]

The session and its transcript are read from the ``history.db`` at ``PATH`` in one read transaction;
the database is never written (KD-EXP-8).  The default file is ``<SESSION_ID>.relavium.yaml`` in the
current directory (the session id, not the workflow id, names it).  An existing file is left
untouched unless ``--force`` is given.  After a successful write the fixed review notice goes to
stderr, in every output mode; ``--json`` prints ``{"workflowPath", "workflowId"}`` on stdout.

Exit codes: 0 written; 1 the database or the session could not be read; 2 usage error, or the
output file exists and ``--force`` was not given, or it could not be written.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from relavium_reference._host.history_store import HistoryStore, StoreError
from relavium_reference._model.errors import RelaviumError
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules.export_mapping import session_to_workflow
from relavium_reference._rules.workflow_yaml import dump_yaml

__all__ = [
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_UNREADABLE",
    "EXPORT_FILE_MODE",
    "REVIEW_NOTICE",
    "register",
    "run_export",
]

EXIT_OK = 0
EXIT_UNREADABLE = 1
EXIT_REFUSED = 2

#: The fixed continuity and review notice (KD-EXP-8), written to stderr after every successful export.
REVIEW_NOTICE = (
    "notice: this file is a scaffold for review, not a replay of the session. It cannot rebuild the\n"
    "session's working context: anything that was summarised, trimmed or left out may be missing, and\n"
    "no raw tool arguments or tool results were kept to restore. Before you run or commit it, review\n"
    "the user and assistant text it keeps (including @ attachments, ! command output and the agent's\n"
    "own literals): nothing in it has been redacted. The captured agent snapshot is historical and may\n"
    "need edits before the workflow passes current validation.\n"
)

_SUFFIX = ".relavium.yaml"


def register(subparsers: Any) -> None:
    """Add the ``export`` sub-command to the ``relavium-conformance`` command line."""
    parser = subparsers.add_parser(
        "export",
        help="export a persisted session from a history.db to a .relavium.yaml workflow scaffold",
        description=(
            "Write a persisted session's workflow scaffold to a file. The session and its transcript are "
            "read from the history.db at --db in one read transaction; the database is never written. "
            "The default file is <SESSION_ID>.relavium.yaml here; an existing file is kept unless --force."
        ),
        epilog="exit codes: 0 written; 1 database or session unreadable; 2 usage error or existing file",
    )
    parser.add_argument("--db", required=True, metavar="PATH", help="the history.db to read")
    parser.add_argument("session_id", metavar="SESSION_ID", help="the session to export")
    parser.add_argument("--out", metavar="FILE", help=f"output file (default: <SESSION_ID>{_SUFFIX})")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument("--json", action="store_true", help="print {workflowPath, workflowId} as JSON")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    return run_export(
        db=Path(args.db),
        session_id=args.session_id,
        out=Path(args.out) if args.out is not None else None,
        force=args.force,
        as_json=args.json,
    )


def _fail(stderr: TextIO, code: int, message: str) -> int:
    stderr.write(f"relavium-conformance export: error: {message}\n")
    return code


def _default_name(session_id: str) -> str | None:
    """``<session id>.relavium.yaml``, or ``None`` when the id cannot safely name a file here."""
    if session_id in {".", ".."} or any(ch in session_id for ch in ("/", "\\", "\x00")):
        return None
    return session_id + _SUFFIX


#: The mode of a written export, on both paths and whatever the umask (KD-EXP-9): it holds the
#: unredacted transcript, so it is private to its owner like the history.db it comes from.
EXPORT_FILE_MODE = 0o600


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data``; fail with ``FileExistsError`` if it exists (no clobbering)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags, EXPORT_FILE_MODE)
    with os.fdopen(descriptor, "wb") as handle:
        os.fchmod(handle.fileno(), EXPORT_FILE_MODE)
        handle.write(data)


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then move it over ``path`` in one step."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), EXPORT_FILE_MODE)
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def run_export(
    *,
    db: Path,
    session_id: str,
    out: Path | None,
    force: bool,
    as_json: bool,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Export ``session_id`` from ``db`` to ``out``; return the exit code (see the module docstring)."""
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    if out is None:
        name = _default_name(session_id)
        if name is None:
            return _fail(stderr, EXIT_REFUSED, "this session id cannot name a file; give --out")
        out = Path(name)
    if not db.is_file():
        return _fail(stderr, EXIT_UNREADABLE, f"no history database at {db}")
    if out.exists() and not force:
        return _fail(stderr, EXIT_REFUSED, f"{out} exists; use --force to overwrite it")
    try:
        with HistoryStore.open_readonly(db) as store:
            record, messages = store.load_full(session_id)
        document = session_to_workflow(record, messages)
    except StoreError as exc:
        if exc.code == "not_history":
            message = f"{db} is not a history.db (it has no session tables); it was not changed"
            return _fail(stderr, EXIT_UNREADABLE, message)
        if exc.code == "unavailable":
            return _fail(stderr, EXIT_UNREADABLE, f"{db} is not a readable history database")
        return _fail(stderr, EXIT_UNREADABLE, str(exc))
    except sqlite3.Error:
        return _fail(stderr, EXIT_UNREADABLE, f"{db} is not a readable history database")
    except RelaviumError:
        return _fail(stderr, EXIT_UNREADABLE, "the stored session could not be exported")
    data = dump_yaml(document_to_data(document)).encode("utf-8")
    try:
        if force:
            _replace(out, data)
        else:
            _write_new(out, data)
    except FileExistsError:
        return _fail(stderr, EXIT_REFUSED, f"{out} exists; use --force to overwrite it")
    except OSError as exc:
        return _fail(stderr, EXIT_REFUSED, f"cannot write {out}: {exc.strerror or 'error'}")
    path = out.resolve()
    workflow_id = document.workflow.id
    if as_json:
        stdout.write(json.dumps({"workflowPath": str(path), "workflowId": workflow_id}) + "\n")
    else:
        stdout.write(f"wrote {path} (workflow id {workflow_id})\n")
    stderr.write(REVIEW_NOTICE)
    return EXIT_OK
