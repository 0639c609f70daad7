"""User-invoked shell commands (``!cmd``): allowlist, approval, a real subprocess with no shell.

The caller has already split the line into a command and its arguments.  The command must be on
the allowlist (exact names, or opt-in glob patterns) before approval is even asked; the process is
spawned from the argument vector (never through a shell); its output is bounded; every outcome is
classified and no raw exception escapes.  Nothing of this reaches the model's transcript.

Each command runs in a process group of its own (a new session, POSIX).  Cancelling ends the whole
group at once with ``SIGKILL``, so a shell's background children go with it and the ``cancelled``
outcome does not wait for them; when the command itself exits, whatever it left running in its group
is ended too (KD-CMD-4).  A descendant that starts a session of its own has left the group and is not
reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from relavium_reference._model.commands import (
    DEFAULT_OUTPUT_LIMIT,
    CommandAllowlist,
    CommandCancelled,
    CommandDenied,
    CommandFailed,
    CommandRan,
)
from relavium_reference._model.tools import ApprovalRequest, TurnPolicy

__all__ = ["run_command"]

_MSG_ALLOWLIST = "the command is not on the session's allowlist"
_MSG_REFUSED = "the command was not approved"
_MSG_NOT_STARTED = "the command could not be started"
_MSG_FAILED = "the command failed while running"
_MSG_LATCHED = "the session refuses further commands after a failed persist"


async def run_command(
    command: str,
    args: Sequence[str],
    *,
    allowlist: CommandAllowlist,
    policy: TurnPolicy,
    cwd: str | None,
    call_id: str,
    latched: bool = False,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
) -> CommandRan | CommandDenied | CommandFailed | CommandCancelled:
    """Check, approve, spawn and classify. Task cancellation kills the process and yields ``cancelled``."""
    if not allowlist.allows(command):
        return CommandDenied(allowlist=True, message=_MSG_ALLOWLIST)
    preview = {"command": " ".join([command, *args])}
    request = ApprovalRequest(tool_id="run_command", action="process", preview=preview, call_id=call_id)
    try:
        approved = await policy.approves(request)
    except asyncio.CancelledError:
        return CommandCancelled()
    except Exception:
        approved = False
    if not approved:
        return CommandDenied(allowlist=False, message=_MSG_REFUSED)
    if latched:  # checked immediately before the spawn
        return CommandFailed(message=_MSG_LATCHED)
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            command,
            *args,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=_POSIX,  # its own process group, ended whole on cancel
        )
    )
    try:
        process = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # The process may already run although its pipes are not wired yet: end it before answering.
        with contextlib.suppress(BaseException):
            await _kill(await spawn)
        return CommandCancelled()
    except (OSError, ValueError):
        return CommandFailed(message=_MSG_NOT_STARTED)
    try:
        stdout, stderr, truncated = await _collect(process, output_limit)
    except asyncio.CancelledError:
        await _kill(process)
        return CommandCancelled()
    except Exception:
        await _kill(process)
        return CommandFailed(message=_MSG_FAILED)
    return CommandRan(
        exit_code=process.returncode if process.returncode is not None else -1,
        stdout=stdout.decode("utf-8", errors="replace"),
        stderr=stderr.decode("utf-8", errors="replace"),
        truncated=truncated,
    )


_POSIX = sys.platform != "win32"


async def _collect(process: asyncio.subprocess.Process, limit: int) -> tuple[bytes, bytes, bool]:
    assert process.stdout is not None
    assert process.stderr is not None
    reading = asyncio.gather(_read_bounded(process.stdout, limit), _read_bounded(process.stderr, limit))
    try:
        await process.wait()
        # The command is done; what it left in its group (holding the pipes open or not) goes with it.
        _end_group(process)
        await _group_gone(process.pid)
        (out, cut_out), (err, cut_err) = await reading
    except BaseException:
        reading.cancel()
        with contextlib.suppress(BaseException):
            await reading
        raise
    return out, err, cut_out or cut_err


async def _read_bounded(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, bool]:
    kept = bytearray()
    truncated = False
    while chunk := await stream.read(65_536):
        room = limit - len(kept)
        if len(chunk) > room:
            truncated = True
        kept += chunk[: max(room, 0)]
    return bytes(kept), truncated


def _end_group(process: asyncio.subprocess.Process) -> None:
    """``SIGKILL`` to every process of the command's group (the group id is the leader's pid)."""
    if _POSIX:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


#: How long a cancel waits for the killed group to be gone before it answers anyway (KD-CMD-4).
GROUP_END_WAIT = 1.0
_PROC = Path("/proc")


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` still runs (zombies, which a non-reaping init may keep, do not)."""
    if _PROC.is_dir():
        for entry in _PROC.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _kill(process: asyncio.subprocess.Process) -> None:
    """End the command's whole group, reap the leader, and wait (bounded) until no member runs."""
    _end_group(process)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    with contextlib.suppress(Exception):
        await asyncio.shield(process.wait())
    await _group_gone(process.pid)


async def _group_gone(group: int) -> None:
    """Wait, at most :data:`GROUP_END_WAIT` seconds, until no process of a killed group runs."""
    if not _POSIX:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GROUP_END_WAIT
    while loop.time() < deadline and await asyncio.to_thread(_group_alive, group):
        await asyncio.sleep(0.005)
