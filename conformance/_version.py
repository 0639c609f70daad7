"""The kit's own version, as installed (``0+checkout`` when run from a checkout without metadata)."""

from __future__ import annotations

__all__ = ["kit_version"]


def kit_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("relavium-conformance")
    except PackageNotFoundError:
        return "0+checkout"
