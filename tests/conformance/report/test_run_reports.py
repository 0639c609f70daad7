"""A real run of a deliberately failing adapter (docs/examples/echo-adapter.mjs) through every report:
whole values, valid JUnit, Markdown under GitHub's cap, -v progress, --trace, and what was run."""

from __future__ import annotations

import io
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import junitparser
import pytest
import xmlschema

from relavium_conformance._cli import main
from relavium_conformance._report.markdown import MARKDOWN_LIMIT, markdown_report
from relavium_conformance._report.results import CaseResult, RunResult
from relavium_conformance._report.terminal import TerminalReporter, colour_wanted
from relavium_conformance._report.writers import read_json, results_validator
from relavium_conformance._version import PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[3]
ECHO = f"stdio:node {ROOT / 'docs' / 'examples' / 'echo-adapter.mjs'}"


class EchoRun:
    def __init__(self, folder: Path, stdout: str, code: int) -> None:
        self.folder, self.stdout, self.code = folder, stdout, code
        self.document: dict[str, Any] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        self.run: RunResult = read_json(folder / "results.json")


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> EchoRun:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the echo adapter example cannot run")
    folder = tmp_path_factory.mktemp("echo")
    out = io.StringIO()
    argv = ["run", "--adapter", ECHO, "-v", "--color", "never"]
    argv += ["--json", str(folder / "results.json"), "--junit", str(folder / "junit.xml")]
    argv += ["--markdown", str(folder / "summary.md"), "--trace", str(folder / "trace.jsonl")]
    with redirect_stdout(out):
        code = main(argv)
    return EchoRun(folder, out.getvalue(), code)


def _values(document: dict[str, Any]) -> Iterator[Any]:
    for case in document["cases"]:
        for difference in case["differences"]:
            yield difference["expected"]
            yield difference["actual"]


def test_results_hold_no_cut_values(echo: EchoRun) -> None:
    assert echo.code == 1
    assert echo.run.failures()
    results_validator().validate(echo.document)
    values = list(_values(echo.document))
    strings = [v for v in values if isinstance(v, str)]
    # the old writer stored a long value as a cut string of JSON ending in "..."
    assert not [s for s in strings if s.endswith("...") and s[:1] in "[{"]
    long = [v for v in values if len(json.dumps(v)) > 300]
    assert long, "a run of the echo adapter has long values: they must be stored whole"
    assert any(isinstance(v, list | dict) for v in long)


def test_junit_validates_against_junit_10_and_junitparser_counts_it(echo: EchoRun) -> None:
    path = echo.folder / "junit.xml"
    xmlschema.XMLSchema(ROOT / "schemas" / "junit-10.xsd").validate(str(path))
    xml = junitparser.JUnitXml.fromfile(str(path))
    s = echo.run.summary
    assert sum(suite.tests for suite in xml) == s.total
    assert sum(suite.failures for suite in xml) == s.failed
    assert sum(suite.errors for suite in xml) == s.errored
    assert sum(suite.skipped for suite in xml) == s.unsupported
    root = ET.parse(path).getroot()
    assert all(suite.get("file") for suite in root.iter("testsuite"))


def test_markdown_stays_under_githubs_limit_and_names_every_failed_clause(echo: EchoRun) -> None:
    text = (echo.folder / "summary.md").read_text(encoding="utf-8")
    assert len(text) < MARKDOWN_LIMIT
    assert "<details>" in text
    failed_clauses = text.split("### Failed clauses", 1)[1].split("###", 1)[0]
    for clause in echo.run.clauses:
        if clause.status.value == "failed":
            assert f"**{clause.id}**" in failed_clauses


def test_markdown_of_every_capability_declared_still_fits() -> None:
    # many failures with long values: the detailed blocks give way to one-line entries, then to a count
    big = {"text": "z" * 3000}
    cases = [
        CaseResult.model_validate(
            {
                "id": f"lifecycle/case-{i:03d}",
                "title": "t" * 100,
                "status": "failed",
                "clauses": ["AS-LIFE-001"],
                "reason": "r" * 250,
                "differences": [
                    {"path": f"rows[{j}]", "expected": big, "actual": None, "message": "missing item"}
                    for j in range(20)
                ],
            }
        )
        for i in range(400)
    ]
    from relavium_conformance._corpus.catalogue import load_catalogue
    from relavium_conformance._report.results import ImplementationInfo

    run = RunResult.build(
        implementation=ImplementationInfo(name="big", adapter="stdio"),
        cases=cases,
        catalogue=load_catalogue().clauses,
        started_at=echo_time(),
        duration_ms=1.0,
    )
    text = markdown_report(run, full_results="results.json")
    assert len(text) <= MARKDOWN_LIMIT
    assert "more failed case(s) left out" in text
    assert "`results.json`" in text


def echo_time() -> Any:
    from datetime import UTC, datetime

    return datetime(2026, 12, 1, tzinfo=UTC)


def test_verbose_names_each_case_as_it_starts_and_ends(echo: EchoRun) -> None:
    lines = echo.stdout.splitlines()
    total = echo.run.summary.total
    starts = [line for line in lines if " START " in line]
    assert len(starts) == total
    assert starts[0].startswith(f"[1/{total}] START ")
    for case in echo.run.cases[:5]:
        start = lines.index(next(line for line in lines if line.endswith(f"START {case.id}: {case.title}")))
        assert f" {case.id} (" in lines[start + 1]  # its end follows its start: one case at a time
    assert "\x1b[" not in echo.stdout  # --color never


def test_trace_has_every_message_with_timestamps_and_the_case_id(echo: EchoRun) -> None:
    lines = [json.loads(line) for line in (echo.folder / "trace.jsonl").read_text().splitlines()]
    assert f"trace: {len(lines)} messages written" in echo.stdout
    assert lines[0]["message"]["method"] == "hello"
    assert all(line["at"].endswith("Z") and line["ms"] >= 0 for line in lines)
    creates = [line for line in lines if line["message"].get("method") == "session.create"]
    attempted = [c for c in echo.run.cases if c.status.value != "unsupported" and c.area != "vectors"]
    # every attempted case created its session, and only those did; a two-session case creates its
    # second session as ``<handle>.<name>`` beside the first, in the same case
    assert sorted({line["case"] for line in creates}) == sorted(c.id for c in attempted)
    handles = [(line["case"], line["message"]["params"]["handle"]) for line in creates]
    mains = {case: handle for case, handle in handles if "." not in handle}
    assert len(mains) == len(attempted)
    for case, handle in handles:
        assert handle == mains[case] or handle.startswith(mains[case] + ".")
    for line in creates:
        assert line["message"]["params"]["case"]["id"] == line["case"]  # the implementation is told the case


def test_results_say_what_was_run(echo: EchoRun) -> None:
    context = echo.run.context
    assert context is not None
    assert context.adapter == ECHO
    assert context.selection == ()
    assert context.spec_revision.startswith("sha256:")
    assert context.corpus.content_hash.startswith("sha256:")
    assert context.protocol_version == PROTOCOL_VERSION
    assert echo.run.implementation.adapter == "stdio"
    assert echo.run.implementation.capabilities == ("core",)


# --- colour conventions --------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("tty", "mode", "environ", "expected"),
    [
        (True, "auto", {}, True),
        (False, "auto", {}, False),
        (True, "auto", {"NO_COLOR": "1"}, False),
        (True, "auto", {"NO_COLOR": ""}, True),  # an empty NO_COLOR is unset
        (False, "auto", {"FORCE_COLOR": "1"}, True),
        (False, "auto", {"FORCE_COLOR": "0"}, False),
        (True, "auto", {"TERM": "dumb"}, False),
        (True, "auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
        (False, "always", {"NO_COLOR": "1"}, True),  # the flag decides outright
        (True, "never", {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour_follows_the_conventions(
    tty: bool, mode: Any, environ: dict[str, str], expected: bool
) -> None:
    stream = _Tty() if tty else io.StringIO()
    assert colour_wanted(stream, mode, environ) is expected
    assert TerminalReporter(stream, environ=environ, colour=mode).colour is expected


def test_markdown_of_an_all_failing_run_is_cut_cleanly_under_60000() -> None:
    """Every case failing on every clause: the clause lists alone pass the cap. The cut falls between
    lines, room is left for a wrapper under GitHub's 65,536, and the last line says what is missing."""
    from relavium_conformance._corpus.catalogue import load_catalogue
    from relavium_conformance._report.results import ImplementationInfo

    catalogue = load_catalogue().clauses
    testable = [c.id for c in catalogue if c.status in ("testable", "kit-defined")]
    cases = [
        CaseResult.model_validate(
            {
                "id": f"lifecycle/an-all-failing-case-with-a-long-name-{i:03d}",
                "title": "t",
                "status": "errored",
                "clauses": testable,
                "reason": "the implementation exited",
            }
        )
        for i in range(314)
    ]
    run = RunResult.build(
        implementation=ImplementationInfo(name="all-failing", adapter="stdio"),
        cases=cases,
        catalogue=catalogue,
        started_at=echo_time(),
        duration_ms=1.0,
    )
    whole = markdown_report(run, limit=10**9, full_results="out/results.json")
    assert len(whole) > MARKDOWN_LIMIT
    text = markdown_report(run, full_results="out/results.json")
    assert len(text) <= MARKDOWN_LIMIT == 60_000
    assert len("<!-- sticky-comment marker -->\n" * 100 + text) < 65_536
    body, note = text.rstrip("\n").rsplit("\n", 1)
    assert note.startswith("... the last ")
    assert note.endswith(
        "left out to stay under 60,000 characters; the whole report is in the JSON results "
        "(`out/results.json`)."
    )
    kept = body.rstrip("\n").removesuffix("</details>").rstrip("\n")
    assert kept.splitlines()[-1] in whole.splitlines()  # a clean cut: the last line kept is whole
    assert text.count("<details>") == text.count("</details>")
