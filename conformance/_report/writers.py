"""Reports of one run: JSON results, JUnit XML, a Markdown summary, and the terminal.

Every report is rendered from a finished :class:`RunResult`, except the terminal's progress line, which the
runner feeds case by case through :class:`TerminalReporter`.  The JSON document is validated against
``schemas/results.schema.json`` before it is written, so a file the kit writes always matches its schema.
"""

from __future__ import annotations

import io
import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, TextIO

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitError
from relavium_conformance._report.atomic import write_bytes_atomically, write_text_atomically
from relavium_conformance._report.results import (
    BaselineComparison,
    CaseResult,
    CaseStatus,
    ClauseStatus,
    Difference,
    ExitCode,
    RunResult,
    area_of,
    exit_code,
)

__all__ = [
    "STATUS_CHARS",
    "TerminalReporter",
    "exit_line",
    "junit_tree",
    "markdown_report",
    "read_json",
    "results_document",
    "results_validator",
    "write_github_summary",
    "write_json",
    "write_junit",
    "write_markdown",
]

STATUS_CHARS: Mapping[CaseStatus, str] = {
    CaseStatus.PASSED: ".",
    CaseStatus.FAILED: "F",
    CaseStatus.ERRORED: "E",
    CaseStatus.UNSUPPORTED: "U",
}

_EXIT_WORDS: Mapping[ExitCode, str] = {
    ExitCode.OK: "OK",
    ExitCode.FAILED: "FAILED",
    ExitCode.USAGE: "USAGE ERROR",
    ExitCode.NOT_STARTED: "IMPLEMENTATION NOT STARTED",
    ExitCode.NO_CASES: "NO CASES SELECTED",
    ExitCode.INTERRUPTED: "INTERRUPTED",
}


# --- shared wording ----------------------------------------------------------------------------------


def _value(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _difference_line(difference: Difference) -> str:
    return (
        f"at {difference.path}: expected {_value(difference.expected)}, "
        f"got {_value(difference.actual)} ({difference.message})"
    )


def _counts_line(run: RunResult) -> str:
    s = run.summary
    split = f" ({s.spec_failures} spec, {s.kit_choice_failures} kit-choice)" if s.failed else ""
    return f"{s.passed} passed, {s.unsupported} unsupported, {s.failed} failed{split}, {s.errored} errored"


def exit_line(run: RunResult, code: ExitCode | None = None) -> str:
    """One line naming the exit status and why: ``exit 1: FAILED (2 new failures, 1 stale entry)``."""
    code = exit_code(run) if code is None else code
    why: list[str] = []
    gate = run.capabilities
    if code is ExitCode.FAILED and gate is not None and gate.missing:
        why.append(
            f"required capabilit{'ies' if len(gate.missing) != 1 else 'y'} not declared: "
            + ", ".join(gate.missing)
        )
    if code is ExitCode.FAILED:
        if run.baseline is None and not run.failures():
            pass
        elif run.baseline is None:
            n = len(run.failures())
            why.append(f"{n} failed or errored case{'s' if n != 1 else ''}")
        else:
            n_new, n_stale = len(run.baseline.new_failures), len(run.baseline.stale_entries)
            if n_new:
                why.append(f"{n_new} new failure{'s' if n_new != 1 else ''}")
            if n_stale:
                why.append(f"{n_stale} stale baseline entr{'ies' if n_stale != 1 else 'y'}")
    elif code is ExitCode.OK and run.baseline is not None and run.baseline.known_failures:
        n = len(run.baseline.known_failures)
        why.append(f"{n} known failure{'s' if n != 1 else ''} in the baseline")
    elif code is ExitCode.NOT_STARTED:
        why.append("every attempted case failed to start the implementation")
    suffix = f" ({', '.join(why)})" if why else ""
    return f"exit {int(code)}: {_EXIT_WORDS[code]}{suffix}"


def _area_rows(run: RunResult) -> list[tuple[str, int, int, int, int, int]]:
    rows = []
    for area in run.areas():
        statuses = [case.status for case in run.cases if case.area == area]
        rows.append(
            (
                area,
                statuses.count(CaseStatus.PASSED),
                statuses.count(CaseStatus.FAILED),
                statuses.count(CaseStatus.ERRORED),
                statuses.count(CaseStatus.UNSUPPORTED),
                len(statuses),
            )
        )
    return rows


def _baseline_note(baseline: BaselineComparison, case: CaseResult) -> str:
    if case.id in baseline.known_failures:
        return "known failure"
    if case.id in baseline.new_failures:
        return "not in the baseline"
    return ""


# --- JSON --------------------------------------------------------------------------------------------


@cache
def results_validator() -> Draft202012Validator:
    """A validator for ``schemas/results.schema.json`` (formats checked)."""
    schema = json.loads((schemas_dir() / "results.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def results_document(run: RunResult) -> dict[str, Any]:
    """The JSON-ready results document, validated against its schema.

    Raises :class:`KitError` if the document does not match the schema (a defect of the kit).
    """
    document: dict[str, Any] = run.model_dump(mode="json")
    error = best_match(results_validator().iter_errors(document))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise KitError(f"results document does not match results.schema.json at {where}: {error.message}")
    return document


def write_json(run: RunResult, path: Path) -> None:
    """Write ``results.json`` (validated first; nothing is written if validation fails): strict JSON
    (no NaN or infinities, no lone surrogates), written atomically."""
    text = json.dumps(results_document(run), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomically(path, text)


def read_json(path: Path) -> RunResult:
    """Read a results document written by :func:`write_json`."""
    return RunResult.model_validate_json(path.read_text(encoding="utf-8"))


# --- JUnit XML ---------------------------------------------------------------------------------------

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def _printable(text: str) -> str:
    """``text`` without terminal escape sequences; other control characters and lone surrogates become U+FFFD.

    XML 1.0 cannot carry them, UTF-8 cannot encode lone surrogates, and in Markdown they are noise (a
    stderr tail decoded with ``surrogateescape`` may have all three).
    """
    return _CONTROL.sub("\ufffd", _ANSI_ESCAPE.sub("", text))


def _seconds(duration_ms: float) -> str:
    return f"{duration_ms / 1000:.3f}"


def _suite_counts(cases: list[CaseResult]) -> dict[str, str]:
    return {
        "tests": str(len(cases)),
        "failures": str(sum(case.status is CaseStatus.FAILED for case in cases)),
        "errors": str(sum(case.status is CaseStatus.ERRORED for case in cases)),
        "skipped": str(sum(case.status is CaseStatus.UNSUPPORTED for case in cases)),
        "time": _seconds(sum(case.duration_ms for case in cases)),
    }


def _testcase(case: CaseResult) -> ET.Element:
    element = ET.Element(
        "testcase", {"classname": case.area, "name": case.id, "time": _seconds(case.duration_ms)}
    )
    if case.clauses:
        properties = ET.SubElement(element, "properties")
        for clause_id in case.clauses:
            ET.SubElement(properties, "property", {"name": "clause", "value": clause_id})
    reason = _printable(case.reason or "")
    if case.status is CaseStatus.FAILED:
        failure = ET.SubElement(element, "failure", {"message": reason, "type": "failed"})
        failure.text = _printable("\n".join([case.reason or "", *map(_difference_line, case.differences)]))
    elif case.status is CaseStatus.ERRORED:
        error = ET.SubElement(element, "error", {"message": reason, "type": "errored"})
        body = case.reason or ""
        if case.stderr_tail:
            body += "\n--- stderr (tail) ---\n" + case.stderr_tail
        error.text = _printable(body)
    elif case.status is CaseStatus.UNSUPPORTED:
        ET.SubElement(element, "skipped", {"message": f"unsupported: {reason}", "type": "unsupported"})
    return element


def junit_tree(run: RunResult) -> ET.Element:
    """``<testsuites>`` with one ``<testsuite>`` per area and one ``<testcase>`` per case."""
    root = ET.Element("testsuites", {"name": "relavium-conformance", **_suite_counts(list(run.cases))})
    root.set("time", _seconds(run.duration_ms))
    timestamp = run.started_at.isoformat()
    impl = run.implementation
    for area in run.areas():
        cases = [case for case in run.cases if case.area == area]
        suite = ET.SubElement(
            root, "testsuite", {"name": area, "timestamp": timestamp, **_suite_counts(cases)}
        )
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("implementation", impl.name),
            ("implementation.version", impl.version),
            ("implementation.language", impl.language),
            ("adapter", impl.adapter),
            ("kit.version", run.kit.version),
        ):
            if value is not None:
                ET.SubElement(properties, "property", {"name": name, "value": _printable(value)})
        suite.extend(_testcase(case) for case in cases)
    return root


def write_junit(run: RunResult, path: Path) -> None:
    """Write JUnit XML (UTF-8, with an XML declaration)."""
    tree = ET.ElementTree(junit_tree(run))
    ET.indent(tree)
    buffer = io.BytesIO()
    tree.write(buffer, encoding="utf-8", xml_declaration=True)
    write_bytes_atomically(path, buffer.getvalue())


# --- Markdown ----------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def _code(text: str) -> str:
    """``text`` as an inline code span, safe against backticks inside it."""
    flat = re.sub(r"\s+", " ", text)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _code_cell(text: str) -> str:
    return _code(text).replace("|", "\\|")


def _fenced(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def markdown_report(run: RunResult) -> str:
    """The Markdown summary: per-area table, failed and errored cases with differences, untested clauses."""
    impl = run.implementation
    code = exit_code(run)
    title = impl.name + (f" {impl.version}" if impl.version else "")
    lines = [f"# Conformance results: {title}", ""]
    facts = [f"kit {run.kit.name} {run.kit.version}", f"adapter {impl.adapter}"]
    if impl.language:
        facts.append(f"language {impl.language}")
    facts += [f"started {run.started_at.isoformat()}", f"{run.duration_ms / 1000:.2f} s"]
    lines += [" · ".join(facts), ""]
    if impl.capabilities:
        lines += ["Capabilities: " + ", ".join(_code(c) for c in impl.capabilities), ""]
    lines += [f"**{exit_line(run, code)}**: {_counts_line(run)} of {run.summary.total} cases.", ""]

    lines += [
        "## Summary by area",
        "",
        "| Area | Passed | Failed | Errored | Unsupported | Total |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for area, passed, failed, errored, unsupported, total in _area_rows(run):
        lines.append(f"| {_cell(area)} | {passed} | {failed} | {errored} | {unsupported} | {total} |")
    s = run.summary
    lines += [f"| **Total** | {s.passed} | {s.failed} | {s.errored} | {s.unsupported} | {s.total} |", ""]

    if run.baseline is not None:
        lines += _markdown_baseline(run.baseline)

    failures = run.failures()
    if failures:
        lines += ["## Failed and errored cases", ""]
        for case in failures:
            lines += _markdown_case(case, run.baseline)

    skipped = [case for case in run.cases if case.status is CaseStatus.UNSUPPORTED]
    if skipped:
        lines += ["## Unsupported cases", ""]
        lines += [f"- {_code(case.id)}: {_cell(case.reason or '')}" for case in skipped]
        lines.append("")

    lines += _markdown_clauses(run)
    return "\n".join(lines).rstrip() + "\n"


def _markdown_baseline(baseline: BaselineComparison) -> list[str]:
    lines = ["## Baseline", "", f"File: {_code(baseline.file or '(unnamed)')}", ""]
    lines.append(f"- Known failures: {len(baseline.known_failures)}")
    lines.append(
        "- New failures: "
        + (", ".join(_code(c) for c in baseline.new_failures) if baseline.new_failures else "none")
    )
    stale = ", ".join(f"{_code(entry.case)} ({entry.why.value})" for entry in baseline.stale_entries)
    lines.append("- Stale entries: " + (stale or "none"))
    if baseline.not_run:
        lines.append("- Not run this time: " + ", ".join(_code(c) for c in baseline.not_run))
    return [*lines, ""]


def _markdown_case(case: CaseResult, baseline: BaselineComparison | None) -> list[str]:
    lines = [f"### {_code(case.id)}: {_cell(case.title)}", ""]
    status = case.status.value
    note = _baseline_note(baseline, case) if baseline is not None else ""
    lines.append(f"- Status: {status}" + (f" ({note})" if note else ""))
    if case.clauses:
        lines.append("- Clauses: " + ", ".join(case.clauses))
    lines += [f"- Reason: {_cell(case.reason or '')}", ""]
    if case.differences:
        lines += ["| Path | Expected | Actual | Message |", "| --- | --- | --- | --- |"]
        for d in case.differences:
            lines.append(
                f"| {_code_cell(d.path)} | {_code_cell(_value(d.expected))} | "
                f"{_code_cell(_value(d.actual))} | {_cell(d.message)} |"
            )
        lines.append("")
    if case.stderr_tail:
        lines += ["stderr (tail):", "", _fenced(_printable(case.stderr_tail)), ""]
    return lines


def _markdown_clauses(run: RunResult) -> list[str]:
    if not run.clauses:
        return []
    lines = ["## Clauses", "", "| Status | Clauses |", "| --- | ---: |"]
    for status in ClauseStatus:
        count = sum(clause.status is status for clause in run.clauses)
        lines.append(f"| {status.value} | {count} |")
    lines.append("")
    failed = [clause for clause in run.clauses if clause.status is ClauseStatus.FAILED]
    if failed:
        lines += ["### Failed clauses", ""]
        lines += [f"- {c.id}: " + ", ".join(_code(case) for case in c.cases) for c in failed]
        lines.append("")
    untested = [clause.id for clause in run.clauses if clause.status is ClauseStatus.UNTESTED]
    lines += ["### Untested clauses", ""]
    lines += [f"- {clause_id}" for clause_id in untested] if untested else ["None."]
    return [*lines, ""]


def write_markdown(run: RunResult, path: Path) -> None:
    write_text_atomically(path, markdown_report(run))


def write_github_summary(run: RunResult, *, environ: Mapping[str, str] | None = None) -> Path:
    """Append the Markdown summary to the file GitHub Actions names in ``GITHUB_STEP_SUMMARY``."""
    from relavium_conformance._errors import KitUsageError

    target = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not target:
        raise KitUsageError("--github-summary: GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it)")
    path = Path(target)
    with path.open("a", encoding="utf-8") as stream:
        stream.write(markdown_report(run) + "\n")
    return path


# --- terminal ----------------------------------------------------------------------------------------

_COLOURS: Mapping[CaseStatus, str] = {
    CaseStatus.PASSED: "32",
    CaseStatus.FAILED: "31",
    CaseStatus.ERRORED: "31",
    CaseStatus.UNSUPPORTED: "33",
}


class TerminalReporter:
    """Progress while a run goes (one character per case, one line per area) and a summary at its end.

    Colour is used only when ``stream`` is a terminal and ``NO_COLOR`` is unset or empty.  ``environ``
    defaults to ``os.environ`` (tests pass their own).
    """

    def __init__(self, stream: TextIO, *, environ: Mapping[str, str] | None = None) -> None:
        self._stream = stream
        env = os.environ if environ is None else environ
        isatty = getattr(stream, "isatty", None)
        self.colour = bool(isatty and isatty()) and not env.get("NO_COLOR")
        self._area: str | None = None

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def _enter_area(self, area: str) -> None:
        if area != self._area:
            if self._area is not None:
                self._stream.write("\n")
            self._stream.write(f"{area} ")
            self._area = area

    def on_case_start(self, case_id: str) -> None:
        """A case begins: open its area's progress line if it is not the current one."""
        self._enter_area(area_of(case_id))
        self._stream.flush()

    def on_case_end(self, result: CaseResult) -> None:
        """A case ended: one character, ``.`` passed, ``F`` failed, ``E`` errored, ``U`` unsupported."""
        self._enter_area(result.area)
        self._stream.write(self._paint(STATUS_CHARS[result.status], _COLOURS[result.status]))
        self._stream.flush()

    def _end_progress(self) -> None:
        if self._area is not None:
            self._stream.write("\n")
            self._area = None

    def summary(self, run: RunResult) -> None:
        """The per-area table, the failed cases with their first difference, the baseline and exit lines."""
        self._end_progress()
        out = self._stream
        impl = run.implementation
        described = ", ".join(part for part in (impl.version, impl.language, impl.adapter) if part)
        out.write(f"\n== {impl.name} ({described}) ==\n")
        header = ("area", "passed", "failed", "errored", "unsupported", "total")
        rows = [tuple(str(v) for v in row) for row in _area_rows(run)]
        s = run.summary
        rows.append(("total", str(s.passed), str(s.failed), str(s.errored), str(s.unsupported), str(s.total)))
        width = max(len(header[0]), *(len(row[0]) for row in rows))
        widths = [width, *(len(h) for h in header[1:])]
        for row in (header, *rows):
            cells = [
                row[0].ljust(widths[0]),
                *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True)),
            ]
            out.write("  ".join(cells).rstrip() + "\n")

        failures = run.failures()
        if failures:
            out.write("\n")
        for case in failures:
            word = self._paint(case.status.value.upper(), _COLOURS[case.status])
            clauses = f" [{', '.join(case.clauses)}]" if case.clauses else ""
            note = _baseline_note(run.baseline, case) if run.baseline is not None else ""
            note = f" ({note})" if note else ""
            # the implementation's words go through _printable: its escapes must not drive our terminal
            out.write(f"{word} {case.id}{clauses}{note}: {_printable(case.reason or '')}\n")
            if case.differences:
                out.write(f"    {_printable(_difference_line(case.differences[0]))}\n")
                if len(case.differences) > 1:
                    out.write(f"    ... and {len(case.differences) - 1} more difference(s)\n")

        if run.baseline is not None:
            b = run.baseline
            out.write(
                f"\nbaseline {b.file or '(unnamed)'}: {len(b.known_failures)} known, "
                f"{len(b.new_failures)} new, {len(b.stale_entries)} stale\n"
            )
            for entry in b.stale_entries:
                why = "now passes" if entry.why.value == "passes" else "no such case"
                out.write(f"    stale: {entry.case} ({why})\n")

        code = exit_code(run)
        colour = "32" if code is ExitCode.OK else "31"
        out.write(f"\n{_counts_line(run)} in {run.duration_ms / 1000:.2f}s\n")
        out.write(self._paint(exit_line(run, code), colour) + "\n")
        out.flush()
