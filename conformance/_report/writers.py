"""Reports of one run: JSON results, JUnit XML, a Markdown summary, and the terminal (one module each).

Every report is rendered from a finished :class:`RunResult`, except the terminal's progress, which the
runner feeds case by case through :class:`TerminalReporter`.  This module gathers the writers so callers
have one import; each format lives in its own module (``json_report``, ``junit``, ``markdown``,
``terminal``; the compliance page of several runs in ``html``).
"""

from __future__ import annotations

from relavium_conformance._report.json_report import (
    read_json,
    results_document,
    results_validator,
    write_json,
)
from relavium_conformance._report.junit import junit_tree, write_junit
from relavium_conformance._report.markdown import (
    MARKDOWN_LIMIT,
    markdown_report,
    write_github_summary,
    write_markdown,
)
from relavium_conformance._report.terminal import STATUS_CHARS, TerminalReporter, colour_wanted
from relavium_conformance._report.wording import exit_line

__all__ = [
    "MARKDOWN_LIMIT",
    "STATUS_CHARS",
    "TerminalReporter",
    "colour_wanted",
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
