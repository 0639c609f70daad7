"""The compliance page: several runs side by side, one self-contained HTML file, and a badge per run.

``relavium-conformance report RESULTS.json [MORE.json ...] --html OUT.html`` renders, from the JSON
results of one or more runs: per implementation, its summary and a badge; per clause area and clause, a
matrix across the implementations (passed, failed, kit-choice failure, unsupported, untested,
not applicable), each clause with its summary and its cases; and each failure with its differences and
diffs.  The page is rendered by Jinja2 templates shipped with the kit (``templates/``), with autoescaping;
it loads nothing at view time (its style and its few lines of script are inline, the badges are inline SVG).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from relavium_conformance._corpus.catalogue import AREAS, load_catalogue
from relavium_conformance._report.atomic import write_text_atomically
from relavium_conformance._report.results import CaseResult, ClauseStatus, RunResult, exit_code
from relavium_conformance._report.wording import (
    clause_summary,
    counts_line,
    difference_lines,
    exit_line,
    failure_kind,
    warning_lines,
)

__all__ = [
    "CELL_STATUSES",
    "badge_svg",
    "badge_value",
    "compliance_page",
    "write_badges",
    "write_compliance_page",
]

_TEMPLATES = Path(__file__).resolve().parent / "templates"

CELL_STATUSES: tuple[str, ...] = (
    "passed",
    "failed",
    "kit-choice",
    "unsupported",
    "untested",
    "not-applicable",
    "absent",
)
"""What a matrix cell can say; ``kit-choice`` is a failed clause whose every failure rests on a kit choice,
``absent`` a clause the run's catalogue did not have."""


@cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(("html", "svg", "j2")),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]+", "-", text).strip("-") or "x"


@dataclass
class _Failure:
    case: CaseResult
    anchor: str
    kind: str | None
    lines: list[str]
    diffs: list[tuple[str, str]]  # (the difference's head line, its unified diff)


@dataclass
class _Implementation:
    index: int
    run: RunResult
    label: str
    slug: str
    exit: str
    counts: str
    badge: str
    failures: list[_Failure] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (case id, warning)
    cells: dict[str, str] = field(default_factory=dict)  # clause id -> cell status


def _cell(run: RunResult, clause_id: str, by_id: dict[str, object]) -> str:
    clause = by_id.get(clause_id)
    if clause is None:
        return "absent"
    status = getattr(clause, "status", None)
    if status is ClauseStatus.FAILED:
        kind = getattr(clause, "failure_kind", None)
        return "kit-choice" if str(getattr(kind, "value", kind)) == "kit-choice" else "failed"
    return str(getattr(status, "value", status))


def _failures(run: RunResult, slug: str) -> list[_Failure]:
    out = []
    for case in run.failures():
        lines: list[str] = []
        diffs: list[tuple[str, str]] = []
        for difference in case.differences:
            head, *diff = difference_lines(difference, limit=600)
            lines.append(head)
            if diff:
                diffs.append((head, "\n".join(diff)))
        out.append(
            _Failure(
                case=case,
                anchor=f"f-{slug}-{_slug(case.id)}",
                kind=failure_kind(case),
                lines=lines,
                diffs=diffs,
            )
        )
    return out


def _label(run: RunResult) -> str:
    impl = run.implementation
    return impl.name + (f" {impl.version}" if impl.version else "")


def badge_value(run: RunResult) -> str:
    """What a run's badge says: passed of every case the run holds, the unsupported ones named (a case
    the implementation could not run is part of the denominator, not left out of it)."""
    s = run.summary
    if s.total == s.unsupported:
        return "nothing tested" if s.total == 0 else f"nothing tested ({s.unsupported} unsupported)"
    unsupported = f", {s.unsupported} unsupported" if s.unsupported else ""
    return f"{s.passed}/{s.total} passed{unsupported}"


def badge_svg(run: RunResult) -> str:
    """A small SVG badge: ``relavium conformance | P/T passed, U unsupported`` (green: no failure and
    something tested; red otherwise)."""
    s = run.summary
    value = badge_value(run)
    colour = "#2e7d32" if s.failed + s.errored == 0 and s.total > s.unsupported else "#c62828"
    label = "relavium conformance"
    # Verdana 11px is about 6.5 px per character: widths need not be exact, only wide enough
    label_width, value_width = 10 + round(6.5 * len(label)), 10 + round(6.5 * len(value))
    return (
        _environment()
        .get_template("badge.svg.j2")
        .render(
            label=label,
            value=value,
            colour=colour,
            label_width=label_width,
            value_width=value_width,
            width=label_width + value_width,
            title=f"{_label(run)}: {counts_line(run)}",
        )
    )


def compliance_page(runs: Sequence[RunResult]) -> str:
    """The HTML page for ``runs`` (one or more), as text."""
    implementations: list[_Implementation] = []
    for index, run in enumerate(runs):
        slug = f"{index + 1}-{_slug(run.implementation.name)}"
        implementation = _Implementation(
            index=index,
            run=run,
            label=_label(run),
            slug=slug,
            exit=exit_line(run, exit_code(run)),
            counts=counts_line(run),
            badge=badge_svg(run),
            failures=_failures(run, slug),
            warnings=warning_lines(run),
        )
        by_id: dict[str, object] = {clause.id: clause for clause in run.clauses}
        implementation.cells = {clause_id: _cell(run, clause_id, by_id) for clause_id in by_id}
        implementations.append(implementation)

    # the clauses the runs report, in catalogue order (a run of another kit version may hold others: last)
    catalogue = {clause.id: clause for clause in load_catalogue().clauses}
    position = {clause_id: index for index, clause_id in enumerate(catalogue)}
    reported = {clause.id for run in runs for clause in run.clauses}
    clause_ids = sorted(reported, key=lambda cid: (position.get(cid, len(position)), cid))
    cases: dict[str, list[str]] = {clause_id: [] for clause_id in clause_ids}
    for run in runs:
        for clause in run.clauses:
            cases[clause.id] += [c for c in clause.cases if c not in cases[clause.id]]
    anchors = {(impl.index, f.case.id): f.anchor for impl in implementations for f in impl.failures}
    by_key: dict[str, dict[str, Any]] = {}  # each area once, where its first clause comes
    for clause_id in clause_ids:
        prefix, area = clause_id.split("-")[:2]
        key = f"{prefix}-{area}"
        if key not in by_key:
            by_key[key] = {"key": key, "title": AREAS.get(prefix, {}).get(area, ""), "clauses": []}
        row = {
            "id": clause_id,
            "summary": clause_summary(clause_id),
            "catalogue_status": getattr(catalogue.get(clause_id), "status", "unknown"),
            "cases": cases[clause_id],
            "cells": [
                {
                    "status": impl.cells.get(clause_id, "absent"),
                    "failures": [
                        (case_id, anchors[(impl.index, case_id)])
                        for case_id in cases[clause_id]
                        if (impl.index, case_id) in anchors
                    ],
                }
                for impl in implementations
            ],
        }
        by_key[key]["clauses"].append(row)
    areas = list(by_key.values())
    for group in areas:
        rows = group["clauses"]
        group["applicable"] = sum(
            any(cell["status"] != "not-applicable" for cell in row["cells"]) for row in rows
        )
        group["counts"] = [  # per implementation: how many of the area's clauses have each status
            {status: sum(row["cells"][i]["status"] == status for row in rows) for status in CELL_STATUSES}
            for i in range(len(implementations))
        ]
    revisions = sorted({run.context.spec_revision for run in runs if run.context is not None})
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            implementations=implementations,
            areas=areas,
            statuses=CELL_STATUSES,
            revisions=revisions,
            clause_counts=[
                {status: sum(cell == status for cell in impl.cells.values()) for status in CELL_STATUSES}
                for impl in implementations
            ],
        )
    )


def write_compliance_page(runs: Sequence[RunResult], path: Path) -> None:
    write_text_atomically(path, compliance_page(runs))


def write_badges(runs: Sequence[RunResult], folder: Path) -> list[Path]:
    """One ``NAME.svg`` per run in ``folder`` (``NAME-2.svg`` ... when two runs share a name)."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for run in runs:
        stem = _slug(run.implementation.name)
        path = folder / f"{stem}.svg"
        n = 2
        while path in written:
            path = folder / f"{stem}-{n}.svg"
            n += 1
        path.write_text(badge_svg(run), encoding="utf-8")
        written.append(path)
    return written
