"""Writing a report file atomically: a reader sees the old file or the whole new one, never a part.

The text goes to a temporary file in the same folder (made first when missing), is flushed to disk, and
is moved over the target in one ``os.replace``; on any failure the temporary file is removed and the
target is untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_bytes_atomically", "write_text_atomically"]


def write_bytes_atomically(path: Path, data: bytes) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)  # a report path in a folder not made yet (out/results.json)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):  # keep the permissions an existing file had
            os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 (a lone surrogate is an error here: sanitise first)."""
    write_bytes_atomically(path, text.encode("utf-8"))
