"""How the command line picks cases: ``--select`` patterns, each of which must match something.

Shared by ``run`` for both profiles (the agent-session corpus and the store cases), so it sits below both
sub-command modules."""

from __future__ import annotations

import argparse
from typing import TypeVar

from relavium_conformance._cli._common import suggest
from relavium_conformance._corpus.index import Selectable, select_cases
from relavium_conformance._errors import KitUsageError

__all__ = ["select_or_refuse"]

S = TypeVar("S", bound=Selectable)


def select_or_refuse(args: argparse.Namespace, all_cases: tuple[S, ...]) -> tuple[S, ...]:
    """The selected cases; a ``--select`` pattern that matches no case is a usage error (a mistyped
    pattern beside a good one would otherwise quietly test less), naming the closest case or area."""
    unmatched = [pattern for pattern in args.select if not select_cases(all_cases, [pattern])]
    if unmatched:
        ids = [case.id for case in all_cases] + sorted({case.area for case in all_cases})
        raise KitUsageError(
            "; ".join(f"--select {pattern!r} matches no case{suggest(pattern, ids)}" for pattern in unmatched)
        )
    return select_cases(all_cases, args.select)
