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

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import Case, load_cases, select_cases
from relavium_conformance._corpus.catalogue import clause_ids, load_catalogue
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
from relavium_conformance._selftest.broken import BROKEN_IMPLEMENTATIONS, BrokenImplementation
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
from relavium_conformance._wire.messages import HelloResult
from relavium_conformance._wire.messages import ImplementationInfo as HelloImplementation
from relavium_conformance._wire.protocol import (
    INVALID_INPUT,
    SESSION_STATE_ERROR,
    UNSUPPORTED_OPERATION,
    Callback,
    OperationError,
)

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
