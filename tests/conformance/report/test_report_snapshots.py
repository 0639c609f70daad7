"""Snapshots (syrupy) of every rendered report of one fixed run: terminal, Markdown, JUnit and HTML.

They live in ``tests/conformance/__snapshots__/``, apart from the language-neutral golden corpus in
``fixtures/``; update them with ``pytest --snapshot-update`` and review the diff like code.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from syrupy.assertion import SnapshotAssertion
from test_reports import mixed_run

from relavium_conformance._report.html import badge_svg, compliance_page
from relavium_conformance._report.results import (
    BaselineComparison,
    CorpusInfo,
    RunContext,
    RunResult,
    StaleEntry,
    StaleWhy,
)
from relavium_conformance._report.writers import TerminalReporter, junit_tree, markdown_report

_HASH = "sha256:" + "0" * 64


def fixed_run() -> RunResult:
    run = mixed_run().with_context(
        RunContext(
            adapter="stdio:./acme-adapter",
            selection=("lifecycle", "turns/*"),
            spec_revision=_HASH,
            corpus=CorpusInfo(version="0.0.test", content_hash=_HASH),
            protocol_version="1.0",
        )
    )
    return run.with_baseline(
        BaselineComparison(
            file="known.yaml",
            new_failures=("turns/tool-loop",),
            known_failures=("lifecycle/abort-idle-is-noop",),
            stale_entries=(StaleEntry(case="turns/fixed", why=StaleWhy.PASSES),),
        )
    )


def test_terminal(snapshot: SnapshotAssertion) -> None:
    stream = io.StringIO()
    reporter = TerminalReporter(stream, environ={}, colour="never")
    run = fixed_run()
    for case in run.cases:
        reporter.on_case_start(case.id)
        reporter.on_case_end(case)
    reporter.summary(run)
    assert stream.getvalue() == snapshot


def test_markdown(snapshot: SnapshotAssertion) -> None:
    assert markdown_report(fixed_run(), full_results="results.json") == snapshot


def test_junit(snapshot: SnapshotAssertion) -> None:
    tree = ET.ElementTree(junit_tree(fixed_run()))
    ET.indent(tree)
    assert ET.tostring(tree.getroot(), encoding="unicode") == snapshot


def test_html_and_badge(snapshot: SnapshotAssertion) -> None:
    run = fixed_run()
    assert compliance_page([run, mixed_run()]) == snapshot(name="page")
    assert badge_svg(run) == snapshot(name="badge")
