"""The shape of a deliberately broken implementation (see ``_broken.py`` for the catalogue of them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from relavium_conformance._reference.impl import REFERENCE_PURE, PureFunctions, ReferenceImplementation
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession, TurnPolicy

__all__ = ["BrokenImplementation", "run_command_approved"]


async def run_command_approved(session: AgentSession, command: str, args: Sequence[str]) -> Any:
    """Run a user command on ``session`` as if the host had approved it, whatever its turn policy says:
    the shared core of the breaks that let a command run without (or against) an approval."""

    async def yes(_request: Any) -> bool:
        return True

    kept = session._policy
    session._policy = TurnPolicy(advertise=kept.advertise, confirm=yes)
    try:
        return await AgentSession.run_user_command(session, command, args)
    finally:
        session._policy = kept


@dataclass(frozen=True)
class BrokenImplementation:
    name: str
    rule: str  # the rule it breaks, in one line
    clauses: tuple[str, ...]  # the clauses whose cases must catch it
    session: type[AgentSession] = AgentSession
    pure: PureFunctions = REFERENCE_PURE
    implementation: type[ReferenceImplementation] = ReferenceImplementation

    def factory(self) -> Callable[[Callback], ReferenceImplementation]:
        def make(callback: Callback) -> ReferenceImplementation:
            return self.implementation(
                callback, session_factory=self.session, name=f"broken:{self.name}", pure=self.pure
            )

        return make
