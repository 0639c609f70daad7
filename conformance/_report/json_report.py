"""The JSON results document: validated against ``schemas/results.schema.json`` before it is written."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitError
from relavium_conformance._report.atomic import write_text_atomically
from relavium_conformance._report.results import RunResult

if TYPE_CHECKING:  # (imported when a results document is written: a run without --json needs none)
    from jsonschema import Draft202012Validator

__all__ = ["read_json", "results_document", "results_validator", "write_json"]


@cache
def results_validator() -> Draft202012Validator:
    """A validator for ``schemas/results.schema.json`` (formats checked)."""
    from jsonschema import Draft202012Validator

    schema = json.loads((schemas_dir() / "results.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def results_document(run: RunResult) -> dict[str, Any]:
    """The JSON-ready results document, validated against its schema.

    Raises :class:`KitError` if the document does not match the schema (a defect of the kit).
    """
    from jsonschema.exceptions import best_match

    document: dict[str, Any] = run.model_dump(mode="json")
    error = best_match(results_validator().iter_errors(document))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise KitError(f"results document does not match results.schema.json at {where}: {error.message}")
    return document


def write_json(run: RunResult, path: Path) -> None:
    """Write ``results.json`` (validated first; nothing is written if validation fails): strict JSON
    (no NaN or infinities, no lone surrogates), written atomically."""
    text = json.dumps(results_document(run), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomically(path, text)


def read_json(path: Path) -> RunResult:
    """Read a results document written by :func:`write_json`."""
    return RunResult.model_validate_json(path.read_text(encoding="utf-8"))
