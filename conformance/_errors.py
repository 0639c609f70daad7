"""Errors of the kit.  They share the project's one exception root, ``RelaviumError`` (the engine's).

Every public exception class of the kit derives from :class:`KitError`; ``tests/test_exception_root.py``
checks both packages.  The root's branches here:

* :class:`KitUsageError`: the kit was given bad input (a malformed case, catalogue, baseline or option).
* :class:`AdapterError`: an implementation under test misbehaved at the adapter boundary (crash, hang,
  malformed message, protocol mismatch).  The runner turns it into an ``errored`` case and goes on.
* :class:`KitShapeError`: a value does not have the shape the kit expects.

Others live beside the code that raises them, under :class:`KitError` too: ``OperationError`` (an
operation answered with an error, ``_wire/protocol.py``), ``DataMissingError`` (no fixtures or schemas
folder, ``_data.py``; also a ``FileNotFoundError``), the JSON-RPC peer's failures (``_wire/envelope.py``).

May import: no other room of the kit (it is the lowest; tests/test_layering.py holds the order);
from the engine only the public exception root.
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
