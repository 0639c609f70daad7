"""The process exit statuses of the command line, apart from the results models.

:class:`ExitCode` lives here, not in :mod:`relavium_conformance._report.results` (which re-exports it), so
that the command line's parser and ``run --list`` can name an exit status without building the results
models (pydantic, jsonschema).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """The process exit status of ``relavium-conformance run`` (documented in ``docs/results.md``)."""

    OK = 0  # every case passed, was unsupported, or failed as the baseline expects, and nothing is stale
    FAILED = 1  # a failure the baseline does not list, a stale baseline entry, or a required capability
    # the implementation did not declare
    USAGE = 2  # a bad option or a malformed case, catalogue or baseline file
    NOT_STARTED = 3  # the implementation could not be started for any case (every attempt failed its start)
    NO_CASES = 4  # nothing was tested: the selection is empty, or every selected case was unsupported
    INTERRUPTED = 130  # stopped by Ctrl-C (128 + SIGINT): the finished cases are reported, marked interrupted
    TERMINATED = 143  # stopped by SIGTERM (128 + 15, how CI runners stop a job): reported as INTERRUPTED is
