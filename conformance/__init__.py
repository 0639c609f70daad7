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

from ._adapters import Adapter, InProcessAdapter, StdioAdapter, resolve_adapter
from ._baseline import compare, load_baseline, write_baseline
from ._broken import BROKEN_IMPLEMENTATIONS, BrokenImplementation
from ._cases import Case, load_cases, select_cases
from ._catalogue import clause_ids, load_catalogue
from ._data import DataMissingError, fixtures_dir, schemas_dir
from ._errors import AdapterError, KitError, KitUsageError
from ._jsonrpc import (
    PROTOCOL_VERSION,
    MalformedMessage,
    OversizeMessage,
    PeerCrashed,
    PeerTimeout,
    ProtocolMismatch,
    RpcError,
)
from ._protocol import (
    INVALID_INPUT,
    SESSION_STATE_ERROR,
    UNSUPPORTED_OPERATION,
    Callback,
    HelloResult,
    OperationError,
)
from ._protocol import ImplementationInfo as HelloImplementation
from ._reference_impl import ReferenceImplementation
from ._reports import TerminalReporter, write_json, write_junit, write_markdown
from ._results import CaseResult, CaseStatus, ClauseResult, ClauseStatus, ExitCode, RunResult, exit_code
from ._runner import RunOutcome, run_cases, run_cases_sync
from ._selftest import SelftestReport, run_selftest

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
