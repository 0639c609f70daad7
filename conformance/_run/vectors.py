"""Running the vector suites: the pure functions' language-neutral vectors, as conformance cases.

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

The formats and their strict loading are :mod:`relavium_conformance._corpus.vectors`.

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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from relavium_conformance._corpus.checks import epoch_ms, resume_state_problem
from relavium_conformance._corpus.vectors import (
    SUITES,
    ExportVector,
    ReconstructVector,
    StoredColumnsVector,
    StoredRowVector,
    Vector,
    VectorCase,
    WorkflowIdVector,
)
from relavium_conformance._errors import AdapterError, KitShapeError
from relavium_conformance._judge.export_text import (
    expands_too_far,
    read_yaml_text,
    text_property_differences,
)
from relavium_conformance._judge.matching import jsonable, match, text_difference
from relavium_conformance._judge.workflow import workflow_refusal
from relavium_conformance._report.results import CaseResult, CaseStatus, Difference, one_line
from relavium_conformance._wire.model import kit_parse, shape_problem
from relavium_conformance._wire.protocol import OperationError
from relavium_conformance._wire.protocol_messages import (
    ExportWorkflowResult,
    HelloResult,
    ReadStoredRowResult,
    StoredRowColumns,
)

if TYPE_CHECKING:
    from relavium_conformance._wire.adapters import Adapter

__all__ = ["exact_differences", "execute_vector_case"]

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
    shape = shape_problem("session-resume-state", answer)
    if shape is not None:
        return [Difference(path=path, message=f"not a SessionResumeState: {shape}", actual=jsonable(answer))]
    out = exact_differences(vector.expected, answer, path)
    problem = resume_state_problem(answer)
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
    """The YAML text is read back strictly into the expected document and has the text properties.

    The text is compared as data, never byte for byte: any writer whose text reads back as the document,
    with sorted keys and the YAML 1.1 look-alikes quoted, passes (KD-EXP-6); determinism is checked by
    exporting twice.  ``expected_yaml`` is the reference writer's text, compared as the data it holds.
    """
    path = f"{vector.name}.yaml"
    out: list[Difference] = []
    # An alias bomb's data would be spelt out whole in the differences: it is not compared, it fails.
    too_far = expands_too_far(text)
    unspelt = Difference(path=path, message="the YAML text's aliases spell out too far to compare its data")
    if vector.expected_yaml is not None:
        if too_far:
            out.append(unspelt)
        else:
            out += exact_differences(read_yaml_text(vector.expected_yaml), _read(text), f"{path}(as data)")
    refusal = workflow_refusal(text)
    if vector.expected_parse_error is not None:
        if refusal is None:
            out.append(
                Difference(
                    path=path,
                    message="the strict workflow reader accepts this text",
                    expected="invalid_input",
                )
            )
        if too_far:
            return [*out, unspelt] if vector.expected_yaml is None else out
        try:
            out += exact_differences(vector.expected_document, read_yaml_text(text), f"{path}(read back)")
        except Exception as exc:  # the parser raises many unrelated types for bad input
            out.append(Difference(path=path, message=f"the YAML text is not readable: {exc}"))
        return out
    if refusal is not None:
        message = f"the strict workflow reader refuses the text: {refusal}"
        return [*out, Difference(path=path, message=message)]
    out += exact_differences(vector.expected_document, read_yaml_text(text), f"{path}(read back)")
    out += text_property_differences(text, path)
    return out


def _read(text: str) -> Any:
    try:
        return read_yaml_text(text)
    except Exception:  # unreadable text differs from any document; the read-back check says why
        return None


async def _check_export(call: Call, vector: ExportVector) -> list[Difference]:
    params = {"record": vector.record, "messages": list(vector.messages)}
    method = SUITES["export"].operation
    answer, error = await _answer(call, method, params)
    if vector.expected_error is not None:
        return _refusal_differences(error, vector.name)
    if error is not None:
        return _unexpected_refusal(error, vector.name)
    try:
        result = kit_parse(ExportWorkflowResult, answer)
    except KitShapeError as exc:
        return [
            Difference(
                path=vector.name,
                message=f"not an export answer {{document, yaml}}: {exc}",
                actual=jsonable(answer),
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
        kit_parse(StoredRowColumns, answer)
    except KitShapeError as exc:
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
    return CaseResult.of(case, status, duration_ms=(time.perf_counter() - started) * 1000, **fields)


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
