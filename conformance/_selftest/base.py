"""The shape of a deliberately broken implementation, and the decorator that registers one.

A break is defined once, in the module of its first clause's area under
:mod:`relavium_conformance._selftest.breaks`, and registered where it is defined by :func:`break_of`:
its name, a one-line summary of the rule it breaks and the clause ids whose cases must catch it.
:mod:`relavium_conformance._selftest.breaks` imports every area module and reads the registry back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from relavium_conformance._errors import KitError
from relavium_conformance._reference.impl import REFERENCE_PURE, PureFunctions, ReferenceImplementation
from relavium_conformance._wire.protocol import Callback
from relavium_reference import AgentSession, TurnPolicy

__all__ = ["BrokenImplementation", "break_of", "registered_breaks", "run_command_approved", "where_defined"]

_Target = TypeVar("_Target")


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


_REGISTERED: dict[str, BrokenImplementation] = {}
_DEFINED_IN: dict[str, str] = {}  # break name -> the module its decorated definition lives in


def _broken(
    name: str, summary: str, clauses: tuple[str, ...], made: Any, replaces: str | None
) -> BrokenImplementation:
    if replaces is not None:
        if not hasattr(REFERENCE_PURE, replaces):
            raise KitError(f"break {name}: the reference has no pure function {replaces!r}")
        return BrokenImplementation(name, summary, clauses, pure=replace(REFERENCE_PURE, **{replaces: made}))
    if isinstance(made, type) and issubclass(made, AgentSession):
        return BrokenImplementation(name, summary, clauses, session=made)
    if isinstance(made, type) and issubclass(made, ReferenceImplementation):
        return BrokenImplementation(name, summary, clauses, implementation=made)
    raise KitError(f"break {name}: {made!r} is neither a session nor an implementation class")


def break_of(
    *,
    name: str,
    summary: str,
    clauses: tuple[str, ...],
    replaces: str | None = None,
    through: Callable[[Any], Any] | None = None,
) -> Callable[[_Target], _Target]:
    """Register the decorated definition as the broken implementation ``name`` and return it unchanged.

    The definition (passed through ``through`` first, when given) is one of: a subclass of
    ``AgentSession`` (the session the reference serves), a subclass of ``ReferenceImplementation`` (the
    whole served implementation), or, with ``replaces``, the function that takes the place of the
    reference's pure function of that name.  Raises :class:`KitError` for a name registered twice or a
    definition of none of these kinds."""

    def register(target: _Target) -> _Target:
        if name in _REGISTERED:
            raise KitError(f"break {name} is registered twice")
        made = target if through is None else through(target)
        _REGISTERED[name] = _broken(name, summary, clauses, made, replaces)
        _DEFINED_IN[name] = getattr(target, "__module__", "")
        return target

    return register


def registered_breaks() -> tuple[BrokenImplementation, ...]:
    """Every break registered so far, in the order of registration."""
    return tuple(_REGISTERED.values())


def where_defined() -> dict[str, str]:
    """Break name -> the module its registered definition lives in."""
    return dict(_DEFINED_IN)
