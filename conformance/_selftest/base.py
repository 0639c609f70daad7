"""The shape of a deliberately broken implementation (see ``_broken.py`` for the catalogue of them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relavium_conformance._reference.impl import REFERENCE_PURE, PureFunctions, ReferenceImplementation
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession

__all__ = ["BrokenImplementation"]


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
