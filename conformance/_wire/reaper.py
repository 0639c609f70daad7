"""Finding and ending what an implementation left behind: processes outside its process group.

Stopping a child signals its whole process group, but a process that called ``setsid`` (or
``setpgid``) has left the group and would survive, holding our pipes.  Two ways find it on Linux:

* its **ancestry**: every process whose parent chain leads to the child, read from ``/proc`` while the
  child still runs (once the child is gone its orphans belong to init and the chain is lost);
* its **mark**: the kit starts each child with an environment variable naming that child
  (:data:`MARK_VARIABLE`); descendants inherit it, so even an orphan is found by it.

Where there is no ``/proc`` (macOS, Windows) both find nothing, and the group kill is what remains.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path
from typing import Final

__all__ = ["MARK_VARIABLE", "alive", "descendants", "end_leftovers", "marked", "new_mark"]

#: The environment variable the kit sets on every implementation it starts.
MARK_VARIABLE: Final = "RELAVIUM_CONFORMANCE_CHILD"

_PROC: Final = Path("/proc")


def new_mark() -> str:
    """A value of :data:`MARK_VARIABLE` naming one spawn."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:16]}"


def _pids() -> list[int]:
    try:
        return [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or ``None`` when it is gone or unreadable."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    if len(fields) < 2:
        return None
    return fields[0], int(fields[1])


def descendants(pid: int) -> set[int]:
    """Every live process whose parent chain leads to ``pid`` (``pid`` itself excluded)."""
    children: dict[int, list[int]] = {}
    for candidate in _pids():
        info = _stat(candidate)
        if info is not None:
            children.setdefault(info[1], []).append(candidate)
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def marked(mark: str) -> set[int]:
    """Every live process (of ours) whose environment carries ``MARK_VARIABLE=mark``."""
    needle = f"{MARK_VARIABLE}={mark}".encode()
    found: set[int] = set()
    for candidate in _pids():
        try:
            environ = (_PROC / str(candidate) / "environ").read_bytes()
        except OSError:
            continue  # another user's process, or gone
        if needle in environ.split(b"\0"):
            found.add(candidate)
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count: it is only waiting to be reaped)."""
    info = _stat(pid)
    if info is not None:
        return info[0] != "Z"
    if _PROC.is_dir():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_leftovers(pids: set[int]) -> list[int]:
    """SIGKILL each live process of ``pids`` (and the group it leads, never the kit's own); return
    the ones that were still running, sorted."""
    own_group = os.getpgrp() if hasattr(os, "getpgrp") else None
    ended: list[int] = []
    for pid in sorted(pids):
        if pid == os.getpid() or not alive(pid):
            continue
        ended.append(pid)
        with contextlib.suppress(OSError):
            if hasattr(os, "getpgid") and os.getpgid(pid) == pid and pid != own_group:
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return ended
