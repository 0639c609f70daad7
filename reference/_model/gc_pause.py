"""Pause the cyclic garbage collector while a bulk conversion builds many acyclic objects.

An export or a full load of a long session creates hundreds of thousands of small objects (models,
dicts, strings) that form no reference cycles; reference counting frees them.  While they are built,
every few hundred allocations make the collector run, and its older generations walk every live
object (the whole transcript already built), so the work grows with the square of the session's size.
Pausing the collector for the conversion removes that cost and changes no result: collection is only
deferred, and it runs again at the next allocation threshold once the conversion returns.

Nested or concurrent uses are safe: only the call that found the collector enabled enables it again.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["gc_paused"]

P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(function: Callable[P, R]) -> Callable[P, R]:
    """Run ``function`` with the cyclic collector paused (see the module docstring)."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        enabled = gc.isenabled()
        if enabled:
            gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return wrapper
