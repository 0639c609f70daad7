"""The runner end to end: transports agree, reports validate, baselines gate, exit codes mean something."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases_sync
from relavium_conformance._selftest.breaks import broken_by_name
from relavium_conformance._wire.adapters import InProcessAdapter

ROOT = Path(__file__).resolve().parents[3]


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relavium_conformance", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def both_runs() -> tuple[object, object]:
    cases = load_cases()
    in_process = run_cases_sync(resolve_adapter("reference"), cases)
    over_stdio = run_cases_sync(resolve_adapter("reference-stdio"), cases)
    return in_process, over_stdio


def test_reference_passes_every_case_in_process(both_runs) -> None:  # type: ignore[no-untyped-def]
    in_process, _ = both_runs
    failing = [(c.id, c.reason) for c in in_process.run.cases if c.status is not CaseStatus.PASSED]
    assert failing == []


def test_stdio_gives_the_same_status_for_every_case(both_runs) -> None:  # type: ignore[no-untyped-def]
    in_process, over_stdio = both_runs
    assert {c.id: c.status for c in in_process.run.cases} == {c.id: c.status for c in over_stdio.run.cases}
    assert over_stdio.run.implementation.adapter == "stdio"  # the transport, as docs/results.md says
    assert in_process.run.implementation.adapter == "in-process"


def test_stdio_snapshots_equal_in_process_snapshots(both_runs) -> None:  # type: ignore[no-untyped-def]
    in_process, over_stdio = both_runs
    assert in_process.snapshots == over_stdio.snapshots


def test_every_testable_clause_of_the_corpus_is_reported_per_clause(both_runs) -> None:  # type: ignore[no-untyped-def]
    in_process, _ = both_runs
    statuses = {c.id: c.status.value for c in in_process.run.clauses}
    cited = {clause for case in load_cases() for clause in case.clauses}
    assert all(statuses[c] in ("passed", "not-applicable") for c in cited)
    assert "untested" in statuses.values()  # later areas: reported, never hidden


def test_json_and_junit_outputs_validate(tmp_path: Path) -> None:
    result = _cli(
        "run",
        "--select",
        "races/*",
        "--json",
        str(tmp_path / "r.json"),
        "--junit",
        str(tmp_path / "j.xml"),
        "--markdown",
        str(tmp_path / "r.md"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "schemas" / "results.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(document)
    assert document["implementation"]["name"] == "relavium-reference"
    assert document["summary"]["passed"] == document["summary"]["total"] >= 2
    suites = ET.parse(tmp_path / "j.xml").getroot()
    assert sum(int(s.get("tests", 0)) for s in suites.iter("testsuite")) == document["summary"]["total"]
    assert "races" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_a_new_failure_fails_the_run_and_a_baseline_entry_admits_it(tmp_path: Path) -> None:
    broken = broken_by_name("aborted-turn-kept")
    cases = [c for c in load_cases() if set(c.clauses) & set(broken.clauses)]
    outcome = run_cases_sync(InProcessAdapter("broken", broken.factory()), cases)
    failed = [c.id for c in outcome.run.cases if c.status is CaseStatus.FAILED]
    assert failed, "the broken implementation should fail its cases"
    from relavium_conformance._report.baseline import compare, load_baseline, write_baseline
    from relavium_conformance._report.results import ExitCode, exit_code

    assert exit_code(outcome.run) is ExitCode.FAILED
    path = tmp_path / "baseline.yaml"
    write_baseline(outcome.run, path)
    comparison = compare(
        outcome.run, load_baseline(path), file=str(path), all_case_ids=[c.id for c in load_cases()]
    )
    assert exit_code(outcome.run.with_baseline(comparison)) is ExitCode.OK


def test_a_stale_baseline_entry_fails_the_run(tmp_path: Path) -> None:
    case_id = load_cases()[0].id
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(
        f"known_failures:\n  - case: {case_id}\n    reason: pretend it fails\n", encoding="utf-8"
    )
    result = _cli("run", "--select", case_id, "--baseline", str(baseline))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "stale" in result.stdout.lower()


def test_a_malformed_baseline_is_a_usage_error(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("known_failures: []\nsurprise: true\n", encoding="utf-8")
    result = _cli("run", "--baseline", str(baseline))
    assert result.returncode == 2
    assert "surprise" in result.stderr or "unknown" in result.stderr


def test_an_empty_selection_exits_4() -> None:
    assert _cli("run", "--select", "commands/*", "--exclude", "commands/*").returncode == 4
    assert _cli("run", "--select", "no-such-area/*").returncode == 2  # a pattern matching no case: misuse


def test_a_program_that_cannot_shake_hands_exits_3() -> None:
    command = f"{sys.executable} -m relavium_conformance stdio-server --misbehave wrong-version"
    result = _cli("run", "--select", "races/*", "--adapter", f"stdio:{command}")
    assert result.returncode == 3, result.stdout + result.stderr


def test_an_unknown_adapter_is_a_usage_error() -> None:
    assert _cli("run", "--adapter", "telepathy").returncode == 2


@pytest.mark.slow
def test_protocol_validation_checks_messages_both_ways() -> None:
    result = _cli("run", "--adapter", "reference-stdio", "--validate-protocol")  # every case, both ways
    assert result.returncode == 0, result.stdout + result.stderr
    assert "messages validated" in result.stdout


def test_with_proofs_records_which_broken_implementation_proves_each_clause(tmp_path: Path) -> None:
    result = _cli("run", "--select", "persistence/*", "--with-proofs", "--json", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    proven = {c["id"]: c["proven_by"] for c in document["clauses"] if c["proven_by"]}
    judged = {c["id"] for c in document["clauses"] if c["cases"]}
    assert proven.keys() <= judged  # filled for the clauses the selection's cases judge, none other
    assert "persists-aborted-turn" in proven["AS-MSG-021"]
    assert "ignores-the-latch" in proven["AS-MSG-015"]
