"""The words every report shares: how a value, a difference, a clause and an exit status read.

Values are whole in ``results.json``; a report shortens a long one for display only, and says so
(``… (+1234 characters; the whole value is in results.json)``), so a reader can never take a cut value for
the real one.  Clause ids are printed with their one-line summary from the catalogue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._report.results import (
    BaselineComparison,
    CaseResult,
    CaseStatus,
    Difference,
    DifferenceForm,
    ExitCode,
    RunResult,
    exit_code,
)

__all__ = [
    "DISPLAY_LIMIT",
    "area_rows",
    "baseline_note",
    "clause_label",
    "clause_summary",
    "counts_line",
    "difference_lines",
    "exit_line",
    "failure_kind",
    "ordered_failures",
    "printable",
    "shown",
    "warning_lines",
]

DISPLAY_LIMIT = 160
"""Characters of a value a report shows before it shortens it (visibly)."""

_EXIT_WORDS: Mapping[ExitCode, str] = {
    ExitCode.OK: "OK",
    ExitCode.FAILED: "FAILED",
    ExitCode.USAGE: "USAGE ERROR",
    ExitCode.NOT_STARTED: "IMPLEMENTATION NOT STARTED",
    ExitCode.NO_CASES: "NOTHING TESTED",
    ExitCode.INTERRUPTED: "INTERRUPTED",
    ExitCode.TERMINATED: "TERMINATED",
}

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences; other control characters and lone surrogates become U+FFFD.

    XML 1.0 cannot carry them, UTF-8 cannot encode lone surrogates, and in a report they are noise (a
    stderr tail decoded with ``surrogateescape`` may have all three).
    """
    return _CONTROL.sub("\ufffd", _ANSI_ESCAPE.sub("", text))


def shown(value: Any, limit: int = DISPLAY_LIMIT) -> str:
    """A value as compact JSON, shortened past ``limit`` characters with a visible note of the cut."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\u2026 (+{len(text) - limit} characters; the whole value is in results.json)"


def difference_lines(difference: Difference, *, limit: int = DISPLAY_LIMIT) -> list[str]:
    """One line for the difference (naming the kit choices it rests on), then its unified diff (if any),
    each diff line as it is."""
    d = difference
    if d.form is DifferenceForm.NOTE or d.form is DifferenceForm.LENGTH:
        head = f"at {d.path}: {d.message}"
    elif d.form is DifferenceForm.MISSING:
        head = f"at {d.path}: {d.message}: expected {shown(d.expected, limit)}"
    elif d.form is DifferenceForm.EXTRA:
        head = f"at {d.path}: {d.message}: got {shown(d.actual, limit)}"
    elif d.diff is not None:
        head = f"at {d.path}: {d.message} (unified diff, expected to actual):"
    else:
        head = f"at {d.path}: expected {shown(d.expected, limit)}, got {shown(d.actual, limit)} ({d.message})"
    if d.kit_defined:  # told apart from a spec failure on the very line that shows it
        head += f" [kit choice: {', '.join(d.kit_defined)}]"
    return [printable(head), *(printable(line) for line in (d.diff or "").splitlines())]


@cache
def _summaries() -> dict[str, str]:
    return {clause.id: clause.summary for clause in load_catalogue().clauses}


def clause_summary(clause_id: str) -> str:
    """The clause's one-line summary from the catalogue ("" for an id the catalogue lacks)."""
    return _summaries().get(clause_id, "")


def clause_label(clause_id: str) -> str:
    """``AS-LIFE-004 (Abort on an idle session changes nothing.)``: the id with its summary."""
    summary = clause_summary(clause_id)
    return f"{clause_id} ({summary.rstrip('.')})" if summary else clause_id


def failure_kind(case: CaseResult) -> str | None:
    """``spec`` or ``kit-choice`` for a failed case, when the results carry that classification.

    The classification belongs to the results model (``failure_kind``); a report only shows it.  Results
    written before it existed have none, and then nothing is shown.
    """
    kind = getattr(case, "failure_kind", None)
    return None if kind is None else str(getattr(kind, "value", kind))


def counts_line(run: RunResult) -> str:
    s = run.summary
    split = f" ({s.spec_failures} spec, {s.kit_choice_failures} kit-choice)" if s.failed else ""
    warned = f", {s.warnings} warning{'s' if s.warnings != 1 else ''}" if s.warnings else ""
    counts = f"{s.passed} passed, {s.unsupported} unsupported, {s.failed} failed{split}, {s.errored} errored"
    return counts + warned


def warning_lines(run: RunResult) -> list[tuple[str, str]]:
    """Every warning of the run as (case id, warning), in run order: what the contract tolerates but a
    reader should see (an unknown event field, KD-EVT-6); never a failure."""
    return [(case.id, printable(warning)) for case in run.cases for warning in case.warnings]


def exit_line(run: RunResult, code: ExitCode | None = None) -> str:
    """One line naming the exit status and what changed: ``exit 1: FAILED (1 new failure: a/b, ...)``."""
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
            new, stale = run.baseline.new_failures, run.baseline.stale_entries
            if new:
                why.append(f"{len(new)} new failure{'s' if len(new) != 1 else ''}: {_some(new)}")
            if stale:
                entries = [entry.case for entry in stale]
                why.append(
                    f"{len(stale)} stale baseline entr{'ies' if len(stale) != 1 else 'y'}: {_some(entries)}"
                )
    elif code is ExitCode.OK and run.baseline is not None and run.baseline.known_failures:
        n = len(run.baseline.known_failures)
        why.append(f"{n} known failure{'s' if n != 1 else ''} in the baseline")
    elif code is ExitCode.NOT_STARTED:
        why.append("every attempted case failed to start the implementation")
    elif code is ExitCode.NO_CASES:
        n = run.summary.unsupported
        why.append(
            f"{'the' if n == 1 else f'all {n}'} selected case{'s are' if n != 1 else ' is'} unsupported: "
            "each needs a capability the implementation does not declare"
            if n
            else "no case selected"
        )
    elif code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED):
        n = run.summary.total
        why.append(f"{run.interrupted_by or 'stopped'}; {n} finished case{'s' if n != 1 else ''} reported")
    suffix = f" ({'; '.join(why)})" if why else ""
    return f"exit {int(code)}: {_EXIT_WORDS[code]}{suffix}"


def _some(ids: tuple[str, ...] | list[str], n: int = 3) -> str:
    shown_ids = ", ".join(ids[:n])
    return shown_ids + (f" and {len(ids) - n} more" if len(ids) > n else "")


def area_rows(run: RunResult) -> list[tuple[str, int, int, int, int, int]]:
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


def baseline_note(baseline: BaselineComparison | None, case: CaseResult) -> str:
    if baseline is None:
        return ""
    if case.id in baseline.known_failures:
        return "known failure"
    if case.id in baseline.new_failures:
        return "new: not in the baseline"
    return ""


def ordered_failures(run: RunResult) -> tuple[list[CaseResult], list[CaseResult]]:
    """(failures to show, known failures to collapse): under a baseline, new failures come first and the
    known ones are set apart; without one, every failure is shown, in run order."""
    failures = run.failures()
    if run.baseline is None:
        return failures, []
    known = set(run.baseline.known_failures)
    return [c for c in failures if c.id not in known], [c for c in failures if c.id in known]
