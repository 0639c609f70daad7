"""Vector suites as conformance cases: discovery, strict loading, both transports, tampering, the protocol."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._corpus.vectors import (
    SUITES,
    ExportVector,
    ReconstructVector,
    StoredColumnsVector,
    StoredRowVector,
    VectorCase,
    WorkflowIdVector,
    load_vector_cases,
    vectors_dir,
)
from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitUsageError
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import RunOutcome, run_cases_sync
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance._wire.protocol import OPERATIONS, protocol_schemas
from relavium_conformance._wire.protocol_messages import HelloResult
from relavium_reference._schemas import render


def _vector_cases() -> tuple[VectorCase, ...]:
    return load_vector_cases()


@pytest.fixture(scope="module")
def both_runs() -> tuple[RunOutcome, RunOutcome]:
    cases = _vector_cases()
    return (
        run_cases_sync(resolve_adapter("reference"), cases),
        run_cases_sync(resolve_adapter("reference-stdio"), cases),
    )


# --- discovery -----------------------------------------------------------------------------------------


def test_every_vector_file_of_every_suite_is_one_case() -> None:
    cases = _vector_cases()
    for suite in SUITES:
        stems = sorted(p.stem for p in (vectors_dir() / suite).glob("*.yaml"))
        assert stems, suite
        assert [c.id for c in cases if c.suite == suite] == [f"vectors/{suite}/{stem}" for stem in stems]
    assert all(c.clauses and c.title for c in cases)


def test_vector_cases_are_part_of_the_corpus_and_selectable() -> None:
    cases = load_cases()
    vector_ids = {c.id for c in _vector_cases()}
    assert vector_ids <= {c.id for c in cases}
    assert {c.id for c in select_cases(cases, ["vectors/*"])} == vector_ids
    exports = select_cases(cases, ["vectors/export"])
    assert exports
    assert all(isinstance(c, VectorCase) and c.suite == "export" for c in exports)
    assert "vectors/workflow-id/unicode" in {c.id for c in select_cases(cases, ["AS-EXP-033"])}


def test_vector_cases_need_the_capability_of_their_suite() -> None:
    capabilities = {c.suite: c.capabilities for c in _vector_cases()}
    assert capabilities == {
        "reconstruct": ("resume",),
        "workflow-id": ("export",),
        "export": ("export",),
        "stored-columns": ("persistence",),
        "stored-rows": ("persistence",),
    }


def test_list_command_shows_the_vector_cases() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "relavium_conformance", "run", "--list", "--select", "vectors/*"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "vectors/workflow-id/unicode  [AS-EXP-032, AS-EXP-033]" in result.stdout.splitlines()
    assert len(result.stdout.splitlines()) == len(_vector_cases())


def test_regen_snapshots_writes_nothing_for_vector_cases() -> None:
    from relavium_conformance._cli.snapshots import regenerate

    assert regenerate(["vectors/*"]) == ([], [], [])
    assert not list(vectors_dir().rglob("*.snapshot.json"))


def test_the_pytest_plugin_reports_a_vector_case_verdict() -> None:
    from relavium_conformance.pytest_plugin import assert_case_passes, case_verdict

    verdict = case_verdict("reference", "vectors/workflow-id/unicode")
    assert getattr(verdict, "status", None) is CaseStatus.PASSED
    assert_case_passes("reference", "vectors/reconstruct/later-marker-wins")


# --- the reference over both transports -------------------------------------------------------------


def test_every_vector_case_passes_in_process(both_runs: tuple[RunOutcome, RunOutcome]) -> None:
    in_process, _ = both_runs
    assert [(c.id, c.reason) for c in in_process.run.cases if c.status is not CaseStatus.PASSED] == []
    assert len(in_process.run.cases) == len(_vector_cases())


def test_stdio_gives_every_vector_case_the_same_status(both_runs: tuple[RunOutcome, RunOutcome]) -> None:
    in_process, over_stdio = both_runs
    assert {c.id: c.status for c in over_stdio.run.cases} == {c.id: c.status for c in in_process.run.cases}
    assert over_stdio.run.implementation.adapter == "stdio"  # the transport
    assert over_stdio.snapshots == {}  # a vector case has no snapshot


def test_vector_cases_are_unsupported_without_their_capability() -> None:
    def core_only(callback: Any) -> ReferenceImplementation:
        return ReferenceImplementation(callback, capabilities=("core",))

    outcome = run_cases_sync(InProcessAdapter("core-only", core_only), _vector_cases()[:2])
    assert {c.status for c in outcome.run.cases} == {CaseStatus.UNSUPPORTED}
    assert all("needs undeclared capability" in (c.reason or "") for c in outcome.run.cases)


# --- tampering: a wrong expectation fails and the difference names the vector ---------------------------


def _tampered(suite: str) -> tuple[VectorCase, str]:
    case = next(c for c in _vector_cases() if c.suite == suite)
    first = case.vectors[0]
    changed: ReconstructVector | WorkflowIdVector | ExportVector | StoredColumnsVector | StoredRowVector
    if isinstance(first, StoredColumnsVector | StoredRowVector):
        changed = _tampered_store_vector(first)
    elif isinstance(first, ReconstructVector):
        changed = first.model_copy(update={"expected": {**first.expected, "turnCount": 99}})
    elif isinstance(first, WorkflowIdVector):
        changed = first.model_copy(update={"expected": "not-the-id", "expected_error": None})
    else:
        assert first.expected_document is not None
        document = json.loads(json.dumps(first.expected_document))
        document["workflow"]["id"] = "not-the-id"
        changed = first.model_copy(update={"expected_document": document})
    vectors = (changed, *case.vectors[1:])
    return VectorCase(case.id, case.title, case.clauses, case.suite, case.source, vectors), first.name


def _tampered_store_vector(
    vector: StoredColumnsVector | StoredRowVector,
) -> StoredColumnsVector | StoredRowVector:
    if isinstance(vector, StoredColumnsVector):
        assert vector.expected is not None
        return vector.model_copy(update={"expected": {**vector.expected, "content": "not the text"}})
    if vector.expected_message is not None:
        return vector.model_copy(update={"expected_message": None, "expected_error": "text_mismatch"})
    return vector.model_copy(update={"expected_error": "name_mismatch"})


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_a_tampered_vector_fails_with_a_difference_naming_it(suite: str) -> None:
    case, name = _tampered(suite)
    [result] = run_cases_sync(resolve_adapter("reference"), [case]).run.cases
    assert result.status is CaseStatus.FAILED
    assert result.differences
    assert all(d.path.startswith(name) for d in result.differences)
    assert name in (result.reason or "")
    assert f"1 of {len(case.vectors)} vectors differ" in (result.reason or "")


# --- strict loading ------------------------------------------------------------------------------------


@pytest.fixture
def vector_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "vectors"
    shutil.copytree(vectors_dir(), root)
    monkeypatch.setattr("relavium_conformance._corpus.vectors.vectors_dir", lambda: root)
    return root


def test_the_copied_vectors_load(vector_copy: Path) -> None:
    assert len(load_vector_cases()) == len(_vector_cases())


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_a_vector_with_an_unknown_key_is_a_usage_error(vector_copy: Path, suite: str) -> None:
    path = sorted((vector_copy / suite).glob("*.yaml"))[0]
    text = path.read_text(encoding="utf-8")
    if SUITES[suite].one_per_file:
        text += "surprise: 1\n"
    else:
        text = text.replace("- name: ", "- surprise: 1\n  name: ", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(KitUsageError, match="unknown field refused"):
        load_vector_cases()


def test_run_exits_2_when_a_vector_file_is_malformed(
    vector_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from relavium_conformance._cli import main

    path = vector_copy / "workflow-id" / "unicode.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("- name: ", "- surprise: 1\n  name: ", 1))
    load_cases.cache_clear()
    try:
        assert main(["run", "--list"]) == 2
    finally:
        load_cases.cache_clear()
    assert "unicode.yaml" in capsys.readouterr().err


def test_a_suite_without_vectors_is_an_error(vector_copy: Path) -> None:
    for path in (vector_copy / "reconstruct").glob("*.yaml"):
        path.unlink()
    with pytest.raises(KitUsageError, match="no reconstruct vectors found"):
        load_vector_cases()


def test_a_list_file_without_a_manifest_entry_is_a_usage_error(vector_copy: Path) -> None:
    shutil.copy(vector_copy / "workflow-id" / "unicode.yaml", vector_copy / "workflow-id" / "extra.yaml")
    with pytest.raises(KitUsageError, match=r"no entry in suites\.yaml"):
        load_vector_cases()


def test_a_manifest_entry_without_a_file_is_a_usage_error(vector_copy: Path) -> None:
    (vector_copy / "export" / "legacy.yaml").unlink()
    with pytest.raises(KitUsageError, match="do not exist: legacy"):
        load_vector_cases()


def test_a_vector_whose_input_the_engine_refuses_is_a_usage_error(vector_copy: Path) -> None:
    path = vector_copy / "reconstruct" / "empty-transcript.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("agentSlug: coder", "agentSlug: Not Kebab"))
    with pytest.raises(KitUsageError, match="empty-transcript"):
        load_vector_cases()


def test_a_reconstruct_vector_id_must_match_its_file(vector_copy: Path) -> None:
    path = vector_copy / "reconstruct" / "empty-transcript.yaml"
    path.rename(path.with_name("renamed.yaml"))
    with pytest.raises(KitUsageError, match="must match the file name"):
        load_vector_cases()


# --- implementations that answer badly ---------------------------------------------------------------


class _Garbage:
    """Declares every capability and answers every pure operation with the same wrong shape."""

    def __init__(self, _callback: Any, *, hang: bool = False) -> None:
        self._hang = hang

    def hello_result(self) -> HelloResult:
        return HelloResult.model_validate(
            {
                "protocolVersion": "1.0",
                "implementation": {"name": "garbage", "version": "0", "language": "none"},
                "capabilities": ["resume", "export", "persistence"],
            }
        )

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if self._hang:
            await asyncio.Event().wait()
        return {"messages": "nope"}


def test_a_malformed_answer_fails_the_case_and_names_the_vector() -> None:
    cases = [next(c for c in _vector_cases() if c.suite == suite) for suite in sorted(SUITES)]
    outcome = run_cases_sync(InProcessAdapter("garbage", _Garbage), cases)
    statuses = {c.id: c.status for c in outcome.run.cases}
    assert set(statuses.values()) == {CaseStatus.FAILED}
    for case, result in zip(cases, outcome.run.cases, strict=True):
        assert result.differences[0].path.startswith(case.vectors[0].name), result.differences[0]


def test_an_implementation_that_never_answers_errors_the_case_and_the_run_goes_on() -> None:
    cases = [next(c for c in _vector_cases() if c.suite == "workflow-id")]
    adapter = InProcessAdapter("hang", lambda callback: _Garbage(callback, hang=True))
    [result] = run_cases_sync(adapter, cases, timeout=0.2).run.cases
    assert result.status is CaseStatus.ERRORED
    assert "no answer to 'pure.workflowId'" in (result.reason or "")


# --- the protocol ------------------------------------------------------------------------------------


def test_the_pure_operations_are_in_the_message_set() -> None:
    assert {"pure.reconstructSessionState", "pure.workflowId", "pure.exportWorkflow"} <= set(OPERATIONS)


def test_committed_protocol_schemas_match_the_models() -> None:
    expected = protocol_schemas()
    methods = schemas_dir() / "protocol" / "methods"
    committed = {f"protocol/methods/{p.name}" for p in methods.glob("*.schema.json")}
    assert committed == set(expected), "regenerate: relavium-conformance regen-schemas"
    for name, schema in expected.items():
        assert (schemas_dir() / name).read_text(encoding="utf-8") == render(schema), name


def test_a_refused_pure_input_is_invalid_input_over_stdio() -> None:
    async def scenario() -> tuple[Any, Any]:
        adapter = resolve_adapter("reference-stdio")

        async def no_callbacks(method: str, params: dict[str, Any]) -> Any:
            raise AssertionError(f"a pure operation called back: {method}")

        await adapter.open(no_callbacks)
        try:
            answer = await adapter.call("pure.workflowId", {"title": "Weekly sync", "sessionId": "s1"})
            from relavium_conformance._wire.protocol import OperationError

            with pytest.raises(OperationError) as refused:
                await adapter.call("pure.workflowId", {"title": None, "sessionId": ""})
            return answer, refused.value
        finally:
            await adapter.close()

    answer, error = asyncio.run(scenario())
    assert answer == {"workflowId": "weekly-sync"}
    assert error.kind == "invalid_input"
