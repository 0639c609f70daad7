"""The kit's version, looked up in one place (the installed distribution's metadata)."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "kit_version"]

DISTRIBUTION = "relavium-conformance"
CHECKOUT_VERSION = "0+checkout"
"""What a source tree that was never installed reports."""


@cache
def kit_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return CHECKOUT_VERSION
