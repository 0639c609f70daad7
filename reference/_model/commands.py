"""User-command shapes: the classified outcomes of ``runUserCommand`` and the allowlist it checks first."""

from __future__ import annotations

import fnmatch
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


@dataclass(frozen=True)
class CommandAllowlist:
    """Exact command names, plus glob patterns that apply only when given (opt-in)."""

    names: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()

    def allows(self, command: str) -> bool:
        if command in self.names:
            return True
        return any(fnmatch.fnmatchcase(command, pattern) for pattern in self.globs)
