"""User-command shapes: the classified outcomes of ``runUserCommand`` and the allowlist it checks first."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from relavium_reference._model.shapes import WireModel

__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "CommandAllowlist",
    "CommandCancelled",
    "CommandDenied",
    "CommandFailed",
    "CommandRan",
    "UserCommandOutcome",
]

DEFAULT_OUTPUT_LIMIT = 65_536
"""Bytes of stdout and of stderr kept from a command (KD-CMD-2); the rest is dropped."""


class CommandRan(WireModel):
    outcome: Literal["ran"] = "ran"
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool = False


class CommandDenied(WireModel):
    outcome: Literal["denied"] = "denied"
    allowlist: bool
    message: str


class CommandFailed(WireModel):
    outcome: Literal["failed"] = "failed"
    message: str


class CommandCancelled(WireModel):
    outcome: Literal["cancelled"] = "cancelled"


UserCommandOutcome = Annotated[
    CommandRan | CommandDenied | CommandFailed | CommandCancelled, Field(discriminator="outcome")
]


#: What a glob may match: a bare program name in plain ASCII (KD-CMD-3).  No path separator, no ``.`` or
#: ``..``, no whitespace or control character, no non-ASCII look-alike of ``/`` or of a letter.
_GLOB_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class CommandAllowlist:
    """Exact command names, plus glob patterns that apply only when given (opt-in).

    The rule (KD-CMD-3): a command equal to an entry of ``names`` is allowed, whatever it holds (so an
    absolute path can be allowlisted exactly).  A glob is matched case-sensitively and only against a
    bare program name: a command holding a path separator, or anything but the plain ASCII name
    characters of :data:`_GLOB_NAME`, matches no glob, so ``git*`` never admits
    ``github/../../bin/sh``, ``git `` or a Unicode look-alike.
    """

    names: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()

    def allows(self, command: str) -> bool:
        if command in self.names:
            return True
        if not isinstance(command, str) or not _GLOB_NAME.fullmatch(command):
            return False
        return any(fnmatch.fnmatchcase(command, pattern) for pattern in self.globs)
