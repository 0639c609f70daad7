"""relavium_conformance: the conformance kit for the Relavium Agent Session Specification."""

from __future__ import annotations

from ._data import DataMissingError, fixtures_dir, schemas_dir

__all__ = ["DataMissingError", "fixtures_dir", "schemas_dir"]
