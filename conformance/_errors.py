"""Errors of the kit.  They share the project's one exception root, ``RelaviumError``.

* :class:`KitUsageError`: the kit was given bad input (a malformed case, catalogue, baseline or option).
* :class:`AdapterError`: an implementation under test misbehaved at the adapter boundary (crash, hang,
  malformed message, protocol mismatch).  The runner turns it into an ``errored`` case and goes on.
"""

from __future__ import annotations

from relavium_reference import RelaviumError

__all__ = ["AdapterError", "KitError", "KitShapeError", "KitUsageError"]


class KitError(RelaviumError):
    """Root of the kit's own errors."""


class KitUsageError(KitError):
    """The kit was given bad input: a malformed case, catalogue, baseline file or option."""


class AdapterError(KitError):
    """The implementation under test broke the adapter contract; ``reason`` says how, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class KitShapeError(KitError):
    """A value does not have the shape the kit expects; ``location`` names the field, never the value."""

    def __init__(self, message: str, *, location: str = "") -> None:
        super().__init__(f"{location}: {message}" if location else message)
        self.message = message
        self.location = location
