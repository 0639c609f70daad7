"""Locating the kit's language-neutral data (``fixtures/`` and ``schemas/``).

In a wheel the two folders travel inside the package (``relavium_conformance/fixtures`` and
``relavium_conformance/schemas``).  In a checkout, and in an editable install, they are the
top-level folders of the repository.  One function serves both, preferring the installed data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

__all__ = ["DataMissingError", "data_root", "fixtures_dir", "parse_yaml", "read_yaml", "schemas_dir"]

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


def parse_yaml(text: str) -> Any:
    """Parse YAML text with the kit's one parser: ruamel's pure-Python safe loader, always.

    (Without ``pure=True`` ruamel switches to its C extension when installed, which reads some of our
    fixtures differently.)  Raises whatever the parser raises; :func:`read_yaml` wraps it for files.
    """
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def read_yaml(path: Path, what: str = "file") -> Any:
    """Read a YAML file of the kit's, or raise a usage error naming the file (never a traceback)."""
    from relavium_conformance._errors import KitUsageError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KitUsageError(f"{path}: the {what} cannot be read ({type(exc).__name__})") from None
    try:
        return parse_yaml(text)
    except Exception as exc:
        raise KitUsageError(f"{path}: not readable YAML ({type(exc).__name__})") from None
