"""The Markdown summary, for a CI job summary or a pull-request comment.

GitHub refuses a comment or a job summary over 65,536 characters, so the report has a hard cap of 60,000
(:data:`MARKDOWN_LIMIT`, leaving room for a wrapper): the header, the area table and the clause lists
come first; the failed cases fill what is left: every case gets at least one line, and in order as many as
fit get a collapsible ``<details>`` block with their clauses (and summaries), reason and differences; only
if even the one-line entries do not fit are the last cases counted instead, with a pointer to the full
JSON results.  Under a baseline the new failures come first and the known ones are collapsed to a count.
Should the header and clause lists alone pass the cap, the text is cut at a line boundary, an open code
fence or ``<details>`` block is closed, and a last line says what was left out and where the whole is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.atomic import write_text_atomically
from relavium_conformance._report.results import (
    BaselineComparison,
    CaseResult,
    CaseStatus,
    ClauseResult,
    ClauseStatus,
    RunResult,
    exit_code,
)
from relavium_conformance._report.wording import (
    area_rows,
    baseline_note,
    clause_label,
    clause_summary,
    counts_line,
    difference_lines,
    exit_line,
    failure_kind,
    ordered_failures,
    printable,
    warning_lines,
)

__all__ = ["MARKDOWN_LIMIT", "markdown_report", "write_github_summary", "write_markdown"]

MARKDOWN_LIMIT = 60_000
"""The report's cap, in characters: under GitHub's 65,536 for a comment or a job summary, with room for
what a wrapper adds (a sticky-comment marker, a heading of its own)."""

_DIFFERENCES_SHOWN = 8  # per case, in the detailed block; the rest are counted
_WARNINGS_SHOWN = 50  # in the warnings section; the rest are counted


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def _code(text: str) -> str:
    """``text`` as an inline code span, safe against backticks inside it."""
    flat = re.sub(r"\s+", " ", text)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _fenced(text: str, info: str = "text") -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _status_words(case: CaseResult, baseline: BaselineComparison | None) -> str:
    words = [case.status.value]
    kind = failure_kind(case)
    if kind:
        words.append(f"{kind} failure")
    note = baseline_note(baseline, case)
    if note:
        words.append(note)
    return ", ".join(words)


def _case_block(case: CaseResult, baseline: BaselineComparison | None) -> str:
    lines = [
        "<details>",
        f"<summary><code>{_html(case.id)}</code>: {_html(_cell(case.title))} "
        f"({_html(_status_words(case, baseline))})</summary>",
        "",
    ]
    lines += [f"- {_cell(clause_label(clause_id))}" for clause_id in case.clauses]
    lines += [f"- Reason: {_cell(printable(case.reason or ''))}", ""]
    if case.differences:
        body: list[str] = []
        for difference in case.differences[:_DIFFERENCES_SHOWN]:
            body += difference_lines(difference)
        hidden = len(case.differences) - _DIFFERENCES_SHOWN
        if hidden > 0:
            body.append(f"... and {hidden} more difference(s) in the JSON results")
        lines += [_fenced("\n".join(body), "diff" if any(d.diff for d in case.differences) else "text"), ""]
    if case.stderr_tail:
        lines += ["stderr (tail):", "", _fenced(printable(case.stderr_tail)), ""]
    lines += ["</details>", ""]
    return "\n".join(lines)


def _case_line(case: CaseResult, baseline: BaselineComparison | None) -> str:
    return (
        f"- {_code(case.id)} ({_status_words(case, baseline)}): {_cell(printable(case.reason or ''))}"
        f" [{', '.join(case.clauses)}]\n"
    )


def _head(run: RunResult) -> str:
    impl = run.implementation
    title = impl.name + (f" {impl.version}" if impl.version else "")
    facts = [f"kit {run.kit.name} {run.kit.version}", f"adapter {impl.adapter}"]
    if impl.language:
        facts.append(f"language {impl.language}")
    facts += [f"started {run.started_at.isoformat()}", f"{run.duration_ms / 1000:.2f} s"]
    lines = [f"# Conformance results: {_cell(title)}", "", " · ".join(facts), ""]
    lines += [f"**{exit_line(run, exit_code(run))}**: {counts_line(run)} of {run.summary.total} cases.", ""]
    if impl.capabilities:
        lines += ["Capabilities: " + ", ".join(_code(c) for c in impl.capabilities), ""]
    context = getattr(run, "context", None)
    if context is not None:
        selection = ", ".join(_code(p) for p in context.selection) or "all cases"
        lines += [
            f"Spec revision {_code(context.spec_revision)} · corpus {_code(context.corpus.version)} "
            f"({_code(context.corpus.content_hash)}) · protocol {_code(context.protocol_version)} · "
            f"selection {selection}",
            "",
        ]
    lines += [
        "## Summary by area",
        "",
        "| Area | Passed | Failed | Errored | Unsupported | Total |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for area, passed, failed, errored, unsupported, total in area_rows(run):
        lines.append(f"| {_cell(area)} | {passed} | {failed} | {errored} | {unsupported} | {total} |")
    s = run.summary
    lines += [f"| **Total** | {s.passed} | {s.failed} | {s.errored} | {s.unsupported} | {s.total} |", "", ""]
    return "\n".join(lines)


def _baseline_section(baseline: BaselineComparison, known: list[CaseResult]) -> str:
    lines = ["## Baseline", "", f"File: {_code(baseline.file or '(unnamed)')}", ""]
    lines.append(
        f"- New failures: {len(baseline.new_failures)}"
        + (": " + ", ".join(_code(c) for c in baseline.new_failures) if baseline.new_failures else "")
    )
    stale = ", ".join(f"{_code(entry.case)} ({entry.why.value})" for entry in baseline.stale_entries)
    lines.append(f"- Stale entries: {len(baseline.stale_entries)}" + (f": {stale}" if stale else ""))
    lines.append(f"- Known failures: {len(baseline.known_failures)} (as the baseline expects)")
    if baseline.not_run:
        lines.append("- Not run this time: " + ", ".join(_code(c) for c in baseline.not_run))
    lines.append("")
    if known:
        lines += [
            "<details>",
            f"<summary>{len(known)} known failure(s)</summary>",
            "",
            *(f"- {_code(case.id)}: {_cell(printable(case.reason or ''))}" for case in known),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines) + "\n"


def _failed_clause_line(clause: ClauseResult, statuses: dict[str, CaseStatus]) -> str:
    failing = getattr(clause, "failed_by", ()) or [c for c in clause.cases if statuses.get(c) in _FAILING]
    others = [c for c in clause.cases if c not in failing]
    parts = [f"{_code(case)} ({statuses[case].value})" for case in failing if case in statuses]
    summary = _cell(clause_summary(clause.id)).rstrip(".")
    line = f"- **{clause.id}**" + (f" ({summary})" if summary else "") + ": " + ", ".join(parts)
    kind = getattr(clause, "failure_kind", None)
    if kind is not None:
        line += f" ({getattr(kind, 'value', kind)} failure)"
    if others:
        line += f"; {len(others)} other citing case(s) passed or were unsupported"
    return line


_FAILING = (CaseStatus.FAILED, CaseStatus.ERRORED)


def _warnings_section(run: RunResult) -> str:
    """The run's warnings (tolerated observations, never a failure), folded; empty when there are none."""
    warnings = warning_lines(run)
    if not warnings:
        return ""
    lines = [
        "## Warnings",
        "",
        "<details>",
        f"<summary>{len(warnings)} warning(s), never a failure</summary>",
        "",
    ]
    lines += [f"- {_code(case_id)}: {_cell(warning)}" for case_id, warning in warnings[:_WARNINGS_SHOWN]]
    if len(warnings) > _WARNINGS_SHOWN:
        lines.append(f"- ... and {len(warnings) - _WARNINGS_SHOWN} more in the JSON results")
    return "\n".join([*lines, "", "</details>", "", ""])


def _tail(run: RunResult) -> str:
    lines: list[str] = []
    skipped = [case for case in run.cases if case.status is CaseStatus.UNSUPPORTED]
    if skipped:
        lines += ["<details>", f"<summary>{len(skipped)} unsupported case(s)</summary>", ""]
        lines += [f"- {_code(case.id)}: {_cell(case.reason or '')}" for case in skipped]
        lines += ["", "</details>", ""]
    if run.clauses:
        lines += ["## Clauses", "", "| Status | Clauses |", "| --- | ---: |"]
        for status in ClauseStatus:
            lines.append(f"| {status.value} | {sum(c.status is status for c in run.clauses)} |")
        lines.append("")
        statuses = {case.id: case.status for case in run.cases}
        failed = [clause for clause in run.clauses if clause.status is ClauseStatus.FAILED]
        if failed:
            lines += ["### Failed clauses", "", "Each failed clause, with the citing cases that failed.", ""]
            lines += [_failed_clause_line(clause, statuses) for clause in failed]
            lines.append("")
        untested = [clause.id for clause in run.clauses if clause.status is ClauseStatus.UNTESTED]
        lines += ["### Untested clauses", ""]
        if untested:
            lines += ["<details>", f"<summary>{len(untested)} untested clause(s)</summary>", ""]
            lines += [", ".join(untested), "", "</details>"]
        else:
            lines.append("None.")
        lines.append("")
    return "\n".join(lines)


def markdown_report(run: RunResult, *, limit: int = MARKDOWN_LIMIT, full_results: str | None = None) -> str:
    """The Markdown summary, at most ``limit`` characters (see the module's docstring).

    ``full_results`` names the JSON results file for the pointer shown when cases had to be left out.
    """
    shown, known = ordered_failures(run)
    head, tail = _head(run), _warnings_section(run) + _tail(run)
    if run.baseline is not None:
        tail = _baseline_section(run.baseline, known) + tail
    pointer = f"the JSON results ({_code(full_results)})" if full_results else "the JSON results (`--json`)"
    reserve = 400  # the omission note, the section heading and the final newline
    budget = limit - len(head) - len(tail) - reserve
    heading = "## New failures" if run.baseline is not None else "## Failed and errored cases"
    # every failure gets at least its one line; the detailed blocks take what is left, in order
    lines = [_case_line(case, run.baseline) for case in shown]
    omitted = 0
    while lines and sum(map(len, lines)) > budget:
        lines.pop()
        omitted += 1
    spare = budget - sum(map(len, lines))
    parts: list[str] = []
    for case, line in zip(shown, lines, strict=False):
        block = _case_block(case, run.baseline)
        if len(block) - len(line) <= spare:
            spare -= len(block) - len(line)
            parts.append(block)
        else:
            parts.append(line)
    body = ""
    if shown:
        body = f"{heading} ({len(shown)})\n\n" + "".join(parts)
        if omitted:
            body += (
                f"\n... {omitted} more failed case(s) left out to stay under {limit:,} characters; "
                f"every case, with its whole values, is in {pointer}.\n"
            )
        body += "\n"
    elif run.baseline is not None and run.failures():
        body = "## New failures (0)\n\nNone: every failure is a known one.\n\n"
    text = (head + body + tail).rstrip() + "\n"
    if len(text) > limit:  # only a huge header or clause list gets here: cut, and say so
        text = _cut(text, limit, pointer)
    return text


def _cut(text: str, limit: int, pointer: str) -> str:
    """``text`` cut at a line boundary to fit ``limit`` with what closes an open code fence or
    ``<details>`` block, and a last line saying what was left out and where the whole report is."""
    room = limit - 600  # the closers and the note
    kept = text[: text.rfind("\n", 0, room) + 1]
    left_out = text[len(kept) :]
    closers = ""
    if sum(line.startswith("```") for line in kept.splitlines()) % 2:
        closers += "```\n"
    closers += "</details>\n" * max(0, kept.count("<details>") - kept.count("</details>"))
    sections = re.findall(r"^## (.+)$", kept, flags=re.MULTILINE)
    where = f" of the section {sections[-1]!r} and what follows" if sections else ""
    lines = left_out.count("\n") + (0 if left_out.endswith("\n") else 1)
    note = (
        f"\n... the last {lines:,} line(s){where} left out to stay under {limit:,} characters; "
        f"the whole report is in {pointer}.\n"
    )
    return kept + closers + note


def write_markdown(run: RunResult, path: Path, *, full_results: str | None = None) -> None:
    write_text_atomically(path, markdown_report(run, full_results=full_results))


def write_github_summary(
    run: RunResult, *, environ: Mapping[str, str] | None = None, full_results: str | None = None
) -> Path:
    """Append the Markdown summary to the file GitHub Actions names in ``GITHUB_STEP_SUMMARY``."""
    target = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not target:
        raise KitUsageError("--github-summary: GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it)")
    path = Path(target)
    with path.open("a", encoding="utf-8") as stream:
        stream.write(markdown_report(run, full_results=full_results) + "\n")
    return path
