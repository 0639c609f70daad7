"""The store's row validation through the kit: pure.storedRowColumns, pure.readStoredRow, their vectors.

The ``stored-columns`` and ``stored-rows`` suites run as conformance cases over both transports; a wrong
expectation fails naming its vector; each broken store fails exactly the rows whose defect it ignores;
the append-only transcript catches an engine that writes persisted exchanges again after a resume.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import typing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._corpus.vectors import (
    StoredColumnsVector,
    StoredRowVector,
    VectorCase,
    load_vector_cases,
    vectors_dir,
)
from relavium_conformance._errors import KitUsageError
from relavium_conformance._reference.impl import REFERENCE_PURE, ReferenceImplementation
from relavium_conformance._report.results import CaseResult, CaseStatus
from relavium_conformance._run.runner import RunOutcome, run_cases_sync
from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS, broken_by_name
from relavium_conformance._selftest.proofs import check_broken
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance._wire.protocol import OPERATIONS, OperationError
from relavium_conformance._wire.protocol_messages import StoredRowError
from relavium_conformance._wire.protocol_validation import ProtocolValidator
from relavium_reference._model.messages import SessionMessage

_SUITES = ("stored-columns", "stored-rows")
_COLUMN_CODES = {
    "text_mismatch",
    "tool_calls_mismatch",
    "tool_call_id_mismatch",
    "name_mismatch",
    "finish_reason_invalid",
}


def _cases(suite: str | None = None) -> tuple[VectorCase, ...]:
    return tuple(c for c in load_vector_cases() if c.suite in ((suite,) if suite else _SUITES))


def _row_vectors() -> list[StoredRowVector]:
    return [v for case in _cases("stored-rows") for v in case.vectors if isinstance(v, StoredRowVector)]


def _column_vectors() -> list[StoredColumnsVector]:
    return [
        v for case in _cases("stored-columns") for v in case.vectors if isinstance(v, StoredColumnsVector)
    ]


def _differing(result: CaseResult, names: set[str]) -> set[str]:
    """The vector names the differences of ``result`` start with."""
    out: set[str] = set()
    for difference in result.differences:
        out |= {n for n in names if re.match(rf"{re.escape(n)}($|[.(\[:])", difference.path)}
    return out


@pytest.fixture(scope="module")
def both_runs() -> tuple[RunOutcome, RunOutcome]:
    cases = _cases()
    return (
        run_cases_sync(resolve_adapter("reference"), cases),
        run_cases_sync(resolve_adapter("reference-stdio", validate=ProtocolValidator()), cases),
    )


# --- the corpus ----------------------------------------------------------------------------------------


def test_both_suites_are_persistence_cases_selectable_by_their_clauses() -> None:
    cases = _cases()
    assert {c.suite for c in cases} == set(_SUITES)
    assert all(c.capabilities == ("persistence",) for c in cases)
    corpus = load_cases()
    for clause in ("AS-VAL-005", "AS-VAL-006", "AS-VAL-007", "AS-VAL-008", "AS-VAL-009", "AS-VAL-010"):
        assert any(isinstance(c, VectorCase) for c in select_cases(corpus, [clause])), clause
    assert {c.id for c in select_cases(corpus, ["AS-VAL-011"])} >= {
        "vectors/stored-rows/malformed",
        "vectors/stored-rows/text-projection",
    }
    assert [c.id for c in select_cases(corpus, ["AS-MSG-002"])] == ["persistence/rows-are-append-only"]


def test_every_fixed_row_error_has_a_tampered_row() -> None:
    codes = {v.expected_error for v in _row_vectors() if v.expected_error is not None}
    assert codes == set(typing.get_args(StoredRowError))


def test_the_sound_rows_cover_every_role_and_every_stored_finish_reason() -> None:
    [sound] = [c for c in _cases("stored-rows") if c.id.endswith("/sound")]
    rows = [v.row for v in sound.vectors if isinstance(v, StoredRowVector) and v.expected_message]
    assert len(rows) == len(sound.vectors)
    assert {r["role"] for r in rows} == {"user", "assistant", "tool", "system"}
    assert {r["finish_reason"] for r in rows if r["role"] == "assistant"} == {
        "stop",
        "length",
        "content_filter",
        "tool_use",
    }
    assert any(r["compaction_dropped_through_sequence"] is not None for r in rows if r["role"] == "system")
    assert any(r["content"] and r["tool_calls"] for r in rows), "a call row with preamble text"


def test_vector_names_are_unique_within_each_suite() -> None:
    for vectors in (_row_vectors(), _column_vectors()):
        names = [v.name for v in vectors]
        assert len(names) == len(set(names))


# --- the reference over both transports -------------------------------------------------------------


def test_every_store_vector_case_passes_in_process(both_runs: tuple[RunOutcome, RunOutcome]) -> None:
    in_process, _ = both_runs
    assert [(c.id, c.reason) for c in in_process.run.cases if c.status is not CaseStatus.PASSED] == []
    assert len(in_process.run.cases) == len(_cases())


def test_every_store_vector_case_passes_over_stdio_with_validated_messages(
    both_runs: tuple[RunOutcome, RunOutcome],
) -> None:
    _, over_stdio = both_runs
    assert [(c.id, c.reason) for c in over_stdio.run.cases if c.status is not CaseStatus.PASSED] == []
    assert over_stdio.run.implementation.adapter == "stdio"  # the transport


def test_the_two_operations_are_in_the_message_set() -> None:
    assert {"pure.storedRowColumns", "pure.readStoredRow"} <= set(OPERATIONS)


def _call(method: str, params: dict[str, Any]) -> Any:
    async def scenario() -> Any:
        adapter = resolve_adapter("reference-stdio")

        async def no_callbacks(name: str, _params: dict[str, Any]) -> Any:
            raise AssertionError(f"a pure operation called back: {name}")

        await adapter.open(no_callbacks)
        try:
            return await adapter.call(method, params)
        finally:
            await adapter.close()

    return asyncio.run(scenario())


def test_a_row_with_an_extra_column_is_invalid_input_not_a_store_error() -> None:
    row = {**_row_vectors()[0].row, "input_tokens": 3}
    with pytest.raises(OperationError) as refused:
        _call("pure.readStoredRow", {"row": row})
    assert refused.value.kind == "invalid_input"


def test_a_refused_row_answers_its_code_as_a_result_over_stdio() -> None:
    vector = next(v for v in _row_vectors() if v.expected_error == "malformed_json")
    assert _call("pure.readStoredRow", {"row": vector.row}) == {"error": "malformed_json"}


# --- tampering: a wrong expectation fails and the difference names the vector ---------------------------


def _with_first(case: VectorCase, vector: StoredColumnsVector | StoredRowVector) -> VectorCase:
    return replace(case, vectors=(vector, *case.vectors[1:]))


def test_a_tampered_columns_vector_fails_naming_it() -> None:
    case = next(c for c in _cases("stored-columns") if c.id.endswith("/roles"))
    first = case.vectors[0]
    assert isinstance(first, StoredColumnsVector)
    assert first.expected is not None
    tampered = first.model_copy(update={"expected": {**first.expected, "finishReason": "stop"}})
    [result] = run_cases_sync(resolve_adapter("reference"), [_with_first(case, tampered)]).run.cases
    assert result.status is CaseStatus.FAILED
    assert [d.path for d in result.differences] == [f"{first.name}.columns.finishReason"]
    assert f"1 of {len(case.vectors)} vectors differ ({first.name})" in (result.reason or "")


def test_a_tampered_row_vector_fails_naming_it() -> None:
    case = next(c for c in _cases("stored-rows") if c.id.endswith("/tool-columns"))
    first = case.vectors[0]
    assert isinstance(first, StoredRowVector)
    assert first.expected_error == "tool_calls_mismatch"
    tampered = first.model_copy(update={"expected_error": "name_mismatch"})
    [result] = run_cases_sync(resolve_adapter("reference"), [_with_first(case, tampered)]).run.cases
    assert result.status is CaseStatus.FAILED
    assert result.differences
    assert all(d.path.startswith(first.name) for d in result.differences)
    assert first.name in (result.reason or "")


def _implementation_reading(read: Any) -> InProcessAdapter:
    pure = replace(REFERENCE_PURE, read_stored_row=read)
    return InProcessAdapter("altered", lambda callback: ReferenceImplementation(callback, pure=pure))


def test_columns_that_do_not_read_back_into_the_message_fail_the_columns_case() -> None:
    def forgets_the_model(row: Any) -> SessionMessage:
        return REFERENCE_PURE.read_stored_row(row).model_copy(update={"model_id": None})

    case = next(c for c in _cases("stored-columns") if c.id.endswith("/roles"))
    [result] = run_cases_sync(_implementation_reading(forgets_the_model), [case]).run.cases
    assert result.status is CaseStatus.FAILED
    with_model = {
        v.name for v in case.vectors if isinstance(v, StoredColumnsVector) and "modelId" in v.message
    }
    assert with_model
    assert _differing(result, {v.name for v in case.vectors}) == with_model
    assert all("(read back)" in d.path for d in result.differences)


def test_an_answer_that_is_neither_message_nor_error_fails_naming_the_vector() -> None:
    def says_yes(_row: Any) -> Any:
        return {"ok": True}

    class Raw(ReferenceImplementation):
        async def on_pure_read_stored_row(self, params: Any) -> Any:
            return says_yes(params)

    case = next(c for c in _cases("stored-rows") if c.id.endswith("/sound"))
    adapter = InProcessAdapter("raw", lambda callback: Raw(callback))
    [result] = run_cases_sync(adapter, [case]).run.cases
    assert result.status is CaseStatus.FAILED
    assert "not a readStoredRow answer" in result.differences[0].message
    assert result.differences[0].path == case.vectors[0].name


# --- broken stores: each fails exactly the rows whose defect it ignores ------------------------------


def _expected_to_differ(name: str) -> set[str]:
    vectors = _row_vectors()
    if name == "store-trusts-text-column":
        return {v.name for v in vectors if v.expected_error == "text_mismatch"}
    if name == "store-allows-finish-reason-anywhere":
        return {v.name for v in vectors if v.expected_error == "finish_reason_invalid"}
    assert name == "store-skips-column-checks"
    ignored = {v.name for v in vectors if v.expected_error in _COLUMN_CODES}
    # the tool_calls column is no longer parsed at all, so its malformed JSON goes unnoticed too
    return ignored | {"tool-calls-column-is-not-json", "tool-calls-column-with-a-duplicate-key"}


STORE_BREAKS = tuple(
    broken_by_name(name)
    for name in (
        "store-skips-column-checks",
        "store-trusts-text-column",
        "store-allows-finish-reason-anywhere",
        "store-writes-empty-tool-calls",
        "resume-rewrites-history",
    )
)
_ROW_BREAKS = [b for b in STORE_BREAKS if b.pure.read_stored_row is not REFERENCE_PURE.read_stored_row]


@pytest.mark.parametrize("broken", _ROW_BREAKS, ids=lambda b: b.name)
def test_each_broken_store_fails_exactly_the_rows_whose_defect_it_ignores(
    broken: BrokenImplementation,
) -> None:
    adapter = InProcessAdapter(broken.name, broken.factory())
    results = run_cases_sync(adapter, _cases("stored-rows")).run.cases
    names = {v.name for v in _row_vectors()}
    differing: set[str] = set()
    for result in results:
        differing |= _differing(result, names)
    assert differing == _expected_to_differ(broken.name)


def test_the_store_breaks_are_in_the_registry() -> None:
    names = {b.name for b in BROKEN_IMPLEMENTATIONS}
    assert {b.name for b in STORE_BREAKS} <= names
    assert {b.name for b in STORE_BREAKS} == {
        "store-skips-column-checks",
        "store-trusts-text-column",
        "store-allows-finish-reason-anywhere",
        "store-writes-empty-tool-calls",
        "resume-rewrites-history",
    }


def test_a_store_writing_an_empty_tool_calls_array_fails_every_row_without_calls() -> None:
    [broken] = [b for b in STORE_BREAKS if b.name == "store-writes-empty-tool-calls"]
    results = run_cases_sync(
        InProcessAdapter(broken.name, broken.factory()), _cases("stored-columns")
    ).run.cases
    vectors = _column_vectors()
    differing: set[str] = set()
    for result in results:
        differing |= _differing(result, {v.name for v in vectors})
        assert all(d.path.endswith(".columns.toolCalls") for d in result.differences)
    without_calls = {v.name for v in vectors if v.expected is not None and v.expected["toolCalls"] is None}
    assert without_calls
    assert differing == without_calls


@pytest.mark.parametrize("broken", STORE_BREAKS, ids=lambda b: b.name)
def test_selftest_catches_each_store_break(broken: BrokenImplementation) -> None:
    corpus = load_cases()
    citing = [c for c in corpus if set(c.clauses) & set(broken.clauses)]
    reference = run_cases_sync(resolve_adapter("reference"), citing, snapshots=False).run
    verdict = asyncio.run(check_broken(broken, corpus, reference, 10.0))
    assert verdict.caught, verdict.explanation


def test_rewriting_history_after_resume_fails_the_append_only_transcript_on_its_rows() -> None:
    [broken] = [b for b in STORE_BREAKS if b.name == "resume-rewrites-history"]
    [case] = select_cases(load_cases(), ["persistence/rows-are-append-only"])
    [result] = run_cases_sync(InProcessAdapter(broken.name, broken.factory()), [case]).run.cases
    assert result.status is CaseStatus.FAILED
    paths = [d.path for d in result.differences]
    assert any(p.startswith("rows") for p in paths)
    assert any(p.startswith("commits") for p in paths)


# --- strict loading ------------------------------------------------------------------------------------


@pytest.fixture
def vector_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "vectors"
    shutil.copytree(vectors_dir(), root)
    monkeypatch.setattr("relavium_conformance._corpus.vectors.vectors_dir", lambda: root)
    return root


def _rewrite(path: Path, change: Any) -> None:
    from ruamel.yaml import YAML

    data = json.loads(json.dumps(YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML


def test_a_row_vector_with_both_expectations_is_a_usage_error(vector_copy: Path) -> None:
    def both(data: list[dict[str, Any]]) -> None:
        data[0]["expected_error"] = "text_mismatch"

    _rewrite(vector_copy / "stored-rows" / "sound.yaml", both)
    with pytest.raises(KitUsageError, match=r"sound\.yaml\[0\]"):
        load_vector_cases()


def test_a_row_vector_with_an_unknown_error_code_is_a_usage_error(vector_copy: Path) -> None:
    def unknown(data: list[dict[str, Any]]) -> None:
        data[0]["expected_error"] = "sequence_gap"

    _rewrite(vector_copy / "stored-rows" / "finish-reason.yaml", unknown)
    with pytest.raises(KitUsageError, match=r"finish-reason\.yaml\[0\]"):
        load_vector_cases()


def test_a_row_vector_missing_a_column_is_a_usage_error(vector_copy: Path) -> None:
    def missing(data: list[dict[str, Any]]) -> None:
        del data[0]["row"]["finish_reason"]

    _rewrite(vector_copy / "stored-rows" / "sound.yaml", missing)
    with pytest.raises(KitUsageError, match=r"sound\.yaml\[0\]"):
        load_vector_cases()


def test_a_columns_vector_that_leaves_out_a_column_is_a_usage_error(vector_copy: Path) -> None:
    def partial(data: list[dict[str, Any]]) -> None:
        del data[0]["expected"]["name"]

    _rewrite(vector_copy / "stored-columns" / "roles.yaml", partial)
    with pytest.raises(KitUsageError, match=r"roles\.yaml\[0\]"):
        load_vector_cases()


def test_a_columns_vector_with_a_timestamp_the_row_cannot_hold_is_a_usage_error(vector_copy: Path) -> None:
    def microseconds(data: list[dict[str, Any]]) -> None:
        data[0]["message"]["timestamp"] = "2026-01-01T00:00:00.123456Z"

    _rewrite(vector_copy / "stored-columns" / "roles.yaml", microseconds)
    with pytest.raises(KitUsageError, match=r"roles\.yaml\[0\]"):
        load_vector_cases()


def test_a_stored_rows_file_without_a_manifest_entry_is_a_usage_error(vector_copy: Path) -> None:
    shutil.copy(vector_copy / "stored-rows" / "sound.yaml", vector_copy / "stored-rows" / "extra.yaml")
    with pytest.raises(KitUsageError, match=r"no entry in suites\.yaml"):
        load_vector_cases()
