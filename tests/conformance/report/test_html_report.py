"""The compliance page in a real browser: headless Chromium renders it, and the rendered DOM is checked
(counts, a failing clause's diff, no console error), and a screenshot is taken.

The browser is driven through its command line (``--dump-dom``, ``--screenshot``) in a subprocess: no
browser-automation dependency.  ``.ci/run`` installs Debian's ``chromium-headless-shell`` where ``apt-get``
exists; the browser tests are skipped, with that reason, only where no Chromium binary is found.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from test_report_diffs import _prompt_editing_factory

from relavium_conformance._cli import main
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.html import compliance_page
from relavium_conformance._report.results import ClauseStatus, FailureKind, RunResult
from relavium_conformance._report.writers import read_json, write_json
from relavium_conformance._run.runner import run_cases
from relavium_conformance._wire.adapters import InProcessAdapter

_BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "chrome")
BROWSER = next((found for name in _BROWSERS if (found := shutil.which(name))), None)
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium binary found (apt-get install chromium-headless-shell)"
)
SELECTED = ("vectors/export/turns", "lifecycle/abort-idle-noop", "lifecycle/plain-turn-event-order")


def _browser(tmp: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    command = [
        BROWSER,
        "--headless",
        "--no-sandbox",  # the tests may run as root (CI does)
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *arguments,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def _console_messages(stderr: str) -> list[str]:
    """Every console message and uncaught exception the page produced, from Chromium's log.

    The headless shell logs each console message at INFO level whatever its level, so the check is
    stricter than "no error": the page writes nothing to the console at all.
    """
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class _Dom(HTMLParser):
    """The rendered elements that carry data- attributes, and the text inside each <pre class="diff">."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.body: dict[str, str] = {}
        self.diffs: list[str] = []
        self._in_diff = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.body = attributes
        if any(k.startswith("data-") for k in attributes):
            self.elements.append((tag, attributes))
        if tag == "pre" and "diff" in attributes.get("class", "").split():
            self._in_diff += 1
            self.diffs.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._in_diff:
            self._in_diff -= 1

    def handle_data(self, data: str) -> None:
        if self._in_diff:
            self.diffs[-1] += data


def _runs(folder: Path) -> list[Path]:
    by_id = {case.id: case for case in load_cases()}
    cases = [by_id[case_id] for case_id in SELECTED]
    paths = []
    for name, factory in (
        ("reference", ReferenceImplementation),
        ("broken", _prompt_editing_factory),  # a multi-line text differs: the page shows its diff
    ):
        run = asyncio.run(run_cases(InProcessAdapter(name, factory), cases, snapshots=False)).run
        path = folder / f"{name}.json"
        write_json(run, path)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunResult]]:
    folder = tmp_path_factory.mktemp("page")
    paths = _runs(folder)
    out = folder / "compliance.html"
    code = main(["report", *map(str, paths), "--html", str(out), "--badges", str(folder / "badges")])
    assert code == 0
    return out, [read_json(path) for path in paths]


def test_the_page_is_self_contained(page: tuple[Path, list[RunResult]]) -> None:
    text = page[0].read_text(encoding="utf-8")
    for reference in ("http://", "https://", "<link", "src="):
        assert reference not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert (page[0].parent / "badges" / "relavium-reference.svg").read_text().startswith("<svg")


def test_every_value_is_escaped() -> None:
    run = asyncio.run(
        run_cases(
            InProcessAdapter("x", ReferenceImplementation),
            [c for c in load_cases() if c.id == "lifecycle/abort-idle-noop"],
            snapshots=False,
        )
    ).run
    named = run.model_copy(
        update={"implementation": run.implementation.model_copy(update={"name": "<script>alert(1)</script>"})}
    )
    text = compliance_page([named])
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


@needs_browser
def test_headless_chromium_renders_the_counts_and_the_diff(
    page: tuple[Path, list[RunResult]], tmp_path: Path
) -> None:
    path, runs = page
    result = _browser(tmp_path, "--dump-dom", path.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = _Dom()
    dom.feed(result.stdout)
    assert _console_messages(result.stderr) == []
    # the page's script ran in the browser: it counted the clause rows it rendered
    clause_rows = [a for tag, a in dom.elements if tag == "tr" and "data-clause" in a]
    assert dom.body.get("data-rendered") == str(len(clause_rows))
    assert len(clause_rows) == len(runs[0].clauses)
    cards = {a["data-name"]: a for tag, a in dom.elements if "implementation" in a.get("class", "").split()}
    for run in runs:
        card = cards[run.implementation.name]
        s = run.summary
        assert (card["data-passed"], card["data-failed"], card["data-total"]) == (
            str(s.passed),
            str(s.failed),
            str(s.total),
        )
    failed_cells = [
        a for tag, a in dom.elements if tag == "td" and a.get("data-status") in ("failed", "kit-choice")
    ]
    assert len(failed_cells) == sum(c.status is ClauseStatus.FAILED for run in runs for c in run.clauses) > 0
    kit_choice = [a for a in failed_cells if a["data-status"] == "kit-choice"]
    assert len(kit_choice) == sum(
        c.status is ClauseStatus.FAILED and c.failure_kind is FailureKind.KIT_CHOICE
        for run in runs
        for c in run.clauses
    )
    failures = [a for tag, a in dom.elements if tag == "details" and a.get("data-case")]
    assert [a["data-case"] for a in failures] == [c.id for run in runs for c in run.failures()]
    assert any(diff.startswith("--- expected\n+++ actual\n@@") for diff in dom.diffs), dom.diffs[:1]


@needs_browser
def test_headless_chromium_takes_a_screenshot(page: tuple[Path, list[RunResult]], tmp_path: Path) -> None:
    shot = tmp_path / "compliance.png"
    result = _browser(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page[0].as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 10_000  # a rendered page, not a blank image


@needs_browser
def test_the_console_check_catches_a_page_that_logs_an_error_or_throws(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("broken " + 1)</script></body></html>')
    result = _browser(tmp_path, "--dump-dom", bad.as_uri())
    assert any('"broken 1"' in line for line in _console_messages(result.stderr)), result.stderr[-2000:]
    throws = tmp_path / "throws.html"
    throws.write_text("<html><body><script>undefinedFunction()</script></body></html>")
    result = _browser(tmp_path, "--dump-dom", throws.as_uri())
    assert any("Uncaught" in line for line in _console_messages(result.stderr)), result.stderr[-2000:]


def test_a_results_file_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"results_version": 1}))
    assert main(["report", str(path), "--html", str(tmp_path / "out.html")]) == 2
    assert not (tmp_path / "out.html").exists()


def _with_unsupported(run: RunResult) -> RunResult:
    """``run`` with one more case, unsupported (the badge must count it)."""
    from relavium_conformance._report.results import CaseResult, CaseStatus

    extra = CaseResult.model_validate(
        {"id": "tools/needs-tools", "title": "t", "status": CaseStatus.UNSUPPORTED, "reason": "needs tools"}
    )
    return RunResult.build(
        implementation=run.implementation,
        cases=[*run.cases, extra],
        catalogue=_catalogue(),
        started_at=run.started_at,
        duration_ms=run.duration_ms,
    )


def _catalogue() -> list[Any]:
    from relavium_conformance._corpus.catalogue import load_catalogue

    return list(load_catalogue().clauses)


def test_the_page_heads_each_implementation_and_folds_what_does_not_apply(
    page: tuple[Path, list[RunResult]],
) -> None:
    """A headline per implementation (never a sum across them), an area overview with counts, the
    not-applicable clauses folded, fixed column widths; the badge counts the unsupported cases."""
    from relavium_conformance._report.html import badge_value

    text = page[0].read_text(encoding="utf-8")
    runs = page[1]
    assert 'id="totals"' not in text  # the old sum of clause counts across implementations
    assert text.count('<tr class="headline-row"') == len(runs)
    areas = {clause.id.rsplit("-", 1)[0] for clause in runs[0].clauses}
    assert text.count('<tr class="overview-row"') == len(areas)
    assert text.count('<table class="matrix"') == len(areas)
    assert text.count("<colgroup>") == len(areas) + 2  # every matrix, the overview and the headline
    assert "table-layout: fixed" in text
    not_applicable = sum(c.status is ClauseStatus.NOT_APPLICABLE for c in runs[0].clauses)
    assert len(re.findall(r'<tr class="clause[^"]* not-applicable-row"', text)) == not_applicable > 0
    for control in ('id="failures-only"', 'id="area-filter"', 'id="search"', 'id="show-not-applicable"'):
        assert control in text
    with_unsupported = _with_unsupported(runs[0])
    s = with_unsupported.summary
    assert badge_value(with_unsupported) == f"{s.passed}/{s.total} passed, 1 unsupported"
    assert s.total == s.passed + s.failed + s.errored + 1


@needs_browser
@pytest.mark.parametrize(
    ("fragment", "shown"),
    [
        ("", lambda rows: [r for r in rows if r["applicable"]]),
        ("#na=1", lambda rows: rows),
        ("#failing=1", lambda rows: [r for r in rows if r["failing"]]),
        (
            "#area=AS-LIFE",
            lambda rows: [r for r in rows if r["applicable"] and r["id"].startswith("AS-LIFE-")],
        ),
        ("#search=abort", lambda rows: [r for r in rows if r["applicable"] and "abort" in r["text"]]),
    ],
)
def test_headless_chromium_applies_the_filters(
    page: tuple[Path, list[RunResult]], tmp_path: Path, fragment: str, shown: Any
) -> None:
    """The filters run in the browser (set here from the link's fragment): the rows left visible are
    exactly those each filter keeps."""
    path, _runs_read = page
    result = _browser(tmp_path, "--dump-dom", path.as_uri() + fragment)
    assert result.returncode == 0, result.stderr[-2000:]
    assert _console_messages(result.stderr) == []
    dom = _Dom()
    dom.feed(result.stdout)
    rows = [
        {
            "id": a["data-clause"],
            "text": a["data-text"],
            "failing": "has-failure" in a["class"].split(),
            "applicable": "not-applicable-row" not in a["class"].split(),
        }
        for tag, a in dom.elements
        if tag == "tr" and "data-clause" in a
    ]
    expected = shown(rows)
    assert expected
    assert dom.body.get("data-shown") == str(len(expected)), fragment
