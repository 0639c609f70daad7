"""Vector suites: the pure functions' language-neutral vectors, run as conformance cases.

Every file under ``fixtures/vectors/<suite>/`` is one case, id ``vectors/<suite>/<file stem>``, run
beside the golden transcripts through the same adapter.  A suite names the operation it calls and the
capability it needs (a case whose capability is not declared is ``unsupported``):

==============  ================================  ===========  =========================================
suite           operation                         capability   file
==============  ================================  ===========  =========================================
reconstruct     ``pure.reconstructSessionState``  resume       one vector, with its own title and clauses
workflow-id     ``pure.workflowId``               export       a list of vectors
export          ``pure.exportWorkflow``           export       a list of vectors
stored-columns  ``pure.storedRowColumns``         persistence  a list of vectors
stored-rows     ``pure.readStoredRow``            persistence  a list of vectors
==============  ================================  ===========  =========================================

The list files stay plain lists (their engine tests read them so); their titles and clauses come from
``fixtures/vectors/suites.yaml``, one entry per file.  Loading is strict: an unknown key, a vector whose
input the engine's own models refuse, a list file with no entry (or an entry with no file) and a suite
with no vector are all usage errors.

A vector case passes when every vector in it matches; each difference's path starts with the vector's
name.  What is checked beyond the expected value:

* reconstruct: the answer is a sound ``SessionResumeState`` (``resume_state_problem``), and the rows in
  reverse order give the same state (the rows may come in any order);
* export: the same input gives the same answer twice (determinism); the YAML text is read back by the
  kit's strict workflow reader into the expected document, and writing that document again gives the
  very same text (sorted keys, the kit's serialisation); a vector with ``expected_parse_error`` checks
  instead that the reader refuses the text;
* stored-columns: the row the answer describes (the message's body as ``content_parts``, its columns,
  the JSON values written as JSON text) is read back by ``pure.readStoredRow`` into the same message;
* stored-rows: the answer is exactly ``{message}`` or ``{error: <code>}`` (KD-DB-4).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from ruamel.yaml import YAML

from relavium_conformance._corpus.catalogue import CLAUSE_ID_PATTERN
from relavium_conformance._data import fixtures_dir
from relavium_conformance._errors import AdapterError, KitUsageError
from relavium_conformance._report.results import CaseResult, CaseStatus, Difference, one_line
from relavium_conformance._run.matching import jsonable, match, text_difference
from relavium_conformance._wire.protocol import (
    ExportWorkflowResult,
    HelloResult,
    OperationError,
    ReadStoredRowResult,
    StoredMessageRow,
    StoredRowColumns,
    StoredRowError,
)
from relavium_reference import InvalidInputError
from relavium_reference._host.store import epoch_ms, iso_from_ms
from relavium_reference._model.messages import parse_agent_session_record, parse_session_message
from relavium_reference._model.shapes import StrictModel, parse_strict
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules.resume import SessionResumeState, resume_state_problem
from relavium_reference._rules.workflow_yaml import load_yaml
from relavium_reference.export import parse_workflow, serialize_workflow

if TYPE_CHECKING:
    from relavium_conformance._wire.adapters import Adapter

__all__ = [
    "SUITES",
    "ExportVector",
    "ReconstructVector",
    "StoredColumnsVector",
    "StoredRowVector",
    "VectorCase",
    "VectorSuite",
    "WorkflowIdVector",
    "exact_differences",
    "execute_vector_case",
    "load_vector_cases",
    "vectors_dir",
]

VECTOR_AREA = "vectors"
_STEM = r"^[a-z0-9][a-z0-9-]*$"
_ClauseIds = Annotated[tuple[Annotated[str, Field(pattern=CLAUSE_ID_PATTERN)], ...], Field(min_length=1)]
_Error = Literal["invalid_input"]


# --- the vector formats ------------------------------------------------------------------------------


def _check_session_input(record: Mapping[str, Any], messages: Sequence[Any]) -> None:
    """A vector's input must be what the engine's own models accept (refusals are for whole sets)."""
    parse_agent_session_record(dict(record))
    for message in messages:
        parse_session_message(message)


class ReconstructVector(StrictModel):
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
        SessionResumeState.model_validate(self.expected)
        return self


class WorkflowIdVector(StrictModel):
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


class ExportVector(StrictModel):
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


class StoredColumnsVector(StrictModel):
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
        message = parse_session_message(self.message)
        if iso_from_ms(epoch_ms(message.timestamp)) != message.timestamp:
            raise ValueError("the message timestamp must be in the form YYYY-MM-DDTHH:MM:SS.mmmZ")
        if self.expected is not None:
            parse_strict(StoredRowColumns, self.expected)
            if set(self.expected) != set(StoredRowColumns.model_json_schema(by_alias=True)["properties"]):
                raise ValueError("expected names every column")
        return self


class StoredRowVector(StrictModel):
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
        parse_strict(StoredMessageRow, self.row)
        if self.expected_message is not None:
            parse_session_message(self.expected_message)
        return self

    @property
    def expected(self) -> dict[str, Any]:
        if self.expected_message is not None:
            return {"message": self.expected_message}
        return {"error": self.expected_error}


Vector = ReconstructVector | WorkflowIdVector | ExportVector | StoredColumnsVector | StoredRowVector


class _FileEntry(StrictModel):
    title: Annotated[str, Field(min_length=1)]
    clauses: _ClauseIds


@dataclass(frozen=True)
class VectorSuite:
    name: str
    operation: str
    capability: str
    one_per_file: bool  # True: a file is one vector with its own title and clauses


SUITES: dict[str, VectorSuite] = {
    suite.name: suite
    for suite in (
        VectorSuite("reconstruct", "pure.reconstructSessionState", "resume", True),
        VectorSuite("workflow-id", "pure.workflowId", "export", False),
        VectorSuite("export", "pure.exportWorkflow", "export", False),
        VectorSuite("stored-columns", "pure.storedRowColumns", "persistence", False),
        VectorSuite("stored-rows", "pure.readStoredRow", "persistence", False),
    )
}

_LIST_MODELS: dict[str, type[StrictModel]] = {
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
    try:
        data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    except Exception as exc:  # ruamel raises many unrelated types for bad input
        raise KitUsageError(f"{path}: not readable YAML ({type(exc).__name__})") from None
    # Anchors share objects between vectors; a JSON round trip makes each vector independent data.
    return json.loads(json.dumps(data))


def _parse(model: type[Any], data: Any, where: str) -> Any:
    try:
        return parse_strict(model, data)
    except InvalidInputError as exc:
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


# --- comparing ---------------------------------------------------------------------------------------


def exact_differences(expected: Any, actual: Any, path: str) -> list[Difference]:
    """Every place ``actual`` is not exactly ``expected`` (JSON data: no extra key, no missing key)."""
    return match(expected, actual, path, exact=True)


def _text_difference(expected: str, actual: str, path: str, message: str) -> list[Difference]:
    """Two texts that should be equal: both whole, with a unified diff (see ``matching.text_difference``)."""
    return [] if expected == actual else [text_difference(expected, actual, path, message)]


# --- executing ---------------------------------------------------------------------------------------

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def _answer(call: Call, method: str, params: dict[str, Any]) -> tuple[Any, OperationError | None]:
    try:
        return await call(method, params), None
    except OperationError as error:
        return None, error


def _refusal_differences(error: OperationError | None, path: str) -> list[Difference]:
    if error is None:
        return [Difference(path=path, message="expected an invalid_input refusal", expected="invalid_input")]
    if error.kind != "invalid_input":
        return [
            Difference(
                path=path,
                message=f"refused, but not as invalid_input: {error}",
                expected="invalid_input",
                actual=error.kind,
            )
        ]
    return []


def _unexpected_refusal(error: OperationError, path: str) -> list[Difference]:
    return [
        Difference(
            path=path,
            message=f"unexpected refusal: {error}",
            expected="a result",
            actual=error.to_observation(),
        )
    ]


async def _check_reconstruct(call: Call, vector: ReconstructVector) -> list[Difference]:
    path = vector.name
    method = SUITES["reconstruct"].operation
    answer, error = await _answer(call, method, {"record": vector.record, "messages": list(vector.messages)})
    if error is not None:
        return _unexpected_refusal(error, path)
    try:
        state = parse_strict(SessionResumeState, answer)
    except InvalidInputError as exc:
        return [Difference(path=path, message=f"not a SessionResumeState: {exc}", actual=jsonable(answer))]
    out = exact_differences(vector.expected, state.to_wire(), path)
    problem = resume_state_problem(state)
    if problem is not None:
        out.append(Difference(path=path, message=f"an unsound resume state: {problem}"))
    again, error = await _answer(
        call, method, {"record": vector.record, "messages": list(reversed(vector.messages))}
    )
    if error is not None:
        out += _unexpected_refusal(error, f"{path}(rows reversed)")
    elif again != answer:
        out.append(
            Difference(
                path=f"{path}(rows reversed)",
                message="the same rows in another order give another state",
                expected=jsonable(answer),
                actual=jsonable(again),
            )
        )
    return out


async def _check_workflow_id(call: Call, vector: WorkflowIdVector) -> list[Difference]:
    answer, error = await _answer(
        call, SUITES["workflow-id"].operation, {"title": vector.title, "sessionId": vector.session_id}
    )
    if vector.expected_error is not None:
        return _refusal_differences(error, vector.name)
    if error is not None:
        return _unexpected_refusal(error, vector.name)
    got = answer.get("workflowId") if isinstance(answer, dict) else answer
    return exact_differences(vector.expected, got, f"{vector.name}.workflowId")


def _yaml_differences(vector: ExportVector, text: str) -> list[Difference]:
    """The YAML text is read back strictly into the expected document and is the kit's serialisation."""
    path = f"{vector.name}.yaml"
    out: list[Difference] = []
    if vector.expected_yaml is not None:
        out += _text_difference(vector.expected_yaml, text, path, "not the expected YAML text")
    if vector.expected_parse_error is not None:
        try:
            parse_workflow(text)
        except InvalidInputError:
            pass
        else:
            out.append(
                Difference(
                    path=path,
                    message="the strict workflow reader accepts this text",
                    expected="invalid_input",
                )
            )
        try:
            out += exact_differences(vector.expected_document, load_yaml(text), f"{path}(read back)")
        except InvalidInputError as exc:
            out.append(Difference(path=path, message=f"the YAML text is not readable: {exc}"))
        return out
    try:
        document = parse_workflow(text)
    except InvalidInputError as exc:
        return [*out, Difference(path=path, message=f"the strict workflow reader refuses the text: {exc}")]
    out += exact_differences(vector.expected_document, document_to_data(document), f"{path}(read back)")
    out += _text_difference(
        serialize_workflow(document),
        text,
        path,
        "writing the document again gives other text (sorted keys, KD-EXP-6)",
    )
    return out


async def _check_export(call: Call, vector: ExportVector) -> list[Difference]:
    params = {"record": vector.record, "messages": list(vector.messages)}
    method = SUITES["export"].operation
    answer, error = await _answer(call, method, params)
    if vector.expected_error is not None:
        return _refusal_differences(error, vector.name)
    if error is not None:
        return _unexpected_refusal(error, vector.name)
    try:
        result = parse_strict(ExportWorkflowResult, answer)
    except InvalidInputError as exc:
        return [
            Difference(
                path=vector.name,
                message=f"not an export answer {{document, yaml}}: {exc}",
                actual=answer,
            )
        ]
    out = exact_differences(vector.expected_document, result.document, f"{vector.name}.document")
    out += _yaml_differences(vector, result.yaml)
    again, error = await _answer(call, method, params)
    if error is not None:
        out += _unexpected_refusal(error, f"{vector.name}(second call)")
    elif again != answer:
        out.append(
            Difference(path=f"{vector.name}(second call)", message="the same input gives another answer")
        )
    return out


_READ_RESULT: TypeAdapter[Any] = TypeAdapter(ReadStoredRowResult)


def _read_answer_problem(answer: Any) -> str | None:
    try:
        _READ_RESULT.validate_python(answer)
    except ValidationError as exc:
        return f"not a readStoredRow answer {{message}} or {{error}} ({exc.error_count()} problems)"
    return None


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _row_from_columns(message: dict[str, Any], columns: dict[str, Any]) -> dict[str, Any]:
    """The ``session_messages`` row that stores ``message`` with ``columns`` (JSON values as JSON text)."""
    compaction = message.get("compaction")
    boundary = None if compaction is None else compaction["droppedThroughSequence"]
    return {
        "id": message["id"],
        "session_id": message["sessionId"],
        "sequence_number": message["sequenceNumber"],
        "role": message["role"],
        "content": columns["content"],
        "content_parts": _json_text(message["content"]),
        "tool_calls": None if columns["toolCalls"] is None else _json_text(columns["toolCalls"]),
        "tool_call_id": columns["toolCallId"],
        "name": columns["name"],
        "finish_reason": columns["finishReason"],
        "model_id": message.get("modelId"),
        "compaction_dropped_through_sequence": boundary,
        "created_at": epoch_ms(message["timestamp"]),
    }


async def _check_stored_columns(call: Call, vector: StoredColumnsVector) -> list[Difference]:
    params: dict[str, Any] = {"message": vector.message}
    if vector.finish_reason is not None:
        params["finishReason"] = vector.finish_reason
    answer, error = await _answer(call, SUITES["stored-columns"].operation, params)
    if vector.expected_error is not None:
        return _refusal_differences(error, vector.name)
    if error is not None:
        return _unexpected_refusal(error, vector.name)
    try:
        parse_strict(StoredRowColumns, answer)
    except InvalidInputError as exc:
        return [Difference(path=vector.name, message=f"not a columns answer: {exc}", actual=jsonable(answer))]
    out = exact_differences(vector.expected, answer, f"{vector.name}.columns")
    if out:
        return out
    path = f"{vector.name}(read back)"
    row = _row_from_columns(vector.message, answer)
    again, error = await _answer(call, SUITES["stored-rows"].operation, {"row": row})
    if error is not None:
        return _unexpected_refusal(error, path)
    return exact_differences({"message": vector.message}, again, path)


async def _check_stored_row(call: Call, vector: StoredRowVector) -> list[Difference]:
    answer, error = await _answer(call, SUITES["stored-rows"].operation, {"row": vector.row})
    if error is not None:
        return _unexpected_refusal(error, vector.name)
    problem = _read_answer_problem(answer)
    if problem is not None:
        return [Difference(path=vector.name, message=problem, actual=jsonable(answer))]
    return exact_differences(vector.expected, answer, vector.name)


async def _check(call: Call, vector: Vector) -> list[Difference]:
    if isinstance(vector, ReconstructVector):
        return await _check_reconstruct(call, vector)
    if isinstance(vector, WorkflowIdVector):
        return await _check_workflow_id(call, vector)
    if isinstance(vector, StoredColumnsVector):
        return await _check_stored_columns(call, vector)
    if isinstance(vector, StoredRowVector):
        return await _check_stored_row(call, vector)
    return await _check_export(call, vector)


def _result(case: VectorCase, status: CaseStatus, started: float, **fields: Any) -> CaseResult:
    return CaseResult(
        id=case.id,
        title=case.title,
        area=case.area,
        clauses=case.clauses,
        status=status,
        duration_ms=(time.perf_counter() - started) * 1000,
        **fields,
    )


async def execute_vector_case(
    case: VectorCase, adapter: Adapter, hello: HelloResult, *, timeout: float = 15.0
) -> CaseResult:
    """Run every vector of ``case`` through ``adapter``; the case passes when all of them match."""
    started = time.perf_counter()
    missing = sorted(set(case.capabilities) - set(hello.capabilities))
    if missing:
        reason = f"needs undeclared capability {', '.join(missing)}"
        return _result(case, CaseStatus.UNSUPPORTED, started, reason=reason)

    async def call(method: str, params: dict[str, Any]) -> Any:
        return await adapter.call(method, params, timeout=timeout)

    differences: list[Difference] = []
    differing: list[str] = []
    try:
        for vector in case.vectors:
            found = await _check(call, vector)
            if found:
                differing.append(vector.name)
                differences += found
    except AdapterError as exc:
        tail = adapter.stderr_tail()
        with contextlib.suppress(Exception):  # a restart that keeps failing shows in the next case
            await adapter.recover()
        stderr = "\n".join(tail[-20:]) if tail else None
        return _result(case, CaseStatus.ERRORED, started, reason=one_line(exc.reason), stderr_tail=stderr)
    if not differences:
        return _result(case, CaseStatus.PASSED, started)
    first = differences[0]
    reason = f"{len(differing)} of {len(case.vectors)} vectors differ ({', '.join(differing)}); "
    return _result(
        case,
        CaseStatus.FAILED,
        started,
        reason=one_line(reason + f"{first.path}: {first.message}"),
        differences=tuple(differences),
    )
