"""Vector suites: the formats and the loading of the pure functions' language-neutral vectors.

Every file under ``fixtures/vectors/<suite>/`` is one case, id ``vectors/<suite>/<file stem>``; a suite
names the operation it calls, and its capability is that operation's row in the method table.  List
files stay plain lists; their titles and clauses come from ``fixtures/vectors/suites.yaml``, one entry
per file.  Loading is strict and judged by the kit alone (its models and the shipped schemas): an
unknown key, a vector whose input breaks its schema, a list file with no entry (or an entry with no
file) and a suite with no vector are all usage errors.  Running them is
:mod:`relavium_conformance._run.vectors`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from relavium_conformance._corpus.catalogue import CLAUSE_ID_PATTERN
from relavium_conformance._corpus.checks import canonical_timestamp, epoch_ms, resume_state_problem
from relavium_conformance._data import fixtures_dir, read_yaml
from relavium_conformance._errors import KitShapeError, KitUsageError
from relavium_conformance._wire.model import KitStrict, kit_parse, shape_problem
from relavium_conformance._wire.protocol import OPERATIONS
from relavium_conformance._wire.protocol_messages import StoredMessageRow, StoredRowColumns, StoredRowError

__all__ = [
    "SUITES",
    "VECTOR_AREA",
    "ExportVector",
    "ReconstructVector",
    "StoredColumnsVector",
    "StoredRowVector",
    "Vector",
    "VectorCase",
    "VectorSuite",
    "WorkflowIdVector",
    "load_vector_cases",
    "vectors_dir",
]

VECTOR_AREA = "vectors"
_STEM = r"^[a-z0-9][a-z0-9-]*$"
_ClauseIds = Annotated[tuple[Annotated[str, Field(pattern=CLAUSE_ID_PATTERN)], ...], Field(min_length=1)]
_Error = Literal["invalid_input"]


# --- the vector formats ------------------------------------------------------------------------------


def _shape(name: str, value: Any) -> None:
    problem = shape_problem(name, value)
    if problem is not None:
        raise ValueError(problem)


def _check_session_input(record: Mapping[str, Any], messages: Sequence[Any]) -> None:
    """A vector's input must have the shipped shapes (refusals are for whole sets)."""
    _shape("agent-session-record", dict(record))
    for message in messages:
        _shape("session-message", message)


class ReconstructVector(KitStrict):
    """One reconstructSessionState vector: ``expected`` is the SessionResumeState wire form."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True)

    id: Annotated[str, Field(pattern=r"^reconstruct/[a-z0-9][a-z0-9-]*$")]
    title: Annotated[str, Field(min_length=1)]
    clauses: _ClauseIds
    kit_defined: tuple[str, ...] = Field(default=(), alias="kitDefined")
    notes: str | None = None
    record: dict[str, Any]
    messages: tuple[dict[str, Any], ...]
    expected: dict[str, Any]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    @model_validator(mode="after")
    def _input_is_well_formed(self) -> ReconstructVector:
        _check_session_input(self.record, self.messages)
        problem = resume_state_problem(self.expected)
        if problem is not None:
            raise ValueError(f"expected: {problem}")
        return self


class WorkflowIdVector(KitStrict):
    """One workflow-id vector: the id, or ``expected_error: invalid_input`` for a refused input."""

    name: Annotated[str, Field(pattern=_STEM)]
    title: str | None
    session_id: str
    expected: str | None = None
    expected_error: _Error | None = None
    why: str | None = None

    @model_validator(mode="after")
    def _one_expectation(self) -> WorkflowIdVector:
        if (self.expected is None) == (self.expected_error is None):
            raise ValueError("a vector has exactly one of expected and expected_error")
        return self


class ExportVector(KitStrict):
    """One export vector: the document (and maybe its exact YAML), or a refused input."""

    name: Annotated[str, Field(pattern=_STEM)]
    why: str | None = None
    record: dict[str, Any]
    messages: tuple[dict[str, Any], ...]
    expected_document: dict[str, Any] | None = None
    expected_yaml: str | None = None
    expected_error: _Error | None = None
    expected_parse_error: _Error | None = None

    @model_validator(mode="after")
    def _one_expectation(self) -> ExportVector:
        if (self.expected_document is None) == (self.expected_error is None):
            raise ValueError("a vector has exactly one of expected_document and expected_error")
        if self.expected_error is not None and (self.expected_yaml or self.expected_parse_error):
            raise ValueError("a refused input has no YAML expectation")
        _check_session_input(self.record, self.messages)
        return self


class StoredColumnsVector(KitStrict):
    """One storedRowColumns vector: a message (and maybe a stop reason) to the columns it is stored with.

    ``finish_reason`` is sent as given (a vector may send a refused one); ``expected`` is the answer's
    wire form, every key present.  The message's timestamp is in the store's canonical millisecond form,
    so the row read back holds the very same message.
    """

    name: Annotated[str, Field(pattern=_STEM)]
    why: str | None = None
    message: dict[str, Any]
    finish_reason: str | None = None
    expected: dict[str, Any] | None = None
    expected_error: _Error | None = None

    @model_validator(mode="after")
    def _one_expectation(self) -> StoredColumnsVector:
        if (self.expected is None) == (self.expected_error is None):
            raise ValueError("a vector has exactly one of expected and expected_error")
        _shape("session-message", self.message)
        timestamp = self.message["timestamp"]
        if canonical_timestamp(epoch_ms(timestamp)) != timestamp:
            raise ValueError("the message timestamp must be in the form YYYY-MM-DDTHH:MM:SS.mmmZ")
        if self.expected is not None:
            kit_parse(StoredRowColumns, self.expected)
            if set(self.expected) != set(StoredRowColumns.model_json_schema(by_alias=True)["properties"]):
                raise ValueError("expected names every column")
        return self


class StoredRowVector(KitStrict):
    """One readStoredRow vector: a stored row to the message it holds, or the store's fixed error."""

    name: Annotated[str, Field(pattern=_STEM)]
    why: str | None = None
    row: dict[str, Any]
    expected_message: dict[str, Any] | None = None
    expected_error: StoredRowError | None = None

    @model_validator(mode="after")
    def _one_expectation(self) -> StoredRowVector:
        if (self.expected_message is None) == (self.expected_error is None):
            raise ValueError("a vector has exactly one of expected_message and expected_error")
        kit_parse(StoredMessageRow, self.row)
        if self.expected_message is not None:
            _shape("session-message", self.expected_message)
        return self

    @property
    def expected(self) -> dict[str, Any]:
        if self.expected_message is not None:
            return {"message": self.expected_message}
        return {"error": self.expected_error}


Vector = ReconstructVector | WorkflowIdVector | ExportVector | StoredColumnsVector | StoredRowVector


class _FileEntry(KitStrict):
    title: Annotated[str, Field(min_length=1)]
    clauses: _ClauseIds


@dataclass(frozen=True)
class VectorSuite:
    name: str
    operation: str
    one_per_file: bool  # True: a file is one vector with its own title and clauses

    @property
    def capability(self) -> str:
        return OPERATIONS[self.operation].capability


SUITES: dict[str, VectorSuite] = {
    suite.name: suite
    for suite in (
        VectorSuite("reconstruct", "pure.reconstructSessionState", True),
        VectorSuite("workflow-id", "pure.workflowId", False),
        VectorSuite("export", "pure.exportWorkflow", False),
        VectorSuite("stored-columns", "pure.storedRowColumns", False),
        VectorSuite("stored-rows", "pure.readStoredRow", False),
    )
}

_LIST_MODELS: dict[str, type[KitStrict]] = {
    "workflow-id": WorkflowIdVector,
    "export": ExportVector,
    "stored-columns": StoredColumnsVector,
    "stored-rows": StoredRowVector,
}


@dataclass(frozen=True)
class VectorCase:
    """A vector file run as one conformance case (no steps, no snapshot)."""

    id: str
    title: str
    clauses: tuple[str, ...]
    suite: str
    source: str
    vectors: tuple[Vector, ...]

    @property
    def area(self) -> str:
        return VECTOR_AREA

    @property
    def capabilities(self) -> tuple[str, ...]:
        return (SUITES[self.suite].capability,)


# --- loading -----------------------------------------------------------------------------------------


def vectors_dir() -> Path:
    return fixtures_dir() / "vectors"


def _read(path: Path) -> Any:
    data = read_yaml(path, "vector file")
    # Anchors share objects between vectors; a JSON round trip makes each vector independent data.
    return json.loads(json.dumps(data))


def _parse(model: type[Any], data: Any, where: str) -> Any:
    try:
        return kit_parse(model, data)
    except KitShapeError as exc:
        raise KitUsageError(f"{where}: {exc}") from None


def _manifest(root: Path) -> dict[str, dict[str, _FileEntry]]:
    path = root / "suites.yaml"
    if not path.is_file():
        raise KitUsageError(f"{path}: the vector suite manifest is missing")
    data = _read(path)
    listed = {name for name, suite in SUITES.items() if not suite.one_per_file}
    if not isinstance(data, dict) or set(data) != listed:
        raise KitUsageError(f"{path}: must map exactly the suites {sorted(listed)} to their files")
    out: dict[str, dict[str, _FileEntry]] = {}
    for suite, files in data.items():
        if not isinstance(files, dict):
            raise KitUsageError(f"{path}: {suite} must map file stems to a title and clauses")
        out[suite] = {
            stem: _parse(_FileEntry, entry, f"{path}: {suite}.{stem}") for stem, entry in files.items()
        }
    return out


def _load_file(path: Path, suite: VectorSuite, entry: _FileEntry | None) -> VectorCase:
    case_id = f"{VECTOR_AREA}/{suite.name}/{path.stem}"
    data = _read(path)
    if suite.one_per_file:
        vector: ReconstructVector = _parse(ReconstructVector, data, str(path))
        if vector.name != path.stem:
            raise KitUsageError(f"{path}: id {vector.id!r} must match the file name")
        return VectorCase(case_id, vector.title, vector.clauses, suite.name, str(path), (vector,))
    if entry is None:
        raise KitUsageError(f"{path}: no entry in suites.yaml gives its title and clauses")
    if not isinstance(data, list) or not data:
        raise KitUsageError(f"{path}: a {suite.name} vector file is a non-empty list of vectors")
    model = _LIST_MODELS[suite.name]
    vectors = tuple(_parse(model, item, f"{path}[{index}]") for index, item in enumerate(data))
    names = [v.name for v in vectors]
    if len(set(names)) != len(names):
        raise KitUsageError(f"{path}: vector names repeat")
    return VectorCase(case_id, entry.title, entry.clauses, suite.name, str(path), vectors)


def load_vector_cases() -> tuple[VectorCase, ...]:
    """One case per vector file of every suite, sorted by id.  A suite with no vector is an error."""
    root = vectors_dir()
    manifest = _manifest(root)
    cases: list[VectorCase] = []
    for suite in SUITES.values():
        paths = sorted((root / suite.name).glob("*.yaml"))
        if not paths:
            raise KitUsageError(f"no {suite.name} vectors found under {root / suite.name}")
        entries = manifest.get(suite.name, {})
        unknown = sorted(set(entries) - {p.stem for p in paths})
        if unknown:
            raise KitUsageError(
                f"suites.yaml names {suite.name} files that do not exist: {', '.join(unknown)}"
            )
        cases += [_load_file(path, suite, entries.get(path.stem)) for path in paths]
    return tuple(sorted(cases, key=lambda c: c.id))
