"""Reports of a run: the JSON document and its schema, JUnit XML, Markdown, and the terminal."""

from __future__ import annotations

import copy
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from relavium_conformance._corpus.catalogue import CLAUSE_ID_PATTERN
from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitError
from relavium_conformance._report.results import (
    CASE_ID_PATTERN,
    BaselineComparison,
    CaseResult,
    ClauseInfo,
    ImplementationInfo,
    KitInfo,
    RunResult,
    StaleEntry,
    StaleWhy,
)
from relavium_conformance._report.writers import (
    TerminalReporter,
    exit_line,
    junit_tree,
    markdown_report,
    read_json,
    results_document,
    write_json,
    write_junit,
    write_markdown,
)

ROOT = Path(__file__).resolve().parents[3]
STARTED = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)

CATALOGUE = [
    ClauseInfo("AS-LIFE-001", "testable"),
    ClauseInfo("AS-LIFE-002", "testable"),
    ClauseInfo("AS-TEST-001", "kit-defined"),
    ClauseInfo("AS-TEST-009", "testable"),
    ClauseInfo("AS-TEST-101", "host-specific"),
]


def case(case_id: str, status: str = "passed", *clauses: str, **extra: object) -> CaseResult:
    if status != "passed" and "reason" not in extra:
        extra["reason"] = f"{status} for a reason"
    return CaseResult.model_validate(
        {"id": case_id, "title": f"title of {case_id}", "status": status, "clauses": list(clauses), **extra}
    )


def make_run(*cases: CaseResult, catalogue: list[ClauseInfo] | None = None) -> RunResult:
    return RunResult.build(
        implementation=ImplementationInfo(
            name="acme", version="1.0", language="go", capabilities=("tools",), adapter="stdio"
        ),
        cases=cases,
        catalogue=CATALOGUE if catalogue is None else catalogue,
        started_at=STARTED,
        duration_ms=1234.5,
        kit=KitInfo(version="0.0.test"),
    )


def mixed_run() -> RunResult:
    return make_run(
        case("lifecycle/start-emits-started", "passed", "AS-LIFE-001", duration_ms=5),
        case(
            "lifecycle/abort-idle-is-noop",
            "failed",
            "AS-LIFE-002",
            reason="2 expected observations not met",
            differences=[
                {
                    "path": "events[0].type",
                    "expected": None,
                    "actual": "session:aborted",
                    "message": "unexpected",
                },
                {"path": "state", "expected": "idle", "actual": "aborted", "message": "wrong state"},
            ],
        ),
        case(
            "turns/tool-loop", "errored", "AS-TEST-001", reason="process exited 1", stderr_tail="panic: x\n"
        ),
        case("turns/compaction-ack", "unsupported", "AS-TEST-001", reason="needs capability compaction"),
        case("turns/stream-order", "passed", "AS-LIFE-001", "AS-TEST-101"),
    )


# --- JSON ----------------------------------------------------------------------------------------------


def schema_validator(name: str) -> Draft202012Validator:
    schema = json.loads((schemas_dir() / name).read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("name", ["results.schema.json", "baseline.schema.json"])
def test_schemas_are_valid_draft_2020_12(name: str) -> None:
    schema = json.loads((schemas_dir() / name).read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schemas_use_the_models_id_patterns() -> None:
    results = json.loads((schemas_dir() / "results.schema.json").read_text(encoding="utf-8"))
    baseline = json.loads((schemas_dir() / "baseline.schema.json").read_text(encoding="utf-8"))
    assert results["$defs"]["clauseId"]["pattern"] == CLAUSE_ID_PATTERN
    assert results["$defs"]["caseId"]["pattern"] == CASE_ID_PATTERN
    entry = baseline["properties"]["known_failures"]["items"]["properties"]
    assert entry["clauses"]["items"]["pattern"] == CLAUSE_ID_PATTERN
    assert entry["case"]["pattern"] == CASE_ID_PATTERN


def test_written_json_validates_against_the_schema(tmp_path: Path) -> None:
    run = mixed_run().with_baseline(
        BaselineComparison(
            file="b.yaml",
            new_failures=("turns/tool-loop",),
            known_failures=("lifecycle/abort-idle-is-noop",),
            stale_entries=(StaleEntry(case="turns/gone", why=StaleWhy.MISSING),),
        )
    )
    path = tmp_path / "results.json"
    write_json(run, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert list(schema_validator("results.schema.json").iter_errors(document)) == []
    assert document["summary"] == {
        "passed": 2,
        "failed": 1,
        "errored": 1,
        "unsupported": 1,
        "total": 5,
        "spec_failures": 1,
        "kit_choice_failures": 0,
        "warnings": 0,
    }
    assert [c["status"] for c in document["clauses"]] == [
        "passed",
        "failed",
        "failed",
        "untested",
        "not-applicable",
    ]
    assert read_json(path) == run


def test_json_of_an_empty_run_validates() -> None:
    document = results_document(make_run())
    assert document["cases"] == []
    assert list(schema_validator("results.schema.json").iter_errors(document)) == []


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: object) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = document
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return mutate


def _drop(key: str) -> Mutation:
    return lambda document: document.pop(key)


BROKEN: dict[str, Mutation] = {
    "summary missing": _drop("summary"),
    "unknown top-level key": _set("colour", "red"),
    "results version 2": _set("results_version", 2),
    "case status unknown": _set("cases.0.status", "skipped"),
    "passed case with a reason": _set("cases.0.reason", "because"),
    "failed case without a reason": _set("cases.1.reason", None),
    "reason of two lines": _set("cases.1.reason", "one\ntwo"),
    "differences on an errored case": _set("cases.2.differences", [{"path": "p", "message": "m"}]),
    "stderr on a passed case": _set("cases.0.stderr_tail", "noise"),
    "case id without area": _set("cases.0.id", "no-area"),
    "malformed clause id": _set("cases.0.clauses", ["life-1"]),
    "negative duration": _set("duration_ms", -1),
    "started_at not a date-time": _set("started_at", "yesterday"),
    "clause status unknown": _set("clauses.0.status", "green"),
    "untested clause with cases": _set("clauses.3.cases", ["turns/tool-loop"]),
    "passed clause without cases": _set("clauses.0.cases", []),
    "difference without message": _set("cases.1.differences.0", {"path": "p"}),
    "baseline with unknown stale why": _set(
        "baseline",
        {
            "file": "b",
            "new_failures": [],
            "stale_entries": [{"case": "a/b", "why": "old"}],
            "known_failures": [],
            "not_run": [],
        },
    ),
}


@pytest.mark.parametrize("mutate", BROKEN.values(), ids=BROKEN.keys())
def test_schema_rejects_a_broken_results_document(mutate: Mutation) -> None:
    document = results_document(mixed_run())
    broken = copy.deepcopy(document)
    mutate(broken)
    assert broken != document
    assert list(schema_validator("results.schema.json").iter_errors(broken)), "schema accepted it"


def test_write_json_refuses_a_document_outside_the_schema_and_writes_nothing(tmp_path: Path) -> None:
    good = mixed_run()
    # model_construct skips validation, as a defect in the kit might: a passed case with a reason
    bad_case = CaseResult.model_construct(**{**dict(good.cases[0]), "reason": "leaked"})
    bad = good.model_copy(update={"cases": (bad_case, *good.cases[1:])})
    path = tmp_path / "results.json"
    with pytest.raises(KitError, match=r"results.schema.json at cases/0/reason"):
        write_json(bad, path)
    assert not path.exists()


def test_documented_json_example_is_a_valid_results_document() -> None:
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)\n```", text, re.S)
    assert block, "docs/results.md lost its JSON example"
    document = json.loads(block.group(1))
    assert list(schema_validator("results.schema.json").iter_errors(document)) == []
    RunResult.model_validate(document)


# --- JUnit ---------------------------------------------------------------------------------------------

JUNIT_SCHEMA = xmlschema.XMLSchema(ROOT / "schemas" / "junit-10.xsd")  # Jenkins' schema, vendored


def test_junit_parses_with_one_suite_per_area_and_right_counts(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(mixed_run(), path)
    JUNIT_SCHEMA.validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "5",
        "failures": "1",
        "errors": "1",
        "skipped": None,  # junit-10.xsd has no skipped count on the root; each suite has one
    }
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["lifecycle", "turns"]
    lifecycle, turns = suites
    assert (lifecycle.get("tests"), lifecycle.get("failures"), lifecycle.get("errors")) == ("2", "1", "0")
    assert (turns.get("tests"), turns.get("errors"), turns.get("skipped")) == ("3", "1", "1")
    for suite in suites:
        for testcase in suite.findall("testcase"):
            assert testcase.get("classname") == suite.get("name")
            assert str(testcase.get("name")).startswith(f"{suite.get('name')}/")
    assert len(root.findall(".//testcase")) == 5


def test_junit_counts_each_status_separately() -> None:
    cases = [
        *(case(f"a/p{i}") for i in range(3)),
        *(case(f"a/f{i}", "failed") for i in range(2)),
        case("a/e0", "errored"),
        *(case(f"b/u{i}", "unsupported") for i in range(4)),
    ]
    root = junit_tree(make_run(*cases, catalogue=[]))
    counts = {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "10", "failures": "2", "errors": "1", "skipped": None}
    a, b = root.findall("testsuite")
    assert {k: a.get(k) for k in counts} == {"tests": "6", "failures": "2", "errors": "1", "skipped": "0"}
    assert {k: b.get(k) for k in counts} == {"tests": "4", "failures": "0", "errors": "0", "skipped": "4"}


def test_junit_testcase_children_follow_the_case_status() -> None:
    root = junit_tree(mixed_run())
    by_name = {tc.get("name"): tc for tc in root.iter("testcase")}
    passed = by_name["lifecycle/start-emits-started"]
    assert [child.tag for child in passed] == ["system-out"]
    assert passed.get("time") == "0.005"

    failure = by_name["lifecycle/abort-idle-is-noop"].find("failure")
    assert failure is not None
    assert str(failure.get("message")).startswith(
        "[spec failure] 2 expected observations not met | clauses: AS-LIFE-002 ("
    )
    assert 'at state: expected "idle", got "aborted" (wrong state)' in (failure.text or "")

    errored = by_name["turns/tool-loop"]
    error = errored.find("error")
    assert error is not None
    assert str(error.get("message")).startswith("process exited 1")
    assert "panic: x" not in (error.text or "")
    assert "panic: x" in (errored.findtext("system-err") or "")  # where CI readers show it

    skipped = by_name["turns/compaction-ack"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "unsupported: needs capability compaction"


def test_junit_names_the_clauses_in_system_out_and_the_implementation_on_suites() -> None:
    root = junit_tree(mixed_run())
    testcase = next(tc for tc in root.iter("testcase") if tc.get("name") == "turns/stream-order")
    out = (testcase.findtext("system-out") or "").splitlines()
    assert [line.split()[1] for line in out if line.startswith("checks ")] == ["AS-LIFE-001", "AS-TEST-101"]
    suite_props = {p.get("name"): p.get("value") for p in root.findall("testsuite/properties/property")}
    assert suite_props["implementation"] == "acme"
    assert suite_props["implementation.adapter"] == "stdio"
    assert {s.get("file") for s in root.iter("testsuite")} == {
        "fixtures/transcripts/lifecycle",
        "fixtures/transcripts/turns",
    }


def test_junit_survives_control_characters_in_stderr(tmp_path: Path) -> None:
    run = make_run(
        case("a/b", "errored", reason='died <badly> & "loud"', stderr_tail="\x1b[31mred\x1b[0m\x00!\n")
    )
    path = tmp_path / "junit.xml"
    write_junit(run, path)
    error = ET.parse(path).getroot().find(".//error")
    assert error is not None
    assert error.get("message") == 'died <badly> & "loud"'
    # control characters an implementation wrote are shown as visible escapes, never passed through
    system_err = ET.parse(path).getroot().findtext(".//system-err") or ""
    assert "\\x1b[31mred\\x1b[0m\\x00!" in system_err
    assert "\x1b" not in path.read_text(encoding="utf-8")


# --- Markdown ------------------------------------------------------------------------------------------


def test_markdown_has_area_table_failures_and_untested_clauses(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    write_markdown(mixed_run(), path)
    text = path.read_text(encoding="utf-8")
    assert "| lifecycle | 1 | 1 | 0 | 0 | 2 |" in text
    assert "| turns | 1 | 0 | 1 | 1 | 3 |" in text
    assert "| **Total** | 2 | 1 | 1 | 1 | 5 |" in text
    failures = text.split("## Failed and errored cases (2)", 1)[1]
    assert "<summary><code>lifecycle/abort-idle-is-noop</code>" in failures
    assert 'at state: expected "idle", got "aborted" (wrong state)' in failures
    assert "<summary><code>turns/tool-loop</code>" in failures
    assert "panic: x" in failures
    assert "`lifecycle/start-emits-started`" not in failures
    untested = text.split("### Untested clauses", 1)[1]
    assert "AS-TEST-009" in untested
    assert "AS-LIFE-001" not in untested
    assert "exit 1: FAILED" in text


def test_markdown_of_a_passing_run_has_no_failure_section() -> None:
    text = markdown_report(make_run(case("a/b", "passed", "AS-LIFE-001"), catalogue=[CATALOGUE[0]]))
    assert "Failed and errored cases" not in text
    assert "exit 0: OK" in text
    assert "### Untested clauses\n\nNone." in text


def test_markdown_escapes_html_and_fences_stderr() -> None:
    run = make_run(
        case(
            "a/b",
            "failed",
            title="<b>bold</b> | pipe",
            reason="a | b",
            differences=[{"path": "x|y", "expected": "`tick`", "actual": "p|q", "message": "m | n"}],
        ),
        case("a/c", "errored", stderr_tail="```\ninside\n```\n"),
        catalogue=[],
    )
    text = markdown_report(run)
    assert "&lt;b&gt;bold&lt;/b&gt;" in text
    assert "<b>bold" not in text
    assert "````text\n```\ninside\n```\n````" in text


def test_markdown_reports_the_baseline_comparison() -> None:
    run = mixed_run().with_baseline(
        BaselineComparison(
            file="known.yaml",
            new_failures=("turns/tool-loop",),
            known_failures=("lifecycle/abort-idle-is-noop",),
            stale_entries=(StaleEntry(case="turns/fixed", why=StaleWhy.PASSES),),
        )
    )
    text = markdown_report(run)
    assert "File: `known.yaml`" in text
    assert "- New failures: 1: `turns/tool-loop`" in text
    assert "- Stale entries: 1: `turns/fixed` (passes)" in text
    # the new failure comes first, in full; the known one is collapsed under the baseline
    new = text.index("## New failures (1)")
    assert text.index("<summary><code>turns/tool-loop</code>") > new
    assert "(errored, new: not in the baseline)" in text
    assert "<summary><code>lifecycle/abort-idle-is-noop</code>" not in text
    assert "<summary>1 known failure(s)</summary>" in text


# --- terminal ------------------------------------------------------------------------------------------


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def feed(reporter: TerminalReporter, run: RunResult) -> None:
    for result in run.cases:
        reporter.on_case_start(result.id)
        reporter.on_case_end(result)


def test_progress_prints_one_character_per_case_on_one_line_per_area() -> None:
    stream = io.StringIO()
    reporter = TerminalReporter(stream, environ={})
    feed(reporter, mixed_run())
    assert stream.getvalue() == "lifecycle .F\nturns EU."


def test_progress_opens_a_new_line_when_an_area_comes_back() -> None:
    stream = io.StringIO()
    reporter = TerminalReporter(stream, environ={})
    feed(reporter, make_run(case("a/x"), case("b/y", "failed"), case("a/z"), catalogue=[]))
    assert stream.getvalue() == "a .\nb F\na ."


def test_no_colour_on_a_stream_that_is_not_a_terminal() -> None:
    stream = io.StringIO()
    reporter = TerminalReporter(stream, environ={})
    run = mixed_run()
    feed(reporter, run)
    reporter.summary(run)
    assert not reporter.colour
    assert "\x1b[" not in stream.getvalue()


def test_colour_on_a_terminal_unless_no_color_is_set() -> None:
    coloured = FakeTty()
    reporter = TerminalReporter(coloured, environ={})
    reporter.on_case_end(case("a/b", "failed"))
    assert reporter.colour
    assert "\x1b[31mF\x1b[0m" in coloured.getvalue()

    plain = FakeTty()
    reporter = TerminalReporter(plain, environ={"NO_COLOR": "1"})
    reporter.on_case_end(case("a/b", "failed"))
    assert not reporter.colour
    assert plain.getvalue() == "a F"


def test_summary_has_area_table_first_difference_and_exit_line() -> None:
    stream = io.StringIO()
    reporter = TerminalReporter(stream, environ={})
    run = mixed_run()
    feed(reporter, run)
    reporter.summary(run)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "lifecycle .F"
    assert lines[1] == "turns EU."
    assert "== acme (1.0, go, stdio) ==" in lines
    table = {
        line.split()[0]: line.split()[1:] for line in lines if re.match(r"^(lifecycle|turns|total) ", line)
    }
    assert table == {
        "lifecycle": ["1", "1", "0", "0", "2"],
        "turns": ["1", "0", "1", "1", "3"],
        "total": ["2", "1", "1", "1", "5"],
    }
    failed_at = lines.index(
        "FAILED lifecycle/abort-idle-is-noop (spec failure): 2 expected observations not met"
    )
    assert lines[failed_at + 1].startswith("    clause AS-LIFE-002 (")  # with its summary
    assert lines[failed_at + 2] == '    at events[0].type: expected null, got "session:aborted" (unexpected)'
    assert lines[failed_at + 3] == '    at state: expected "idle", got "aborted" (wrong state)'
    assert "ERRORED turns/tool-loop: process exited 1" in lines
    assert "2 passed, 1 unsupported, 1 failed (1 spec, 0 kit-choice), 1 errored in 1.23s" in lines
    assert lines[-1] == "exit 1: FAILED (2 failed or errored cases)"


def test_summary_does_not_pass_the_implementations_escapes_to_the_terminal() -> None:
    run = make_run(case("a/b", "errored", reason="\x1b[2Jcleared your screen"), catalogue=[])
    stream = FakeTty()
    TerminalReporter(stream, environ={}).summary(run)
    assert "\x1b[2J" not in stream.getvalue()
    assert "ERRORED\x1b[0m a/b: \\x1b[2Jcleared your screen" in stream.getvalue()  # shown, not obeyed


def test_summary_reports_baseline_and_its_verdict() -> None:
    run = make_run(case("a/b", "failed"), case("a/c"), catalogue=[])
    known = run.with_baseline(BaselineComparison(file="known.yaml", known_failures=("a/b",)))
    stream = io.StringIO()
    TerminalReporter(stream, environ={}).summary(known)
    text = stream.getvalue()
    assert "baseline known.yaml: 1 known, 0 new, 0 stale" in text
    assert "1 known failure(s), as the baseline expects" in text
    assert "FAILED a/b" not in text  # a known failure is counted, not repeated
    assert text.rstrip().endswith("exit 0: OK (1 known failure in the baseline)")

    stale = known.with_baseline(
        BaselineComparison(
            file="known.yaml",
            known_failures=("a/b",),
            stale_entries=(StaleEntry(case="a/c", why=StaleWhy.PASSES),),
        )
    )
    stream = io.StringIO()
    TerminalReporter(stream, environ={}).summary(stale)
    assert "    stale: a/c (now passes)" in stream.getvalue()
    assert stream.getvalue().rstrip().endswith("exit 1: FAILED (1 stale baseline entry: a/c)")


def test_exit_line_names_empty_and_unstarted_runs() -> None:
    assert exit_line(make_run(catalogue=[])) == "exit 4: NOTHING TESTED (no case selected)"
    unsupported = make_run(case("a/b", "unsupported"), case("a/c", "unsupported"), catalogue=[])
    assert exit_line(unsupported) == (
        "exit 4: NOTHING TESTED (all 2 selected cases are unsupported: each needs a capability the "
        "implementation does not declare)"
    )
    unstarted = make_run(case("a/b", "errored", handshake_failed=True), catalogue=[])
    assert exit_line(unstarted).startswith("exit 3: IMPLEMENTATION NOT STARTED")


# --- every run the model accepts, every report accepts -------------------------------------------------

_text = st.text(max_size=40)
_reason = _text.filter(lambda s: s.strip() != "")
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_difference = st.fixed_dictionaries({"path": _text, "expected": _json, "actual": _json, "message": _text})
_CLAUSE_IDS = [c.id for c in CATALOGUE]


@st.composite
def case_results(draw: st.DrawFn) -> CaseResult:
    area = draw(st.sampled_from(["lifecycle", "turns", "memory"]))
    name = draw(st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True))
    status = draw(st.sampled_from(["passed", "failed", "errored", "unsupported"]))
    data: dict[str, Any] = {
        "id": f"{area}/{name}",
        "title": draw(_text),
        "status": status,
        "clauses": draw(st.lists(st.sampled_from(_CLAUSE_IDS), unique=True, max_size=3)),
        "duration_ms": draw(st.floats(min_value=0, max_value=1e6)),
    }
    if status != "passed":
        data["reason"] = draw(_reason)
    if status == "failed":
        data["differences"] = draw(st.lists(_difference, max_size=3))
    if status == "errored":
        data["stderr_tail"] = draw(st.none() | st.text(max_size=80))
        data["handshake_failed"] = draw(st.booleans())
    return CaseResult.model_validate(data)


@settings(max_examples=60, deadline=None)
@given(st.lists(case_results(), unique_by=lambda c: c.id, max_size=6))
def test_every_valid_run_yields_schema_valid_json_parseable_junit_and_markdown(
    cases: list[CaseResult],
) -> None:
    run = make_run(*cases)
    document = results_document(run)  # raises if the schema and the model disagree
    assert RunResult.model_validate(json.loads(json.dumps(document))) == run
    xml = ET.tostring(junit_tree(run), encoding="unicode")
    JUNIT_SCHEMA.validate(xml)
    assert ET.fromstring(xml).get("tests") == str(len(cases))
    text = markdown_report(run)
    for failed in run.failures():
        assert f"<code>{failed.id}</code>" in text
    TerminalReporter(io.StringIO(), environ={}).summary(run)


def test_warnings_are_counted_and_shown_in_every_format(tmp_path: Path) -> None:
    """A warning (an unknown event field, KD-EVT-6) never fails a case, but every report says it."""
    warning = "event turn_started carries an unknown field 'x_extra' (KD-EVT-6)"
    run = make_run(case("a/b", "passed", warnings=[warning]), case("a/c"))
    assert run.summary.warnings == 1
    stream = io.StringIO()
    TerminalReporter(stream).summary(run)
    terminal = stream.getvalue()
    assert "2 passed, 0 unsupported, 0 failed, 0 errored, 1 warning" in terminal
    assert f"a/b: {warning}" in terminal
    markdown = markdown_report(run)
    assert "1 warning" in markdown
    assert "## Warnings" in markdown
    assert warning in markdown
    junit = ET.tostring(junit_tree(run), encoding="unicode")
    assert f"warning (tolerated, never a failure): {warning}" in junit
    assert '<property name="warnings" value="1" />' in junit
    path = tmp_path / "r.json"
    write_json(run, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["summary"]["warnings"] == 1
    assert document["cases"][0]["warnings"] == [warning]
    from relavium_conformance._report.html import compliance_page

    page = compliance_page([run])
    assert '<details class="warnings" data-count="1">' in page
    assert "x_extra" in page
    assert "1 warning" in page
