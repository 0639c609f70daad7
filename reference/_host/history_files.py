"""The files of ``history.db``: private modes on create and on open, and the per-session writer leases.

:func:`prepare_file` creates the directory (0700) and the database file (0600) before SQLite touches them,
and tightens an existing database and its side files (KD-DB-1, KD-DB-8).  :class:`WriterLeases` holds one
store's writer leases (KD-DB-9).  :mod:`relavium_reference._host.history_store` uses both.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

from relavium_reference._rules.history_rows import StoreError

__all__ = ["WriterLeases", "prepare_file"]

_SIDE_FILES = ("-wal", "-shm", "-journal")


def prepare_file(path: Path) -> None:
    """Create the directory (0700) and the file (0600) before SQLite does; tighten an existing file.

    An existing ``history.db`` and its ``-wal``, ``-shm`` and ``-journal`` files are made 0600 before
    SQLite opens them (SQLite gives new side files the database file's mode), so a database left at
    0644 is private again from its first open on (KD-DB-8).  An existing directory is left as it is: it
    may be a directory the user chose and shares.  A file that cannot be tightened (another owner) is
    refused with ``StoreError("permissions")``.
    """
    directory = path.parent
    try:
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True)
            os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            descriptor = os.open(path, flags, 0o600)
        except FileExistsError:
            _tighten(path)
            return
        try:
            os.fchmod(descriptor, 0o600)
        finally:
            os.close(descriptor)
    except StoreError:
        raise
    except OSError:
        raise StoreError("unavailable") from None


def _tighten(path: Path) -> None:
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in _SIDE_FILES)):
        try:
            mode = candidate.stat().st_mode
        except FileNotFoundError:
            continue
        if stat.S_IMODE(mode) & 0o077:
            try:
                os.chmod(candidate, stat.S_IMODE(mode) & 0o700)
            except PermissionError:
                raise StoreError("permissions") from None


try:  # POSIX advisory locks; without them the writer lease is not enforced (KD-DB-9)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class WriterLeases:
    """One store's writer leases: an exclusive ``flock`` per session, on a file beside the database.

    The lock files live in ``<database>-leases/`` (0700), one per session (0600, named by the SHA-256 of
    the session id, never holding it).  A ``flock`` belongs to one open file, so a second store (in this
    process or another) cannot take a lease this one holds, and the operating system releases it when
    the process ends, however it ends: a crashed writer leaves no stale lease.
    """

    def __init__(self, database: Path) -> None:
        self._directory = database.with_name(database.name + "-leases")
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def ensure(self, session_id: str) -> None:
        """Hold the lease of ``session_id`` (idempotent); ``StoreError("writer_busy")`` if another does."""
        with self._lock:
            if session_id in self._held or fcntl is None:
                return
            name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
            try:
                if not self._directory.exists():
                    self._directory.mkdir(mode=0o700, exist_ok=True)
                    os.chmod(self._directory, 0o700)
                flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
                descriptor = os.open(self._directory / name, flags, 0o600)
            except OSError:
                raise StoreError("unavailable") from None
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                raise StoreError("writer_busy") from None
            self._held[session_id] = descriptor

    def release(self, session_id: str) -> None:
        with self._lock:
            descriptor = self._held.pop(session_id, None)
            if descriptor is not None:
                os.close(descriptor)  # closing the only descriptor drops the flock

    def release_all(self) -> None:
        with self._lock:
            held, self._held = self._held, {}
            for descriptor in held.values():
                os.close(descriptor)
