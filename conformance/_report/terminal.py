"""The terminal: progress while a run goes, and a summary at its end.

Colour follows the common conventions (:func:`colour_wanted`): ``--color always|never`` decides outright;
under ``auto`` (the default) a non-empty ``NO_COLOR`` turns colour off, a non-empty ``FORCE_COLOR`` other
than ``0`` turns it on, and otherwise colour is used only on a terminal whose ``TERM`` is not ``dumb``.

Quiet progress is one character per case, one line per area.  Verbose progress (``-v``) prints a line
as each case starts and another as it ends, so a hang shows which case is in flight.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, TextIO

from relavium_conformance._report.results import (
    CaseResult,
    CaseStatus,
    ExitCode,
    RunResult,
    area_of,
    exit_code,
)
from relavium_conformance._report.wording import (
    area_rows,
    baseline_note,
    clause_label,
    counts_line,
    difference_lines,
    exit_line,
    failure_kind,
    ordered_failures,
    printable,
    warning_lines,
)

__all__ = ["STATUS_CHARS", "ColourMode", "TerminalReporter", "colour_wanted"]

ColourMode = Literal["auto", "always", "never"]

STATUS_CHARS: Mapping[CaseStatus, str] = {
    CaseStatus.PASSED: ".",
    CaseStatus.FAILED: "F",
    CaseStatus.ERRORED: "E",
    CaseStatus.UNSUPPORTED: "U",
}

_COLOURS: Mapping[CaseStatus, str] = {
    CaseStatus.PASSED: "32",
    CaseStatus.FAILED: "31",
    CaseStatus.ERRORED: "31",
    CaseStatus.UNSUPPORTED: "33",
}

_DIFFERENCES_SHOWN = 3
_WARNINGS_SHOWN = 10


def colour_wanted(
    stream: TextIO, mode: ColourMode = "auto", environ: Mapping[str, str] | None = None
) -> bool:
    """Whether to colour ``stream`` (see the module's docstring for the rules and their order)."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    force = env.get("FORCE_COLOR")
    if force and force != "0":
        return True
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class TerminalReporter:
    """Progress (quiet or verbose) and the end-of-run summary on one stream.

    ``titles`` maps case ids to titles for verbose progress; ``environ`` defaults to ``os.environ``.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        environ: Mapping[str, str] | None = None,
        colour: ColourMode = "auto",
        verbose: bool = False,
        titles: Mapping[str, str] | None = None,
    ) -> None:
        self._stream = stream
        self.colour = colour_wanted(stream, colour, environ)
        self.verbose = verbose
        self._titles = dict(titles or {})
        self._area: str | None = None
        self._started = 0
        self._total = len(self._titles)

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def _enter_area(self, area: str) -> None:
        if area != self._area:
            if self._area is not None:
                self._stream.write("\n")
            self._stream.write(f"{area} ")
            self._area = area

    def on_case_start(self, case_id: str) -> None:
        """A case begins: verbose, one line naming it; quiet, open its area's progress line if needed."""
        self._started += 1
        if self.verbose:
            of = f"/{self._total}" if self._total else ""
            title = self._titles.get(case_id)
            self._stream.write(
                f"[{self._started}{of}] START {case_id}" + (f": {title}" if title else "") + "\n"
            )
        else:
            self._enter_area(area_of(case_id))
        self._stream.flush()

    def on_case_end(self, result: CaseResult) -> None:
        """A case ended: verbose, its status, time and reason; quiet, one character (``.FEU``)."""
        paint = _COLOURS[result.status]
        if self.verbose:
            word = self._paint(result.status.value.upper(), paint)
            reason = f": {printable(result.reason)}" if result.reason else ""
            self._stream.write(f"      {word} {result.id} ({result.duration_ms:.0f} ms){reason}\n")
        else:
            self._enter_area(result.area)
            self._stream.write(self._paint(STATUS_CHARS[result.status], paint))
        self._stream.flush()

    def _end_progress(self) -> None:
        if self._area is not None:
            self._stream.write("\n")
            self._area = None

    def _case(self, case: CaseResult, run: RunResult) -> None:
        out = self._stream
        word = self._paint(case.status.value.upper(), _COLOURS[case.status])
        notes = [
            n
            for n in (
                failure_kind(case) and f"{failure_kind(case)} failure",
                baseline_note(run.baseline, case),
            )
            if n
        ]
        note = f" ({', '.join(notes)})" if notes else ""
        # the implementation's words go through printable: its escapes must not drive our terminal
        out.write(f"{word} {case.id}{note}: {printable(case.reason or '')}\n")
        for clause_id in case.clauses:
            out.write(f"    clause {clause_label(clause_id)}\n")
        for difference in case.differences[:_DIFFERENCES_SHOWN]:
            for line in difference_lines(difference):
                out.write(f"    {line}\n")
        if len(case.differences) > _DIFFERENCES_SHOWN:
            out.write(f"    ... and {len(case.differences) - _DIFFERENCES_SHOWN} more difference(s)\n")

    def summary(self, run: RunResult) -> None:
        """The per-area table, the failures (new ones first), the baseline, and the exit line."""
        self._end_progress()
        out = self._stream
        impl = run.implementation
        described = ", ".join(part for part in (impl.version, impl.language, impl.adapter) if part)
        out.write(f"\n== {impl.name} ({described}) ==\n")
        header = ("area", "passed", "failed", "errored", "unsupported", "total")
        rows = [tuple(str(v) for v in row) for row in area_rows(run)]
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

        shown, known = ordered_failures(run)
        if shown:
            out.write("\n" + ("new failures:\n" if run.baseline is not None else ""))
        for case in shown:
            self._case(case, run)
        if known:
            out.write(
                f"\n{len(known)} known failure(s), as the baseline expects (details in the JSON results)\n"
            )

        warnings = warning_lines(run)
        if warnings:
            out.write(f"\n{len(warnings)} warning(s) (tolerated, never a failure):\n")
            for case_id, warning in warnings[:_WARNINGS_SHOWN]:
                out.write(f"    {case_id}: {warning}\n")
            if len(warnings) > _WARNINGS_SHOWN:
                out.write(f"    ... and {len(warnings) - _WARNINGS_SHOWN} more in the JSON results\n")

        if run.baseline is not None:
            b = run.baseline
            out.write(
                f"\nbaseline {b.file or '(unnamed)'}: {len(b.known_failures)} known, "
                f"{len(b.new_failures)} new, {len(b.stale_entries)} stale\n"
            )
            for case_id in b.new_failures:
                out.write(f"    new: {case_id}\n")
            for entry in b.stale_entries:
                why = "now passes" if entry.why.value == "passes" else "no such case"
                out.write(f"    stale: {entry.case} ({why})\n")

        code = exit_code(run)
        colour = "32" if code is ExitCode.OK else "31"
        out.write(f"\n{counts_line(run)} in {run.duration_ms / 1000:.2f}s\n")
        out.write(self._paint(exit_line(run, code), colour) + "\n")
        out.flush()
