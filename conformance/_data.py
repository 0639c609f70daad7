"""Locating the kit's language-neutral data (``fixtures/`` and ``schemas/``).

In a wheel the two folders travel inside the package (``relavium_conformance/fixtures`` and
``relavium_conformance/schemas``).  In a checkout, and in an editable install, they are the
top-level folders of the repository.  One function serves both, preferring the installed data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = ["DataMissingError", "data_root", "fixtures_dir", "schemas_dir"]

_PACKAGE_DIR = Path(__file__).resolve().parent


class DataMissingError(FileNotFoundError):
    """Neither the installed package data nor a checkout folder could be found."""


def data_root(kind: Literal["fixtures", "schemas"]) -> Path:
    installed = _PACKAGE_DIR / kind
    if installed.is_dir() and any(installed.iterdir()):
        return installed
    checkout = _PACKAGE_DIR.parent / kind
    if checkout.is_dir():
        return checkout
    raise DataMissingError(f"the kit's {kind}/ folder is missing (looked in {installed} and {checkout})")


def fixtures_dir() -> Path:
    return data_root("fixtures")


def schemas_dir() -> Path:
    return data_root("schemas")
