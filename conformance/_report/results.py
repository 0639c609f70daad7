"""The results of one conformance run: per case, per clause, and the run as a whole.

These models are the single source of the machine-readable results (``results.json``, described in
``docs/results.md`` and ``schemas/results.schema.json``); every report is rendered from a
:class:`RunResult`.  They are frozen, refuse unknown fields and use snake_case keys.

How clause statuses follow from case statuses is one pure function, :func:`aggregate_clauses`; how a run
maps to a process exit status is another, :func:`exit_code`.  Neither knows how a case is executed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol

from pydantic import AwareDatetime, Field, JsonValue, field_validator, model_validator

from relavium_conformance._corpus.catalogue import CLAUSE_ID_PATTERN
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.exit_status import ExitCode
from relavium_conformance._report.sanitize import clean_text, strict_json
from relavium_conformance._version import DISTRIBUTION, kit_version
from relavium_conformance._wire.model import KitStrict

__all__ = [
    "CASE_ID_PATTERN",
    "KIT_DEFINED_PATTERN",
    "RESULTS_VERSION",
    "BaselineComparison",
    "CapabilityGate",
    "CaseResult",
    "CaseStatus",
    "ClauseInfo",
    "ClauseLike",
    "ClauseResult",
    "ClauseStatus",
    "CorpusInfo",
    "Difference",
    "DifferenceForm",
    "ExitCode",
    "FailureKind",
    "ImplementationInfo",
    "KitInfo",
    "RunContext",
    "RunResult",
    "ShardInfo",
    "StaleEntry",
    "StaleWhy",
    "Summary",
    "aggregate_clauses",
    "area_of",
    "exit_code",
    "one_line",
]

RESULTS_VERSION = 1
"""The version of the results document; it changes only when a reader would misread the old one."""

CASE_ID_PATTERN = r"^[^/\s]+(?:/[^/\s]+)+$"
"""A case id is a path of at least two segments; the first segment is the case's area."""

KIT_DEFINED_PATTERN = r"^KD-[A-Z]+-\d+$"
"""A kit-defined choice: an entry of ``docs/kit-defined.md``."""


_REASON_LIMIT = 300
_WHITESPACE = re.compile(r"\s+")


def one_line(text: str, limit: int = _REASON_LIMIT) -> str:
    """Collapse ``text`` to one line of at most ``limit`` characters (an ellipsis marks a cut), with
    credentials redacted and control characters escaped (see :mod:`.sanitize`)."""
    flat = clean_text(_WHITESPACE.sub(" ", text)).strip()
    if len(flat) > limit:
        return flat[: limit - 1].rstrip() + "\u2026"
    return flat


def area_of(case_id: str) -> str:
    """The area of a case: the first segment of its id (``lifecycle/abort-idle-is-noop`` -> ``lifecycle``)."""
    if not re.match(CASE_ID_PATTERN, case_id):
        raise KitUsageError(f"case id {case_id!r} is not of the form area/name")
    return case_id.split("/", 1)[0]


# --- cases -------------------------------------------------------------------------------------------


class CaseStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # the implementation ran and an expected observation was not met
    ERRORED = "errored"  # the case could not be carried out (crash, hang, protocol breach, ...)
    UNSUPPORTED = "unsupported"  # the case needs a capability the implementation did not declare


class DifferenceForm(StrEnum):
    """What a :class:`Difference` compares, so a report shows only the values that exist."""

    VALUE = "value"  # expected and actual both observed, and they differ
    MISSING = "missing"  # expected, not observed (a key or a list item): ``actual`` is meaningless
    EXTRA = "extra"  # observed, not expected: ``expected`` is meaningless
    LENGTH = "length"  # a list of the wrong length: the message counts; the items follow as their own
    NOTE = "note"  # a fact with no value to compare (a refused message, a protocol rule broken)


ClauseId = Annotated[str, Field(pattern=CLAUSE_ID_PATTERN)]
KitDefinedId = Annotated[str, Field(pattern=KIT_DEFINED_PATTERN)]


class FailureKind(StrEnum):
    SPEC = "spec"  # some unmet observation follows from the specification alone
    KIT_CHOICE = "kit-choice"  # every unmet observation rests on a kit-defined choice (a KD- entry)


class Difference(KitStrict):
    """One expected observation that was not met.  ``path`` locates it in the observations.

    ``expected`` and ``actual`` are whole JSON values (never cut: a report shortens them for display,
    visibly).  ``diff`` is a unified diff when the two are texts and one spans lines.

    ``clauses`` names the clauses a generic check (the event envelope, the event schema, the canonical
    text) books the failure on; empty means the case's own clauses.  ``kit_defined`` names the KD-
    choices the assertion rests on; empty means it follows from the specification.
    """

    path: str
    expected: JsonValue = None
    actual: JsonValue = None
    message: str
    form: DifferenceForm = DifferenceForm.VALUE
    diff: str | None = None
    clauses: tuple[ClauseId, ...] = ()
    kit_defined: tuple[KitDefinedId, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _a_note_without_values(cls, data: object) -> object:
        # no value on either side and no form given: a fact to read, not "expected null, got null"
        if isinstance(data, dict) and "form" not in data and "expected" not in data and "actual" not in data:
            return {**data, "form": DifferenceForm.NOTE}
        return data

    @property
    def kind(self) -> FailureKind:
        return FailureKind.KIT_CHOICE if self.kit_defined else FailureKind.SPEC

    @field_validator("expected", "actual", mode="before")
    @classmethod
    def _strict(cls, value: Any) -> Any:
        return strict_json(value)

    @field_validator("message")
    @classmethod
    def _message_one_line(cls, value: str) -> str:
        return one_line(value)


class CaseResult(KitStrict):
    """The outcome of one conformance case.

    ``reason`` is required for every status but ``passed`` (and refused there); it is collapsed to one
    line.  ``differences`` belong to failed cases only, ``stderr_tail`` to errored ones.
    ``handshake_failed`` marks an errored case whose implementation could not even be started.
    ``area`` is derived from the id when not given.  ``warnings`` are observations the contract
    tolerates but a reader should see (an unknown event field); they never change the status.
    ``failure_kind`` (failed cases only, derived from the differences) is ``kit-choice`` when every
    difference rests on a kit-defined choice, else ``spec``.
    """

    id: Annotated[str, Field(pattern=CASE_ID_PATTERN)]
    title: str
    status: CaseStatus
    clauses: tuple[ClauseId, ...] = ()
    area: str
    duration_ms: Annotated[float, Field(ge=0)] = 0.0
    reason: str | None = None
    differences: tuple[Difference, ...] = ()
    stderr_tail: str | None = None
    handshake_failed: bool = False
    warnings: tuple[str, ...] = ()
    failure_kind: FailureKind | None = None

    @classmethod
    def of(cls, case: Any, status: CaseStatus, **fields: Any) -> CaseResult:
        """The result of ``case`` (a transcript or a vector case): its id, title, area and clauses."""
        return cls(
            id=case.id, title=case.title, area=case.area, clauses=case.clauses, status=status, **fields
        )

    @model_validator(mode="before")
    @classmethod
    def _derive_area(cls, data: object) -> object:
        if isinstance(data, dict) and "area" not in data and isinstance(data.get("id"), str):
            case_id = data["id"]
            if re.match(CASE_ID_PATTERN, case_id):
                return {**data, "area": case_id.split("/", 1)[0]}
        return data

    @field_validator("stderr_tail")
    @classmethod
    def _stderr_encodable(cls, value: str | None) -> str | None:
        # stderr decoded with surrogateescape may hold lone surrogates, which UTF-8 cannot write; it may
        # also hold a credential or a terminal escape sequence
        return None if value is None else clean_text(value, multi_line=True)

    @field_validator("reason")
    @classmethod
    def _reason_one_line(cls, value: str | None) -> str | None:
        return None if value is None else one_line(value)

    @model_validator(mode="after")
    def _consistent(self) -> CaseResult:
        if self.area != self.id.split("/", 1)[0]:
            raise ValueError(f"case {self.id}: area {self.area!r} is not the id's first segment")
        if self.status is CaseStatus.PASSED:
            if self.reason is not None:
                raise ValueError(f"case {self.id}: a passed case has no reason")
        elif not self.reason:
            raise ValueError(f"case {self.id}: a {self.status} case needs a reason")
        if self.differences and self.status is not CaseStatus.FAILED:
            raise ValueError(f"case {self.id}: only a failed case carries differences")
        if self.stderr_tail is not None and self.status is not CaseStatus.ERRORED:
            raise ValueError(f"case {self.id}: only an errored case carries a stderr tail")
        if self.handshake_failed and self.status is not CaseStatus.ERRORED:
            raise ValueError(f"case {self.id}: a failed handshake makes the case errored")
        if len(set(self.clauses)) != len(self.clauses):
            raise ValueError(f"case {self.id}: a clause is cited twice")
        failed = self.status is CaseStatus.FAILED
        derived = (_failure_kind(self.differences) or FailureKind.SPEC) if failed else None
        if self.failure_kind is None and derived is not None:
            object.__setattr__(self, "failure_kind", derived)
        elif self.failure_kind != derived:
            raise ValueError(f"case {self.id}: failure_kind {self.failure_kind} contradicts its differences")
        return self

    def booked_clauses(self) -> dict[str, FailureKind]:
        """The clauses this case's failure is booked on, each with its kind.

        A difference books on its own ``clauses`` (a generic check) or else on the case's; an errored
        case (or a failed one with no recorded difference) books a spec failure on every clause it
        cites.  A clause several differences reach is a spec failure if any of them is.
        """
        if self.status is CaseStatus.ERRORED or (self.status is CaseStatus.FAILED and not self.differences):
            return dict.fromkeys(self.clauses, FailureKind.SPEC)
        booked: dict[str, FailureKind] = {}
        for difference in self.differences:
            for clause_id in difference.clauses or self.clauses:
                if booked.get(clause_id) is not FailureKind.SPEC:
                    booked[clause_id] = difference.kind
        return booked

    @property
    def is_failure(self) -> bool:
        """Failed or errored: what a baseline must list and what fails a run."""
        return self.status in (CaseStatus.FAILED, CaseStatus.ERRORED)


def _failure_kind(differences: Sequence[Difference]) -> FailureKind | None:
    if not differences:
        return None
    if all(d.kind is FailureKind.KIT_CHOICE for d in differences):
        return FailureKind.KIT_CHOICE
    return FailureKind.SPEC


# --- clauses -----------------------------------------------------------------------------------------


class ClauseStatus(StrEnum):
    PASSED = "passed"  # every citing case passed
    FAILED = "failed"  # some citing case failed or errored
    UNSUPPORTED = "unsupported"  # nothing failed, but some citing case needs an undeclared capability
    UNTESTED = "untested"  # a testable (or kit-defined) clause that no case of this run cites
    NOT_APPLICABLE = "not-applicable"  # host-specific or informative: no case can check it


class ClauseLike(Protocol):
    """What :func:`aggregate_clauses` needs from a catalogue entry (the catalogue's model fits)."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...


@dataclass(frozen=True)
class ClauseInfo:
    """A minimal catalogue entry; the catalogue's own clause model can be passed instead."""

    id: str
    status: str  # testable | kit-defined | host-specific | informative
    area: str = ""
    capability: str | None = None


_CHECKED_STATUSES = frozenset({"testable", "kit-defined"})
_UNCHECKED_STATUSES = frozenset({"host-specific", "informative"})


class ClauseResult(KitStrict):
    """One clause's verdict in a run.

    ``cases`` cite the clause (or booked a failure on it); ``failed_by`` are the cases whose failure is
    booked on it (a generic check books on its own clause, whichever case tripped it); ``failure_kind``
    tells a failed clause whose every booked failure rests on a kit choice (``kit-choice``) from one the
    specification alone fails (``spec``).
    """

    id: ClauseId
    status: ClauseStatus
    cases: tuple[str, ...] = ()
    proven_by: tuple[str, ...] = ()
    failed_by: tuple[str, ...] = ()
    failure_kind: FailureKind | None = None


def aggregate_clauses(
    case_results: Iterable[CaseResult], catalogue_clauses: Iterable[ClauseLike]
) -> list[ClauseResult]:
    """One :class:`ClauseResult` per catalogue clause, in catalogue order.

    A testable or kit-defined clause is ``untested`` when no case cites it, ``failed`` when a case's
    failure is booked on it (:meth:`CaseResult.booked_clauses`), ``passed`` when every citing case passed
    or failed only on other clauses, and otherwise ``unsupported`` (some citing case could not run for want
    of a capability, and nothing failed on it).  Host-specific and informative clauses are
    ``not-applicable`` whatever cites them.  A case citing (or booking on) a clause the catalogue lacks, or
    a catalogue entry with an unknown status, is a usage error.
    """
    clauses = list(catalogue_clauses)
    known = {str(clause.id) for clause in clauses}
    citing: dict[str, list[CaseResult]] = {clause_id: [] for clause_id in known}
    booked: dict[str, list[tuple[str, FailureKind]]] = {clause_id: [] for clause_id in known}
    unknown: set[str] = set()
    for case in case_results:
        for clause_id in case.clauses:
            if clause_id in citing:
                citing[clause_id].append(case)
            else:
                unknown.add(clause_id)
        for clause_id, booked_kind in case.booked_clauses().items():
            if clause_id in booked:
                booked[clause_id].append((case.id, booked_kind))
            else:
                unknown.add(clause_id)
    if unknown:
        raise KitUsageError(f"cases cite clauses missing from the catalogue: {', '.join(sorted(unknown))}")
    results: list[ClauseResult] = []
    for clause in clauses:
        clause_id, kind = str(clause.id), str(clause.status)
        cases = citing[clause_id]
        failures = booked[clause_id]
        failure_kind: FailureKind | None = None
        if kind in _UNCHECKED_STATUSES:
            status = ClauseStatus.NOT_APPLICABLE
            failures = []
        elif kind not in _CHECKED_STATUSES:
            raise KitUsageError(f"clause {clause_id} has an unknown status {kind!r}")
        elif failures:
            status = ClauseStatus.FAILED
            spec = kind == "testable" and any(k is FailureKind.SPEC for _case, k in failures)
            failure_kind = FailureKind.SPEC if spec else FailureKind.KIT_CHOICE
        else:
            # a citing case that failed only on other clauses (a generic check) passed this one
            status = _clause_status(CaseStatus.PASSED if c.is_failure else c.status for c in cases)
        results.append(
            ClauseResult(
                id=clause_id,
                status=status,
                cases=tuple(dict.fromkeys([*(c.id for c in cases), *(case_id for case_id, _k in failures)])),
                failed_by=tuple(dict.fromkeys(case_id for case_id, _kind in failures)),
                failure_kind=failure_kind,
            )
        )
    return results


def _clause_status(statuses: Iterable[CaseStatus]) -> ClauseStatus:
    seen = set(statuses)
    if not seen:
        return ClauseStatus.UNTESTED
    if seen & {CaseStatus.FAILED, CaseStatus.ERRORED}:
        return ClauseStatus.FAILED
    if seen == {CaseStatus.PASSED}:
        return ClauseStatus.PASSED
    return ClauseStatus.UNSUPPORTED


# --- the run -----------------------------------------------------------------------------------------


class KitInfo(KitStrict):
    name: str = "relavium-conformance"
    version: str

    @classmethod
    def current(cls) -> KitInfo:
        """The installed kit's name and version."""
        return cls(name=DISTRIBUTION, version=kit_version())


class ImplementationInfo(KitStrict):
    """Who was tested: as declared by the adapter (the stdio ``hello`` or the in-process adapter)."""

    name: Annotated[str, Field(min_length=1)]
    version: str | None = None
    language: str | None = None
    capabilities: tuple[str, ...] = ()
    adapter: str  # the transport, e.g. "in-process" or "stdio"

    @field_validator("name", "version", "language", "adapter")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return None if value is None else clean_text(value)

    @field_validator("capabilities")
    @classmethod
    def _clean_all(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(clean_text(item) for item in value)


class CorpusInfo(KitStrict):
    """Which corpus ran: the version it ships with and a hash of its files (``sha256:`` and hex)."""

    version: str
    content_hash: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class ShardInfo(KitStrict):
    """Which part of a selection a run ran (``run --shard INDEX/COUNT``): the selected cases, sorted by
    id, are dealt round-robin to ``count`` shards; ``selected`` counts the whole selection and
    ``selected_hash`` hashes its sorted ids, so merged shards can be checked to cover it exactly once."""

    index: Annotated[int, Field(ge=1)]
    count: Annotated[int, Field(ge=1)]
    selected: Annotated[int, Field(ge=0)]
    selected_hash: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]

    @model_validator(mode="after")
    def _in_range(self) -> ShardInfo:
        if self.index > self.count:
            raise ValueError(f"shard {self.index}/{self.count}: the index is above the count")
        return self


class RunContext(KitStrict):
    """What was run, so two results can be compared: the spec revision (a hash of the catalogue's clause
    ids, statuses and sentence fingerprints), the corpus, the selection patterns, the protocol version
    and the ``--adapter`` argument."""

    adapter: str
    selection: tuple[str, ...] = ()
    spec_revision: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
    corpus: CorpusInfo
    protocol_version: str
    shard: ShardInfo | None = None


class Summary(KitStrict):
    passed: Annotated[int, Field(ge=0)]
    failed: Annotated[int, Field(ge=0)]
    errored: Annotated[int, Field(ge=0)]
    unsupported: Annotated[int, Field(ge=0)]
    total: Annotated[int, Field(ge=0)]
    spec_failures: Annotated[int, Field(ge=0)] = 0
    kit_choice_failures: Annotated[int, Field(ge=0)] = 0
    warnings: Annotated[int, Field(ge=0)] = 0

    @classmethod
    def of(cls, cases: Iterable[CaseResult]) -> Summary:
        """Counts per status; the failed cases split by :class:`FailureKind` (they sum to ``failed``);
        the warnings the cases carry."""
        listed = list(cases)
        counts = Counter(case.status for case in listed)
        kinds = Counter(case.failure_kind for case in listed if case.status is CaseStatus.FAILED)
        return cls(
            passed=counts[CaseStatus.PASSED],
            failed=counts[CaseStatus.FAILED],
            errored=counts[CaseStatus.ERRORED],
            unsupported=counts[CaseStatus.UNSUPPORTED],
            total=sum(counts.values()),
            spec_failures=kinds[FailureKind.SPEC],
            kit_choice_failures=kinds[FailureKind.KIT_CHOICE],
            warnings=sum(len(case.warnings) for case in listed),
        )


class StaleWhy(StrEnum):
    PASSES = "passes"  # the listed case passed in this run
    MISSING = "missing"  # the kit has no case with the listed id


class StaleEntry(KitStrict):
    case: str
    why: StaleWhy


class BaselineComparison(KitStrict):
    """How a run compares with a baseline of known failures (see ``_baseline.compare``).

    ``not_run`` lists baseline entries whose case exists but was not selected, or was unsupported, in this
    run: they are neither confirmed nor stale.
    """

    file: str
    new_failures: tuple[str, ...] = ()
    stale_entries: tuple[StaleEntry, ...] = ()
    known_failures: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.new_failures and not self.stale_entries


class CapabilityGate(KitStrict):
    """Capabilities a run had to declare: those its baseline recorded, and those asked for on the
    command line (``--require-capability``, ``--require-all``).  ``missing`` fails the run."""

    required: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # where the requirement came from: the baseline file, the options

    @property
    def ok(self) -> bool:
        return not self.missing


class RunResult(KitStrict):
    """One run of the kit against one implementation."""

    results_version: Literal[1] = 1
    kit: KitInfo
    implementation: ImplementationInfo
    summary: Summary
    cases: tuple[CaseResult, ...]
    clauses: tuple[ClauseResult, ...]
    started_at: AwareDatetime
    duration_ms: Annotated[float, Field(ge=0)]
    baseline: BaselineComparison | None = None
    context: RunContext | None = None
    capabilities: CapabilityGate | None = None
    interrupted: bool = False  # stopped early (Ctrl-C): only the cases that finished are listed
    interrupted_by: Literal["SIGINT", "SIGTERM"] | None = None  # the signal that stopped it, when known

    @model_validator(mode="before")
    @classmethod
    def _count_warnings(cls, data: object) -> object:
        # results written before the summary counted warnings: the count is the cases' own
        if (
            isinstance(data, dict)
            and isinstance(data.get("summary"), dict)
            and "warnings" not in data["summary"]
        ):
            cases = data.get("cases") or ()
            count = sum(len(c.get("warnings") or ()) for c in cases if isinstance(c, dict))
            return {**data, "summary": {**data["summary"], "warnings": count}}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RunResult:
        ids = [case.id for case in self.cases]
        duplicates = sorted(case_id for case_id, n in Counter(ids).items() if n > 1)
        if duplicates:
            raise ValueError(f"case ids repeated: {', '.join(duplicates)}")
        if self.summary != Summary.of(self.cases):
            raise ValueError("the summary does not count the cases")
        clause_ids = [clause.id for clause in self.clauses]
        if len(set(clause_ids)) != len(clause_ids):
            raise ValueError("a clause appears twice")
        present = set(ids)
        for clause in self.clauses:
            missing = [case_id for case_id in clause.cases if case_id not in present]
            if missing:
                raise ValueError(f"clause {clause.id} names cases not in the run: {', '.join(missing)}")
        return self

    @classmethod
    def build(
        cls,
        *,
        implementation: ImplementationInfo,
        cases: Sequence[CaseResult],
        catalogue: Iterable[ClauseLike],
        started_at: datetime,
        duration_ms: float,
        kit: KitInfo | None = None,
        interrupted: bool = False,
    ) -> RunResult:
        """Assemble a run: count the cases and aggregate the clauses from the catalogue."""
        return cls(
            kit=kit or KitInfo.current(),
            implementation=implementation,
            summary=Summary.of(cases),
            cases=tuple(cases),
            clauses=tuple(aggregate_clauses(cases, catalogue)),
            started_at=started_at,
            duration_ms=duration_ms,
            interrupted=interrupted,
        )

    def stopped_by(self, signal_name: Literal["SIGINT", "SIGTERM"]) -> RunResult:
        """This run marked interrupted by ``signal_name`` (Ctrl-C, or a CI runner stopping the job)."""
        return self.model_copy(update={"interrupted": True, "interrupted_by": signal_name})

    def with_baseline(self, comparison: BaselineComparison) -> RunResult:
        """This run with its baseline comparison recorded."""
        return self.model_copy(update={"baseline": comparison})

    def with_context(self, context: RunContext) -> RunResult:
        """This run with what was run recorded (see :class:`RunContext`)."""
        return self.model_copy(update={"context": context})

    def with_capability_gate(self, gate: CapabilityGate) -> RunResult:
        """This run with the capabilities it had to declare recorded."""
        return self.model_copy(update={"capabilities": gate})

    def with_proofs(self, proofs: Mapping[str, Sequence[str]]) -> RunResult:
        """This run with ``proven_by`` filled in per clause id (from a selftest)."""
        clauses = tuple(
            clause.model_copy(update={"proven_by": tuple(sorted(proofs.get(clause.id, ())))})
            for clause in self.clauses
        )
        return self.model_copy(update={"clauses": clauses})

    def areas(self) -> list[str]:
        """The areas of this run's cases, sorted."""
        return sorted({case.area for case in self.cases})

    def failures(self) -> list[CaseResult]:
        """Failed and errored cases, in run order."""
        return [case for case in self.cases if case.is_failure]


# --- exit status -------------------------------------------------------------------------------------


def exit_code(run: RunResult, comparison: BaselineComparison | None = None) -> ExitCode:
    """The exit status for ``run``; ``comparison`` defaults to the one recorded on the run.

    Precedence: an interrupted run, then no case selected, then an implementation that never started,
    then a missing required capability (dropping one turns failing cases into unsupported ones: the gate
    must still fail), then nothing tested (every selected case unsupported: a gate that tested nothing
    never passes), then failures.  A usage error is raised (:class:`KitUsageError`) before there is a
    run, so it never comes from here.
    """
    if run.interrupted:
        return ExitCode.TERMINATED if run.interrupted_by == "SIGTERM" else ExitCode.INTERRUPTED
    if not run.cases:
        return ExitCode.NO_CASES
    attempted = [case for case in run.cases if case.status is not CaseStatus.UNSUPPORTED]
    if attempted and all(case.handshake_failed for case in attempted):
        return ExitCode.NOT_STARTED
    if run.capabilities is not None and not run.capabilities.ok:
        return ExitCode.FAILED
    if not attempted:
        return ExitCode.NO_CASES
    comparison = comparison if comparison is not None else run.baseline
    if comparison is None:
        return ExitCode.FAILED if run.failures() else ExitCode.OK
    return ExitCode.OK if comparison.ok else ExitCode.FAILED
