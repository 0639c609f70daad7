"""The baseline of known failures: reading it strictly, gating a run against it, writing it back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.baseline import (
    Baseline,
    KnownFailure,
    baseline_from_run,
    capability_gate,
    compare,
    load_baseline,
    parse_baseline,
    write_baseline,
)
from relavium_conformance._report.results import (
    CaseResult,
    ClauseInfo,
    ExitCode,
    ImplementationInfo,
    KitInfo,
    RunResult,
    StaleEntry,
    StaleWhy,
    exit_code,
)


def case(case_id: str, status: str = "passed", *clauses: str, **extra: object) -> CaseResult:
    if status != "passed" and "reason" not in extra:
        extra["reason"] = f"{status} for a reason"
    return CaseResult.model_validate(
        {"id": case_id, "title": case_id, "status": status, "clauses": list(clauses), **extra}
    )


def make_run(*cases: CaseResult, name: str = "acme") -> RunResult:
    return RunResult.build(
        implementation=ImplementationInfo(name=name, adapter="in-process"),
        cases=cases,
        catalogue=[ClauseInfo("AS-LIFE-001", "testable")],
        started_at=datetime(2026, 11, 30, tzinfo=UTC),
        duration_ms=1,
        kit=KitInfo(version="0.0.test"),
    )


def baseline(*cases: str, implementation: str | None = None) -> Baseline:
    return Baseline(
        implementation=implementation,
        known_failures=tuple(KnownFailure(case=c, reason="known") for c in cases),
    )


def gate(run: RunResult, known: Baseline, **options: Any) -> ExitCode:
    return exit_code(run.with_baseline(compare(run, known, file="b.yaml", **options)))


# --- reading -------------------------------------------------------------------------------------------

YAML_TEXT = """\
implementation: acme
known_failures:
  - case: lifecycle/abort-idle-is-noop
    reason: emits an event on idle abort (acme#12)
    clauses: [AS-LIFE-004]
  - case: turns/tool-loop
    reason: "crashes: see #13"
"""


def test_yaml_baseline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "baseline.yaml"
    path.write_text(YAML_TEXT, encoding="utf-8")
    read = load_baseline(path)
    assert read.implementation == "acme"
    assert read.cases() == ["lifecycle/abort-idle-is-noop", "turns/tool-loop"]
    assert read.known_failures[0].clauses == ("AS-LIFE-004",)
    assert read.known_failures[1].reason == "crashes: see #13"


def test_json_baseline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"known_failures": [{"case": "a/b", "reason": "r"}]}), encoding="utf-8")
    assert load_baseline(path) == baseline_with("a/b", "r")


def baseline_with(case_id: str, reason: str) -> Baseline:
    return Baseline(known_failures=(KnownFailure(case=case_id, reason=reason),))


@pytest.mark.parametrize(
    ("document", "location"),
    [
        ({"known_failures": [], "notes": "x"}, "notes"),
        ({"known_failures": [{"case": "a/b", "reason": "r", "ticket": 1}]}, "known_failures.0.ticket"),
    ],
)
def test_unknown_baseline_key_is_refused_with_a_fixed_message(document: Any, location: str) -> None:
    with pytest.raises(KitUsageError) as raised:
        parse_baseline(document, source="b.yaml")
    assert str(raised.value) == f"b.yaml: unknown key refused at {location}"


def test_unknown_key_message_does_not_echo_the_value() -> None:
    with pytest.raises(KitUsageError) as raised:
        parse_baseline({"known_failures": [], "token": "s3cret-value"}, source="b.yaml")
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "b.yaml: required key missing at known_failures"),
        ({"known_failures": [{"case": "a/b"}]}, "b.yaml: required key missing at known_failures.0.reason"),
        (
            {"known_failures": [{"case": "no-area", "reason": "r"}]},
            "b.yaml: invalid value at known_failures.0.case",
        ),
        (
            {"known_failures": [{"case": "a/b", "reason": ""}]},
            "b.yaml: invalid value at known_failures.0.reason",
        ),
        (["a/b"], "b.yaml: invalid value at (top level)"),
    ],
)
def test_malformed_baseline_is_a_usage_error(document: Any, message: str) -> None:
    with pytest.raises(KitUsageError) as raised:
        parse_baseline(document, source="b.yaml")
    assert str(raised.value) == message


def test_case_listed_twice_is_refused() -> None:
    document = {"known_failures": [{"case": "a/b", "reason": "r"}, {"case": "a/b", "reason": "again"}]}
    with pytest.raises(KitUsageError, match="listed twice: a/b"):
        parse_baseline(document)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("known_failures: [\n", "not valid YAML or JSON at line 2"),
        ("known_failures: [-_]\n", "not valid YAML or JSON"),
        ("", "is empty"),
    ],
)
def test_unreadable_baseline_file_is_a_usage_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "baseline.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(KitUsageError, match=message):
        load_baseline(path)


def test_missing_baseline_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(KitUsageError, match="cannot read the baseline file"):
        load_baseline(tmp_path / "absent.yaml")


SCHEMA_CASES: list[tuple[Any, bool]] = [
    ({"known_failures": []}, True),
    ({"implementation": "acme", "known_failures": [{"case": "a/b", "reason": "r"}]}, True),
    ({"known_failures": [{"case": "a/b", "reason": "r", "clauses": ["AS-LIFE-001"]}]}, True),
    ({}, False),
    ({"known_failures": [], "extra": 1}, False),
    ({"known_failures": [{"case": "a/b"}]}, False),
    ({"known_failures": [{"case": "ab", "reason": "r"}]}, False),
    ({"known_failures": [{"case": "a/b", "reason": ""}]}, False),
    ({"known_failures": [{"case": "a/b", "reason": "r", "clauses": ["life"]}]}, False),
    ({"implementation": "", "known_failures": []}, False),
    ({"known_failures": [{"case": "a/b", "reason": "r", "why": "x"}]}, False),
]


@pytest.mark.parametrize(("document", "valid"), SCHEMA_CASES)
def test_baseline_schema_and_model_agree(document: Any, valid: bool) -> None:
    schema = json.loads((schemas_dir() / "baseline.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    schema_ok = not list(Draft202012Validator(schema).iter_errors(document))
    try:
        parse_baseline(document)
        model_ok = True
    except KitUsageError:
        model_ok = False
    assert (schema_ok, model_ok) == (valid, valid)


def test_documented_baseline_example_is_valid() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "results.md").read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    documented = parse_baseline(YAML(typ="safe", pure=True).load(example))
    assert documented.cases() == ["lifecycle/abort-idle-is-noop"]


# --- comparing and gating ------------------------------------------------------------------------------


def test_new_failure_fails_the_run() -> None:
    run = make_run(case("a/known", "failed"), case("a/fresh", "errored"))
    result = compare(run, baseline("a/known"), file="b.yaml")
    assert result.new_failures == ("a/fresh",)
    assert result.known_failures == ("a/known",)
    assert result.stale_entries == ()
    assert gate(run, baseline("a/known")) is ExitCode.FAILED


def test_known_failure_passes_the_run() -> None:
    run = make_run(case("a/known", "failed"), case("a/also", "errored"), case("a/fine"))
    result = compare(run, baseline("a/known", "a/also"))
    assert result.known_failures == ("a/known", "a/also")
    assert result.ok
    assert gate(run, baseline("a/known", "a/also")) is ExitCode.OK


def test_listed_case_that_now_passes_is_stale_and_fails_the_run() -> None:
    run = make_run(case("a/fixed"), case("a/known", "failed"))
    result = compare(run, baseline("a/fixed", "a/known"))
    assert result.stale_entries == (StaleEntry(case="a/fixed", why=StaleWhy.PASSES),)
    assert result.known_failures == ("a/known",)
    assert gate(run, baseline("a/fixed", "a/known")) is ExitCode.FAILED


def test_listed_case_the_kit_no_longer_has_is_stale() -> None:
    run = make_run(case("a/b"))
    result = compare(run, baseline("a/renamed"), all_case_ids={"a/b", "a/c"})
    assert result.stale_entries == (StaleEntry(case="a/renamed", why=StaleWhy.MISSING),)
    assert gate(run, baseline("a/renamed"), all_case_ids={"a/b"}) is ExitCode.FAILED


def test_listed_case_not_selected_or_unsupported_is_not_run_and_harmless() -> None:
    run = make_run(case("a/b"), case("a/needs-tools", "unsupported"))
    known = baseline("a/not-selected", "a/needs-tools")
    result = compare(run, known, all_case_ids={"a/b", "a/needs-tools", "a/not-selected"})
    assert result.not_run == ("a/not-selected", "a/needs-tools")
    assert result.stale_entries == ()
    assert gate(run, known, all_case_ids={"a/b", "a/needs-tools", "a/not-selected"}) is ExitCode.OK


def test_without_the_full_case_list_an_unselected_entry_counts_as_missing() -> None:
    run = make_run(case("a/b"))
    assert compare(run, baseline("a/elsewhere")).stale_entries == (
        StaleEntry(case="a/elsewhere", why=StaleWhy.MISSING),
    )


def test_baseline_for_another_implementation_is_refused() -> None:
    run = make_run(case("a/b", "failed"), name="acme")
    with pytest.raises(KitUsageError, match="written for implementation 'other'"):
        compare(run, baseline("a/b", implementation="other"), file="b.yaml")
    assert compare(run, baseline("a/b", implementation="acme")).ok


def test_comparison_is_recorded_in_the_run() -> None:
    run = make_run(case("a/b", "failed"))
    recorded = run.with_baseline(compare(run, baseline("a/b"), file="known.yaml"))
    assert recorded.baseline is not None
    assert recorded.baseline.file == "known.yaml"
    assert RunResult.model_validate_json(recorded.model_dump_json()) == recorded


# --- writing -------------------------------------------------------------------------------------------


def failing_run() -> RunResult:
    return make_run(
        case("lifecycle/a", "failed", "AS-LIFE-001", reason="wrong event"),
        case("turns/b", "errored", reason="crashed\nwith a trace"),
        case("turns/c"),
        case("turns/d", "unsupported"),
    )


@pytest.mark.parametrize("name", ["baseline.yaml", "baseline.json"])
def test_written_baseline_lists_current_failures_and_reads_back(tmp_path: Path, name: str) -> None:
    run = failing_run()
    path = tmp_path / name
    written = write_baseline(run, path)
    assert load_baseline(path) == written
    assert written.implementation == "acme"
    assert [(e.case, e.reason, e.clauses) for e in written.known_failures] == [
        ("lifecycle/a", "wrong event", ("AS-LIFE-001",)),
        ("turns/b", "crashed with a trace", ()),
    ]


def test_written_yaml_baseline_is_commented_and_keeps_key_order(tmp_path: Path) -> None:
    path = tmp_path / "baseline.yaml"
    write_baseline(failing_run(), path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Known failures of acme")
    assert text.index("case: lifecycle/a") < text.index("reason: wrong event") < text.index("AS-LIFE-001")


def test_written_json_baseline_validates_against_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(failing_run(), path)
    schema = json.loads((schemas_dir() / "baseline.schema.json").read_text(encoding="utf-8"))
    assert list(Draft202012Validator(schema).iter_errors(json.loads(path.read_text(encoding="utf-8")))) == []


def test_run_gated_by_its_own_written_baseline_passes(tmp_path: Path) -> None:
    run = failing_run()
    path = tmp_path / "baseline.yaml"
    write_baseline(run, path)
    assert gate(run, load_baseline(path)) is ExitCode.OK
    assert exit_code(run) is ExitCode.FAILED


def test_rewriting_a_baseline_keeps_the_implementers_reasons() -> None:
    previous = Baseline(
        known_failures=(
            KnownFailure(case="lifecycle/a", reason="tracked as acme#12"),
            KnownFailure(case="gone/x", reason="old"),
        )
    )
    rewritten = baseline_from_run(failing_run(), previous=previous)
    assert [(e.case, e.reason) for e in rewritten.known_failures] == [
        ("lifecycle/a", "tracked as acme#12"),
        ("turns/b", "crashed with a trace"),
    ]


def test_baseline_of_a_passing_run_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "baseline.yaml"
    written = write_baseline(make_run(case("a/b")), path)
    assert written.known_failures == ()
    assert load_baseline(path).known_failures == ()


# --- declared capabilities -------------------------------------------------------------------------------


def capable_run(*capabilities: str) -> RunResult:
    return RunResult.build(
        implementation=ImplementationInfo(name="acme", adapter="stdio", capabilities=capabilities),
        cases=[case("lifecycle/a", "passed", "AS-LIFE-001"), case("turns/d", "unsupported")],
        catalogue=[ClauseInfo("AS-LIFE-001", "testable")],
        started_at=datetime(2026, 11, 30, tzinfo=UTC),
        duration_ms=1,
        kit=KitInfo(version="0.0.test"),
    )


def test_written_baseline_records_the_declared_capabilities(tmp_path: Path) -> None:
    path = tmp_path / "baseline.yaml"
    written = write_baseline(capable_run("resume", "core"), path)
    assert written.capabilities == ("core", "resume")
    assert load_baseline(path).capabilities == ("core", "resume")


def test_a_run_declaring_fewer_capabilities_than_its_baseline_fails_naming_them() -> None:
    floor = Baseline(capabilities=("core", "export", "resume"), known_failures=())
    run = capable_run("core")
    gate = capability_gate(run, baseline=floor, baseline_file="b.yaml")
    assert gate is not None
    assert gate.missing == ("export", "resume")
    assert gate.sources == ("b.yaml",)
    gated = run.with_capability_gate(gate).with_baseline(compare(run, floor))
    assert exit_code(gated) is ExitCode.FAILED  # although every run case passed or was unsupported
    assert exit_code(run.with_baseline(compare(run, floor))) is ExitCode.OK


def test_required_capabilities_add_to_the_baseline_floor() -> None:
    run = capable_run("core", "resume")
    assert capability_gate(run) is None
    gate = capability_gate(run, required=["resume"])
    assert gate is not None
    assert gate.ok
    everything = capability_gate(run, required=["resume"], require_all=["core", "resume", "usage"])
    assert everything is not None
    assert everything.missing == ("usage",)
    assert everything.sources == ("--require-capability", "--require-all")


def test_cli_capabilities_below_the_baseline_exit_1_and_are_named(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "b.yaml"
    path.write_text(
        "implementation: relavium-reference\ncapabilities: [core, resume]\nknown_failures: []\n",
        encoding="utf-8",
    )
    server = f"{sys.executable} -m relavium_conformance stdio-server --capabilities core"
    command = [sys.executable, "-m", "relavium_conformance", "run", "--adapter", f"stdio:{server}"]
    done = subprocess.run(
        [*command, "--baseline", str(path), "--select", "resume/continues-the-conversation"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "required capability not declared: resume" in done.stdout
    refused = subprocess.run(
        [*command, "--require-capability", "telepathy"], capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2
    assert "telepathy" in refused.stderr
