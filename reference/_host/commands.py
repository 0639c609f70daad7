"""User-invoked shell commands (``!cmd``): allowlist, approval, a real subprocess with no shell.

The caller has already split the line into a command and its arguments.  The command must be on
the allowlist (exact names, or opt-in glob patterns) before approval is even asked; the process is
spawned from the argument vector (never through a shell); its output is bounded; every outcome is
classified and no raw exception escapes.  Nothing of this reaches the model's transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

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
    try:
        process = await asyncio.create_subprocess_exec(
            command,
            *args,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except asyncio.CancelledError:
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


async def _collect(process: asyncio.subprocess.Process, limit: int) -> tuple[bytes, bytes, bool]:
    assert process.stdout is not None
    assert process.stderr is not None
    (out, cut_out), (err, cut_err) = await asyncio.gather(
        _read_bounded(process.stdout, limit), _read_bounded(process.stderr, limit)
    )
    await process.wait()
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


async def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    with contextlib.suppress(Exception):
        await asyncio.shield(process.wait())
