"""Errors of the kit.  They share the project's one exception root, ``RelaviumError``.

* :class:`KitUsageError`: the kit was given bad input (a malformed case, catalogue, baseline or option).
* :class:`AdapterError`: an implementation under test misbehaved at the adapter boundary (crash, hang,
  malformed message, protocol mismatch).  The runner turns it into an ``errored`` case and goes on.
"""

from __future__ import annotations

from relavium_reference import RelaviumError

__all__ = ["AdapterError", "KitError", "KitUsageError"]


class KitError(RelaviumError):
    """Root of the kit's own errors."""


class KitUsageError(KitError):
    """The kit was given bad input: a malformed case, catalogue, baseline file or option."""


class AdapterError(KitError):
    """The implementation under test broke the adapter contract; ``reason`` says how, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
