"""Golden transcripts: the YAML case format, its strict model, and discovery.

A case is one scenario (see ``docs/transcripts.md``)::

    id: lifecycle/abort-mid-stream            # <area>/<name>, unique, stable
    title: ...
    clauses: [AS-LIFE-016, AS-LIFE-017]       # what it checks (ids from the catalogue)
    capabilities: [core]                      # what the implementation must declare
    setup: {agent: ..., context: ..., deps: ..., tools: [...]}
    provider:                                 # scripted provider calls, in order
      - [{type: text_delta, text: Hi}, {do: abort}, {hold: true}]
    tools: [{text: "42"}]                     # answers to tool calls, in order
    approvals: [{approve: true}]              # answers to host.confirm, in order
    on_event: [{type: "cost:updated", do: abort}]
    steps:                                    # operations, in order
      - {op: start}
      - {op: send, text: hello, expect: {status: aborted}}
    expect: {session_events: [...], events: {...}, provider_requests: [...], ...}

The schema is ``schemas/transcript.schema.json`` (generated from these models, with a drift test).

:func:`load_case` reads one transcript; finding them all (with their wire twins and the vector cases,
``vectors/<suite>/<file>``) is ``discovery.py``'s, so a run, a selection and a listing see both kinds,
sorted by id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, WithJsonSchema, model_validator

from relavium_conformance._corpus.catalogue import CAPABILITIES
from relavium_conformance._corpus.provider_errors import ProviderErrorStep
from relavium_conformance._corpus.vectors import VectorCase
from relavium_conformance._data import fixtures_dir, read_yaml
from relavium_conformance._errors import KitUsageError
from relavium_conformance._wire.model import (
    SCHEMA_DIALECT,
    SCHEMA_ID_BASE,
    KitStrict,
    checked,
    kit_parse,
    ref,
)
from relavium_conformance._wire.protocol import CASE_OPERATIONS
from relavium_conformance._wire.protocol_messages import RequestEdit

__all__ = [
    "CASE_ID_PATTERN",
    "KNOWN_CAPABILITIES",
    "AckAnswer",
    "AdmitAnswer",
    "AnyCase",
    "ApprovalStep",
    "Case",
    "CaseExpect",
    "DoStep",
    "EditStep",
    "EventHook",
    "HoldStep",
    "OpStep",
    "Ordered",
    "ProviderErrorStep",
    "ProviderStep",
    "ToolAnswer",
    "UsageAnswer",
    "UsageScript",
    "VectorCase",
    "WireReply",
    "WireStep",
    "as_op",
    "as_ops",
    "load_case",
    "snapshot_path",
    "transcript_schema",
    "transcripts_dir",
]

CASE_ID_PATTERN = r"^[a-z0-9-]+/[a-z0-9][a-z0-9-]*$"
KD_PATTERN = r"^KD-[A-Z]+-\d+$"
KNOWN_CAPABILITIES = frozenset(CAPABILITIES)  # the catalogue's vocabulary


def _known_op(name: str) -> str:
    if name not in CASE_OPERATIONS:
        raise ValueError(f"unknown operation {name!r} (known: {', '.join(CASE_OPERATIONS)})")
    return name


OpName = Annotated[
    str,
    AfterValidator(_known_op),
    WithJsonSchema({"type": "string", "enum": list(CASE_OPERATIONS)}),
]
"""A case-format operation: one of the method table's ``case_op`` names."""


def _not_main(name: str) -> str:
    if name == "main":
        raise ValueError("main is the case's first session: leave session out to act on it")
    return name


SessionName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$"), AfterValidator(_not_main)]
"""A session of the case other than its first (``main``), named by the steps that act on it."""


class OpStep(KitStrict):
    """One operation, with what its result (or its refusal) must look like."""

    op: OpName
    text: str | None = None
    policy: dict[str, Any] | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    state: dict[str, Any] | None = None  # resume: hand this exact resume state to the implementation
    path: str | None = None  # export: the file name, in the case's working directory
    agent: dict[str, Any] | None = None  # resume: agent fields to change (a model reseat)
    max_messages: int | None = None  # trimHistory: the bound, in message units
    save_as: str | None = None  # keep the result under this name for a later {$saved: name}
    session: SessionName | None = None  # another session of the case (created at its first step); none:
    # the case's first session
    expect: dict[str, Any] | None = None
    expect_error: dict[str, Any] | None = None
    kit_defined: tuple[Annotated[str, Field(pattern=KD_PATTERN)], ...] = ()  # what this step's
    # expectation rests on beyond the specification (docs/kit-defined.md)

    @model_validator(mode="after")
    def _fields_fit_the_op(self) -> OpStep:
        if self.op == "send" and self.text is None:
            raise ValueError("a send step needs text")
        if self.op == "runUserCommand" and self.command is None:
            raise ValueError("a runUserCommand step needs command")
        if self.op == "trimHistory" and self.max_messages is None:
            raise ValueError("a trimHistory step needs max_messages")
        if self.op == "contextEstimate" and self.text is None:
            raise ValueError("a contextEstimate step needs text")
        if self.expect is not None and self.expect_error is not None:
            raise ValueError("expect and expect_error exclude each other")
        return self


def as_op(value: OpStep | str) -> OpStep:
    """``do: abort`` is short for ``do: {op: abort}``."""
    return value if isinstance(value, OpStep) else OpStep(op=value)


def as_ops(value: DoAction) -> list[OpStep]:
    """The operations of a ``do``: one, or a list issued together (see KD-KIT-1)."""
    if isinstance(value, list | tuple):
        return [as_op(item) for item in value]
    return [as_op(value)]


DoAction = OpStep | OpName | Annotated[tuple[OpStep | OpName, ...], Field(min_length=2)]


class DoStep(KitStrict):
    """Before answering this callback, perform an operation (e.g. abort)."""

    do: DoAction


class HoldStep(KitStrict):
    """Never answer this callback: the implementation must finish without it."""

    hold: Literal[True]


class WireReply(KitStrict):
    """A vendor's reply written out (capability ``wire``): an HTTP status and its JSON body, as recorded."""

    status: Annotated[int, Field(ge=400, le=599)]
    body: Any = None


class WireStep(KitStrict):
    """Wire level only: answer the request with this exact reply (first step of its invocation), or drop
    the connection mid-stream (``disconnect``: no further byte, not even the end of the chunked body)."""

    wire: WireReply | Literal["disconnect"]


class EditStep(KitStrict):
    """Capability ``request-edits``, the first step of an invocation only: the provider edits the request
    it was handed, in place, before the stream starts (KD-PROJ-3); a later request must not show it."""

    edit: Annotated[tuple[RequestEdit, ...], Field(min_length=1)]


StreamChunkJson = Annotated[dict[str, Any], checked("stream-chunk"), ref("stream-chunk")]
"""A scripted chunk: JSON the kit checks against the shipped ``stream-chunk`` schema."""

ProviderStep = Annotated[
    DoStep | HoldStep | WireStep | EditStep | ProviderErrorStep | StreamChunkJson,
    Field(union_mode="left_to_right"),
]


SignalName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]


class Ordered(KitStrict):
    """Named signals ordering one answer after another callback (``_run/signals.py``): ``signal`` is
    raised when the callback arrives, ``then`` when its answer is ready, ``after`` holds the answer
    until the named signal was raised."""

    signal: SignalName | None = None
    then: SignalName | None = None
    after: SignalName | None = None


class ToolAnswer(Ordered):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True)

    text: str = ""
    is_error: bool = Field(default=False, alias="isError")
    do: DoAction | None = None
    hold: bool = False


class ApprovalStep(Ordered):
    approve: bool = False
    do: DoAction | None = None
    hold: bool = False


class EventHook(KitStrict):
    """When the ``nth`` event of ``type`` is emitted, perform ``do`` before acknowledging it; with
    ``fail``, answer the delivery with an error instead (a host sink that throws, KD-EVT-5): ``true`` or
    ``raw`` an opaque error, ``classified`` a readable classified one (KD-EVT-8)."""

    type: str
    nth: Annotated[int, Field(ge=1)] = 1
    do: DoAction | None = None
    fail: bool | Literal["classified", "raw"] = False

    @model_validator(mode="after")
    def _acts(self) -> EventHook:
        if self.do is None and not self.fail:
            raise ValueError("an event hook needs do, fail or both")
        return self


class AckAnswer(KitStrict):
    """How the kit's host answers one ``host.compactionStart`` (in order; default: acknowledge).

    ``do`` runs first (``do: cancel`` makes the answer that follows a late one), then ``hold`` never
    answers, else ``fail`` refuses the acknowledgement and anything else acknowledges it.
    """

    do: DoAction | None = None
    hold: bool = False
    fail: bool = False


class EstimateAnswer(KitStrict):
    """How the kit's provider answers one ``provider.estimate`` (in order; default: the kit's own KD-COMP-2
    estimate of the request).  ``do`` runs first, then ``hold`` never answers, else ``fail`` answers with an
    error and anything else answers ``tokens`` (or the default)."""

    tokens: Annotated[int, Field(ge=0)] | None = None
    do: DoAction | None = None
    hold: bool = False
    fail: bool = False


class ResolveAnswer(KitStrict):
    """How the kit's host answers one ``host.resolveProvider`` (in order; default: resolved).  ``do`` runs
    first, then ``hold`` never answers, else ``fail`` refuses the entry (no credential)."""

    do: DoAction | None = None
    hold: bool = False
    fail: bool = False


class MarkerAnswer(KitStrict):
    """How the kit's host answers one ``host.appendMarker`` (in order; default: append).  ``do`` runs
    first (the marker is then appended, or with ``fail`` refused), ``hold`` never answers."""

    do: DoAction | None = None
    hold: bool = False
    fail: bool = False


class History(KitStrict):
    """Durable rows the kit's host already holds when the case begins (e.g. a legacy transcript).

    ``messages`` are SessionMessage wire objects; ``id``, ``sessionId``, ``sequenceNumber`` and
    ``timestamp`` may be left out (the kit fills them in order).  ``record`` fields override the
    record the kit derives from the setup.
    """

    record: dict[str, Any] | None = None
    messages: tuple[dict[str, Any], ...] = ()


class PersistAnswer(KitStrict):
    """How the kit's host answers one ``host.commitTurn`` (in order; default: commit)."""

    fail: bool | Literal["classified", "raw"] = False  # true means classified (KD-MSG-6)
    do: DoAction | None = None  # an operation the kit performs before answering (e.g. cancel mid-commit)


class AdmitAnswer(KitStrict):
    """How the kit's cost governor answers one ``host.admit`` (in order; default: admit).

    ``refuse`` names the cap that refuses; ``fail`` answers with an error; ``hold`` never answers (a
    cancel or abort in ``do`` then races the pending admission)."""

    refuse: Annotated[int, Field(ge=0)] | None = None
    fail: bool = False
    hold: bool = False
    do: DoAction | None = None


class UsageAnswer(Ordered):
    """How the kit's usage writer answers one ``host.usage`` call of its phase (default: acknowledge).

    For ``resolved``, ``cost_microcents`` and ``priced`` are the attempt's money (default 0, unpriced);
    for ``open``, ``amount_microcents`` replaces the durable sum the writer answers (a newer sum
    written elsewhere)."""

    fail: bool = False
    hold: bool = False
    do: DoAction | None = None
    cost_microcents: Annotated[int, Field(ge=0)] | None = None
    priced: bool | None = None
    amount_microcents: Annotated[int, Field(ge=0)] | None = None


class UsageScript(KitStrict):
    """The usage writer's answers, one list per phase, each in order."""

    open: tuple[UsageAnswer, ...] = ()
    pending: tuple[UsageAnswer, ...] = ()
    resolved: tuple[UsageAnswer, ...] = ()


class Setup(KitStrict):
    agent: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    deps: dict[str, Any] | None = None
    tools: tuple[dict[str, Any], ...] | None = None
    policy: dict[str, Any] | None = None
    history: History | None = None
    wire: dict[str, Literal["official", "custom"]] | None = None
    """Capability ``wire``: the providers the kit serves over loopback HTTP in their dialects, each as the
    vendor's official endpoint or a custom one (KD-WIRE-1)."""


class CaseExpect(KitStrict):
    """Normative assertions on the whole case (see ``_matching`` for the matching rules)."""

    session_events: tuple[str, ...] | dict[str, Any] | None = None  # the exact list, or one operator on it
    # ({$one_of: [[...], [...]]}: orders the specification allows alike)
    event_types: tuple[str, ...] | None = None
    event_runs: tuple[str, ...] | None = None  # every event type in order, a repeated type once per run
    events: dict[str, tuple[dict[str, Any], ...] | dict[str, Any]] | None = None  # per type: the exact
    # list, or one operator on the whole list ({$not_contains: text})
    absent_events: tuple[str, ...] | None = None
    provider_requests: tuple[dict[str, Any], ...] | None = None
    provider_request_count: Annotated[int, Field(ge=0)] | None = None
    summary_requests: tuple[dict[str, Any], ...] | None = None
    summary_request_count: Annotated[int, Field(ge=0)] | None = None
    compaction_starts: tuple[dict[str, Any], ...] | None = None
    estimate_requests: tuple[dict[str, Any], ...] | None = None
    resolutions: tuple[dict[str, Any], ...] | None = None
    tool_calls: tuple[dict[str, Any], ...] | None = None
    confirms: tuple[dict[str, Any], ...] | None = None
    rows: tuple[dict[str, Any], ...] | None = None
    commits: tuple[dict[str, Any], ...] | None = None
    costs: tuple[dict[str, Any], ...] | None = None
    record: dict[str, Any] | None = None
    exports: tuple[dict[str, Any], ...] | None = None
    admissions: tuple[dict[str, Any], ...] | dict[str, Any] | None = None  # the exact list, or one
    # operator on it ({$one_of: [[...], [...]]}: where a case allows one of two runs)
    usage: tuple[dict[str, Any], ...] | None = None
    sessions: dict[SessionName, CaseExpect] | None = None  # per other session: its own expectations
    kit_defined: dict[str, tuple[Annotated[str, Field(pattern=KD_PATTERN)], ...]] = Field(
        default_factory=dict
    )
    """Per expectation: the KD- choices that one expectation rests on (``{event_types: [KD-EVT-7]}``); an
    unmet marked expectation is a kit-choice failure, the case's other expectations stay spec ones."""

    @model_validator(mode="after")
    def _marks_name_expectations(self) -> CaseExpect:
        unknown = sorted(set(self.kit_defined) - (set(type(self).model_fields) - {"kit_defined", "sessions"}))
        if unknown:
            raise ValueError(f"kit_defined names no expectation: {', '.join(unknown)}")
        unset = sorted(name for name in self.kit_defined if getattr(self, name) is None)
        if unset:
            raise ValueError(f"kit_defined marks an expectation the case does not state: {', '.join(unset)}")
        return self


class Case(KitStrict):
    id: Annotated[str, Field(pattern=CASE_ID_PATTERN)]
    title: Annotated[str, Field(min_length=1)]
    clauses: Annotated[
        tuple[Annotated[str, Field(pattern=r"^(AS|SS)-[A-Z]+-\d{3}$")], ...], Field(min_length=1)
    ]
    capabilities: tuple[str, ...] = ("core",)
    kit_defined: tuple[Annotated[str, Field(pattern=KD_PATTERN)], ...] = ()  # the whole case rests on
    # these choices (its expectations are kit-choice failures when unmet)
    setup: Setup = Field(default_factory=Setup)
    provider: tuple[tuple[ProviderStep, ...], ...] = ()
    summaries: tuple[tuple[ProviderStep, ...], ...] = ()  # summary passes (provider.open purpose summary)
    acknowledgements: tuple[AckAnswer, ...] = ()  # answers to host.compactionStart, in order
    estimates: tuple[EstimateAnswer, ...] = ()  # answers to provider.estimate, in order
    markers: tuple[MarkerAnswer, ...] = ()  # answers to host.appendMarker, in order
    resolutions: tuple[ResolveAnswer, ...] = ()  # answers to host.resolveProvider, in order
    tools: tuple[ToolAnswer, ...] = ()
    approvals: tuple[ApprovalStep | bool, ...] = ()
    on_event: tuple[EventHook, ...] = ()
    persist: tuple[PersistAnswer, ...] = ()
    admissions: tuple[AdmitAnswer, ...] = ()
    usage: UsageScript = Field(default_factory=UsageScript)
    steps: Annotated[tuple[OpStep, ...], Field(min_length=1)]
    expect: CaseExpect = Field(default_factory=CaseExpect)
    wire_twin: bool = False  # the corpus also runs it over loopback HTTP as <id>-over-http (_corpus/twins.py)
    in_process_only: tuple[Annotated[str, Field(pattern=r"^(AS|SS)-[A-Z]+-\d{3}$")], ...] = ()
    """Clauses of the case whose check bites only in-process: the kit's own host changes a value after it
    handed it over (a Python host can; over stdio the engine holds a JSON copy), so over stdio that part
    passes without proving anything, and never fails a port."""
    source: str | None = None  # the file the case came from (set by the loader)

    @model_validator(mode="after")
    def _capabilities_are_known(self) -> Case:
        if set(self.in_process_only) - set(self.clauses):
            raise ValueError("in_process_only names a clause the case does not cite")
        unknown = set(self.capabilities) - KNOWN_CAPABILITIES
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}")
        wire_steps = any(isinstance(step, WireStep) for call in self.provider for step in call)
        if wire_steps and self.setup.wire is None:
            raise ValueError("a wire step needs setup.wire")
        if (self.setup.wire is not None) != ("wire" in self.capabilities):
            raise ValueError("setup.wire and the capability wire go together")
        edits = [
            (n, step) for call in self.provider for n, step in enumerate(call) if isinstance(step, EditStep)
        ]
        if any(n != 0 for n, _step in edits):
            raise ValueError(
                "an edit step comes first in its invocation (the provider edits before streaming)"
            )
        if edits and "request-edits" not in self.capabilities:
            raise ValueError("an edit step needs the capability request-edits")
        if self.setup.wire is not None and any(
            isinstance(step, DoStep | HoldStep) for call in self.provider for step in call
        ):
            raise ValueError("a wire case plays its streams without do or hold steps (no timing)")
        ordered = [*self.tools, *self.approvals, *self.usage.open, *self.usage.pending, *self.usage.resolved]
        raised = {n for a in ordered if isinstance(a, Ordered) for n in (a.signal, a.then) if n}
        awaited = {a.after for a in ordered if isinstance(a, Ordered) and a.after}
        if awaited - raised:
            raise ValueError(f"after names a signal no answer raises: {', '.join(sorted(awaited - raised))}")
        for a in ordered:  # an answer's own `then` is raised only once its `after` was met: a deadlock
            if isinstance(a, Ordered) and a.after and a.after == a.then and a.signal != a.after:
                others = [b for b in ordered if b is not a and isinstance(b, Ordered)]
                if not any(a.after in (b.signal, b.then) for b in others):
                    raise ValueError(
                        f"after: {a.after} waits for its own then (raised only once the answer is ready)"
                        " and no other answer raises it"
                    )
        return self

    @model_validator(mode="after")
    def _sessions_are_named_by_steps(self) -> Case:
        named = {op.session for op in _all_ops(self) if op.session}
        unknown = sorted(set(self.expect.sessions or {}) - named)
        if unknown:
            raise ValueError(f"expect.sessions names a session no step acts on: {', '.join(unknown)}")
        return self

    @property
    def area(self) -> str:
        return self.id.split("/", 1)[0]


def _all_ops(case: Case) -> list[OpStep]:
    """Every operation of the case: its steps and the ``do`` of its scripts (one level deep)."""
    dos: list[Any] = [step.do for call in case.provider for step in call if isinstance(step, DoStep)]
    for answers in (case.tools, case.approvals, case.on_event, case.persist, case.acknowledgements):
        dos += [getattr(answer, "do", None) for answer in answers]
    return [*case.steps, *(op for do in dos if do is not None for op in as_ops(do))]


def transcripts_dir() -> Path:
    return fixtures_dir() / "transcripts"


def snapshot_path(case: Case) -> Path:
    return transcripts_dir() / f"{case.id}.snapshot.json"


def load_case(path: Path, *, root: Path | None = None) -> Case:
    """One transcript; its id must be its path under ``root`` (default: the kit's transcripts)."""
    data = read_yaml(path, "case")
    if not isinstance(data, dict):
        raise KitUsageError(f"{path}: a case must be a mapping")
    try:
        case = kit_parse(Case, {**data, "source": str(path)})
    except Exception as exc:
        raise KitUsageError(f"{path}: {exc}") from None
    expected_id = path.relative_to(root or transcripts_dir()).with_suffix("").as_posix()
    if case.id != expected_id:
        raise KitUsageError(f"{path}: id {case.id!r} must match its path {expected_id!r}")
    return case


AnyCase = Case | VectorCase
"""A conformance case: a golden transcript, or a vector file of a pure function."""


def transcript_schema() -> dict[str, Any]:
    """The JSON Schema of a golden transcript file (``schemas/transcript.schema.json``)."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(Case).json_schema(by_alias=True)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"{SCHEMA_ID_BASE}transcript.schema.json",
        "description": "A golden transcript: one conformance case (docs/transcripts.md).",
        **schema,
    }
