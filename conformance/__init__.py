"""relavium_conformance: the conformance kit for the Relavium Agent Session Specification.

The public surface, by job:

* run the kit: :func:`run_cases` / :func:`run_cases_sync` with an adapter from :func:`resolve_adapter`
  (or an :class:`InProcessAdapter` / :class:`StdioAdapter` of your own), over cases from
  :func:`load_cases` and :func:`select_cases`;
* judge and report: :class:`RunResult`, :class:`CaseResult`, :class:`ExitCode`, :func:`exit_code`, the
  writers :func:`write_json`, :func:`write_junit`, :func:`write_markdown`, and baselines
  (:func:`load_baseline`, :func:`compare`, :func:`write_baseline`);
* prove the kit bites: :data:`BROKEN_IMPLEMENTATIONS`, :func:`run_selftest`;
* traceability: :func:`load_catalogue`, :func:`clause_ids`;
* the protocol: :data:`PROTOCOL_VERSION`, :class:`ReferenceImplementation` (the model answer).
"""

from __future__ import annotations

import importlib
import typing as _typing
from typing import Any as _Any

if _typing.TYPE_CHECKING:  # the names below are imported on first use (see __getattr__)
    from relavium_conformance._connect import resolve_adapter
    from relavium_conformance._corpus.cases import Case
    from relavium_conformance._corpus.catalogue import clause_ids, load_catalogue
    from relavium_conformance._corpus.discovery import load_cases
    from relavium_conformance._corpus.index import select_cases
    from relavium_conformance._data import DataMissingError, fixtures_dir, schemas_dir
    from relavium_conformance._errors import AdapterError, KitError, KitUsageError
    from relavium_conformance._reference.impl import ReferenceImplementation
    from relavium_conformance._report.baseline import compare, load_baseline, write_baseline
    from relavium_conformance._report.results import (
        CaseResult,
        CaseStatus,
        ClauseResult,
        ClauseStatus,
        ExitCode,
        RunResult,
        exit_code,
    )
    from relavium_conformance._report.writers import TerminalReporter, write_json, write_junit, write_markdown
    from relavium_conformance._run.runner import RunOutcome, run_cases, run_cases_sync
    from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS, BrokenImplementation
    from relavium_conformance._selftest.proofs import SelftestReport, run_selftest
    from relavium_conformance._wire.adapters import Adapter, InProcessAdapter, StdioAdapter
    from relavium_conformance._wire.jsonrpc import (
        PROTOCOL_VERSION,
        MalformedMessage,
        OversizeMessage,
        PeerCrashed,
        PeerTimeout,
        ProtocolMismatch,
        RpcError,
    )
    from relavium_conformance._wire.protocol import (
        INVALID_INPUT,
        SESSION_STATE_ERROR,
        UNSUPPORTED_OPERATION,
        Callback,
        OperationError,
    )
    from relavium_conformance._wire.protocol_messages import HelloResult
    from relavium_conformance._wire.protocol_messages import ImplementationInfo as HelloImplementation

_LAZY: dict[str, tuple[str, str]] = {
    "resolve_adapter": ("relavium_conformance._connect", "resolve_adapter"),
    "Case": ("relavium_conformance._corpus.cases", "Case"),
    "load_cases": ("relavium_conformance._corpus.discovery", "load_cases"),
    "select_cases": ("relavium_conformance._corpus.index", "select_cases"),
    "clause_ids": ("relavium_conformance._corpus.catalogue", "clause_ids"),
    "load_catalogue": ("relavium_conformance._corpus.catalogue", "load_catalogue"),
    "DataMissingError": ("relavium_conformance._data", "DataMissingError"),
    "fixtures_dir": ("relavium_conformance._data", "fixtures_dir"),
    "schemas_dir": ("relavium_conformance._data", "schemas_dir"),
    "AdapterError": ("relavium_conformance._errors", "AdapterError"),
    "KitError": ("relavium_conformance._errors", "KitError"),
    "KitUsageError": ("relavium_conformance._errors", "KitUsageError"),
    "ReferenceImplementation": ("relavium_conformance._reference.impl", "ReferenceImplementation"),
    "compare": ("relavium_conformance._report.baseline", "compare"),
    "load_baseline": ("relavium_conformance._report.baseline", "load_baseline"),
    "write_baseline": ("relavium_conformance._report.baseline", "write_baseline"),
    "CaseResult": ("relavium_conformance._report.results", "CaseResult"),
    "CaseStatus": ("relavium_conformance._report.results", "CaseStatus"),
    "ClauseResult": ("relavium_conformance._report.results", "ClauseResult"),
    "ClauseStatus": ("relavium_conformance._report.results", "ClauseStatus"),
    "ExitCode": ("relavium_conformance._report.results", "ExitCode"),
    "RunResult": ("relavium_conformance._report.results", "RunResult"),
    "exit_code": ("relavium_conformance._report.results", "exit_code"),
    "TerminalReporter": ("relavium_conformance._report.writers", "TerminalReporter"),
    "write_json": ("relavium_conformance._report.writers", "write_json"),
    "write_junit": ("relavium_conformance._report.writers", "write_junit"),
    "write_markdown": ("relavium_conformance._report.writers", "write_markdown"),
    "RunOutcome": ("relavium_conformance._run.runner", "RunOutcome"),
    "run_cases": ("relavium_conformance._run.runner", "run_cases"),
    "run_cases_sync": ("relavium_conformance._run.runner", "run_cases_sync"),
    "BROKEN_IMPLEMENTATIONS": ("relavium_conformance._selftest.breaks", "BROKEN_IMPLEMENTATIONS"),
    "BrokenImplementation": ("relavium_conformance._selftest.breaks", "BrokenImplementation"),
    "SelftestReport": ("relavium_conformance._selftest.proofs", "SelftestReport"),
    "run_selftest": ("relavium_conformance._selftest.proofs", "run_selftest"),
    "Adapter": ("relavium_conformance._wire.adapters", "Adapter"),
    "InProcessAdapter": ("relavium_conformance._wire.adapters", "InProcessAdapter"),
    "StdioAdapter": ("relavium_conformance._wire.adapters", "StdioAdapter"),
    "PROTOCOL_VERSION": ("relavium_conformance._wire.jsonrpc", "PROTOCOL_VERSION"),
    "MalformedMessage": ("relavium_conformance._wire.jsonrpc", "MalformedMessage"),
    "OversizeMessage": ("relavium_conformance._wire.jsonrpc", "OversizeMessage"),
    "PeerCrashed": ("relavium_conformance._wire.jsonrpc", "PeerCrashed"),
    "PeerTimeout": ("relavium_conformance._wire.jsonrpc", "PeerTimeout"),
    "ProtocolMismatch": ("relavium_conformance._wire.jsonrpc", "ProtocolMismatch"),
    "RpcError": ("relavium_conformance._wire.jsonrpc", "RpcError"),
    "HelloResult": ("relavium_conformance._wire.protocol_messages", "HelloResult"),
    "HelloImplementation": ("relavium_conformance._wire.protocol_messages", "ImplementationInfo"),
    "INVALID_INPUT": ("relavium_conformance._wire.protocol", "INVALID_INPUT"),
    "SESSION_STATE_ERROR": ("relavium_conformance._wire.protocol", "SESSION_STATE_ERROR"),
    "UNSUPPORTED_OPERATION": ("relavium_conformance._wire.protocol", "UNSUPPORTED_OPERATION"),
    "Callback": ("relavium_conformance._wire.protocol", "Callback"),
    "OperationError": ("relavium_conformance._wire.protocol", "OperationError"),
}


# Type checkers read the imports above instead: a module-level __getattr__ would let them accept any
# name, a misspelt one included.  (mypy knows the condition by the name TYPE_CHECKING: an alias of
# that name would hide it.)
if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> _Any:
        """Import a public name on first use: a process that needs one corner of the kit (the stdio server,
        a sub-command, the pytest plugin) does not import every other (the broken implementations, the
        report writers...)."""
        try:
            module, attribute = _LAZY[name]
        except KeyError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__all__ = [
    "BROKEN_IMPLEMENTATIONS",
    "INVALID_INPUT",
    "PROTOCOL_VERSION",
    "SESSION_STATE_ERROR",
    "UNSUPPORTED_OPERATION",
    "Adapter",
    "AdapterError",
    "BrokenImplementation",
    "Callback",
    "Case",
    "CaseResult",
    "CaseStatus",
    "ClauseResult",
    "ClauseStatus",
    "DataMissingError",
    "ExitCode",
    "HelloImplementation",
    "HelloResult",
    "InProcessAdapter",
    "KitError",
    "KitUsageError",
    "MalformedMessage",
    "OperationError",
    "OversizeMessage",
    "PeerCrashed",
    "PeerTimeout",
    "ProtocolMismatch",
    "ReferenceImplementation",
    "RpcError",
    "RunOutcome",
    "RunResult",
    "SelftestReport",
    "StdioAdapter",
    "TerminalReporter",
    "clause_ids",
    "compare",
    "exit_code",
    "fixtures_dir",
    "load_baseline",
    "load_cases",
    "load_catalogue",
    "resolve_adapter",
    "run_cases",
    "run_cases_sync",
    "run_selftest",
    "schemas_dir",
    "select_cases",
    "write_baseline",
    "write_json",
    "write_junit",
    "write_markdown",
]
