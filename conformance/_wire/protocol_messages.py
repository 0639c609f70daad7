"""The messages of the kit's protocol: one kit model per params and result object.

These are the kit's own models (:mod:`relavium_conformance._wire.model`); the domain shapes nested in them
(agent, context, durable messages, provider requests, stream chunks, ...) are JSON judged by the shipped
schemas, never by the engine's models.  Which method carries which message is the method table's business
(:mod:`relavium_conformance._wire.protocol`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from relavium_conformance._wire.model import KitStrict, KitWire, ref

__all__ = [
    "AgentJson",
    "CaseLabel",
    "ChunkJson",
    "CommandOutcomeJson",
    "CompactionOutcome",
    "ContextEstimateParams",
    "ContextEstimateResult",
    "ContextJson",
    "CostJson",
    "CreateParams",
    "CreateResult",
    "DepsSpec",
    "Empty",
    "ExportParams",
    "ExportResult",
    "ExportWorkflowResult",
    "HandleParams",
    "HelloParams",
    "HelloResult",
    "HostAppendMarkerParams",
    "HostCommitTurnParams",
    "HostCompactionStartParams",
    "HostConfirmParams",
    "HostConfirmResult",
    "HostCreateSessionParams",
    "HostEmitParams",
    "HostLoadSessionParams",
    "HostLoadSessionResult",
    "HostRecordCostParams",
    "HostResolveProviderParams",
    "HostSleepParams",
    "ImplementationInfo",
    "KitInfo",
    "MemoryPolicyResult",
    "MessageJson",
    "ModelSpec",
    "NothingToTrimResult",
    "PolicyRefusal",
    "PolicySpec",
    "ProviderEndpoint",
    "ProviderEstimateParams",
    "ProviderEstimateResult",
    "ProviderNextParams",
    "ProviderNextResult",
    "ProviderOpenParams",
    "ProviderOpenResult",
    "PureSessionParams",
    "ReadStoredMessage",
    "ReadStoredRowParams",
    "ReadStoredRowRefusal",
    "ReadStoredRowResult",
    "RecordJson",
    "RequestEdit",
    "RequestJson",
    "ResumeParams",
    "ResumeStateJson",
    "RunUserCommandParams",
    "SendParams",
    "SetTurnPolicyParams",
    "StoredMessageRow",
    "StoredRowColumns",
    "StoredRowColumnsParams",
    "StoredRowError",
    "ToolCallParams",
    "ToolCallPartJson",
    "ToolCallResult",
    "ToolSpec",
    "TrimHistoryParams",
    "TrimResult",
    "TrimmedResult",
    "TurnResultJson",
    "WorkflowIdParams",
    "WorkflowIdResult",
]

# The domain shapes nested in messages: JSON of the shipped schema files.
AgentJson = Annotated[Any, ref("agent-snapshot")]
ContextJson = Annotated[Any, ref("session-context")]
RecordJson = Annotated[Any, ref("agent-session-record")]
ResumeStateJson = Annotated[Any, ref("session-resume-state")]
RequestJson = Annotated[Any, ref("llm-request")]
ChunkJson = Annotated[Any, ref("stream-chunk")]
MessageJson = Annotated[Any, ref("session-message")]
CostJson = Annotated[Any, ref("cost-entry")]
ToolCallPartJson = Annotated[Any, ref("session-message#/$defs/ToolCallPart")]
TurnResultJson = Annotated[Any, ref("turn-result")]
CommandOutcomeJson = Annotated[Any, ref("user-command-outcome")]


class _Msg(KitWire):
    pass


class KitInfo(_Msg):
    name: str
    version: str


class HelloParams(_Msg):
    protocol_version: str
    kit: KitInfo


class ImplementationInfo(_Msg):
    name: Annotated[str, Field(min_length=1)]
    version: str
    language: str


class HelloResult(_Msg):
    protocol_version: str
    implementation: ImplementationInfo
    capabilities: tuple[str, ...] = ()


class ToolSpec(_Msg):
    """A tool the kit plays: calls reach the kit as ``tool.call``."""

    name: Annotated[str, Field(min_length=1)]
    description: str | None = None
    parameters: dict[str, Any] | None = None
    action: Literal["fs_write", "process", "egress", "os"] | None = None
    preview_key: str | None = None


class ModelSpec(_Msg):
    """What the host knows of one model: its authoritative window (absent: unknown or custom) and whether
    its provider manages its own context."""

    context_window: Annotated[int, Field(gt=0)] | None = None
    self_managed: bool = False


class ProviderEndpoint(_Msg):
    """Where the implementation reaches one provider over HTTP, in that vendor's dialect (capability
    ``wire``, KD-WIRE-1): the kit's loopback server stands at ``baseUrl``.  ``official`` says whether the
    endpoint stands for the vendor's own API (an overflow from it is authoritative) or for a custom,
    compatible host (the downgrade of KD-OVF-1)."""

    provider: Annotated[str, Field(min_length=1)]
    base_url: Annotated[str, Field(min_length=1)]
    official: bool
    api_key: str = "kit-test-key"


class DepsSpec(_Msg):
    max_turns: int | None = None
    max_tool_turns: int | None = None
    allowed_commands: tuple[str, ...] = ()
    allowed_command_globs: tuple[str, ...] = ()
    command_output_limit: int | None = None
    unavailable_providers: tuple[str, ...] = ()
    """Providers the host holds no credential for: resolving one is refused before any invocation
    (KD-CAP-1), so the implementation must not call ``provider.open`` for it."""
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    """Model metadata by model name (KD-COMP-6): a model not listed has an unknown window."""
    compact_threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    after_turn_compaction: bool | None = None
    max_tokens_estimate: Annotated[int, Field(gt=0)] | None = None
    max_messages: Annotated[int, Field(gt=0)] | None = None
    """The deterministic trim an ordinary after-turn compaction failure falls back to."""
    admission: bool = False
    """The host has a cost governor: every provider attempt asks ``host.admit`` first (KD-FIN-2)."""
    usage_writer: bool = False
    """The persisted host keeps a usage writer: ``host.usage`` (KD-USE-1)."""
    provider_estimates: bool = False
    """The kit's providers have their own token estimator: ``provider.estimate`` (KD-COMP-8)."""
    resolution_callback: bool = False
    """A compaction's planning prepares each plan entry's provider through ``host.resolveProvider``
    (the host's credential lookup, KD-COMP-10)."""
    provider_endpoints: tuple[ProviderEndpoint, ...] = ()
    """Providers reached over HTTP instead of ``provider.open``/``provider.next`` (capability ``wire``)."""


class CaseLabel(_Msg):
    """The conformance case a session serves: informative, so the implementation's logs can name it."""

    id: Annotated[str, Field(min_length=1)]
    title: str | None = None


class CreateParams(_Msg):
    """``case`` (optional) names the conformance case; an implementation may log it, never act on it."""

    handle: str
    agent: AgentJson
    context: ContextJson
    deps: DepsSpec = Field(default_factory=DepsSpec)
    tools: tuple[ToolSpec, ...] = ()
    session_id: str | None = None
    case: CaseLabel | None = None


class ResumeParams(CreateParams):
    """Continue a persisted session as a new instance under ``handle`` (the old instance is dropped).

    The implementation builds the resume state from ``record`` and ``messages`` with its own
    reconstruction, unless ``state`` is given: then it must resume from exactly that state, which lets
    a case check that an invalid state is refused (``invalid_resume_state``).

    ``messages`` are durable rows as the host holds them; the protocol carries them as plain objects so
    that a case can hand over a row the implementation must refuse (an unknown field, raw tool
    arguments): checking them strictly is the implementation's job (``invalid_input``).
    """

    record: RecordJson
    messages: tuple[dict[str, Any], ...] = ()
    state: ResumeStateJson | None = None


class CreateResult(_Msg):
    session_id: Annotated[str, Field(min_length=1)]


class HandleParams(_Msg):
    handle: str


class SendParams(_Msg):
    handle: str
    text: str


class PolicySpec(_Msg):
    """A turn policy as data: ``advertise`` lists the tools kept (absent: all); ``confirm`` installs the
    approval hook, which then asks the kit through ``host.confirm``."""

    advertise: tuple[str, ...] | None = None
    confirm: bool = False


class SetTurnPolicyParams(_Msg):
    handle: str
    policy: PolicySpec | None = None


class RunUserCommandParams(_Msg):
    handle: str
    command: str
    args: tuple[str, ...] = ()


class Empty(_Msg):
    pass


class ProviderOpenParams(_Msg):
    handle: str
    provider: str
    model: str
    request: RequestJson
    purpose: Literal["turn", "summary"] = "turn"
    """What the invocation is for (KD-COMP-6): a turn attempt, or one summary pass of a compaction."""
    window: Annotated[int, Field(gt=0)] | None = None
    """The attempted entry's authoritative window as the implementation measured it (absent: unknown)."""


class RequestEdit(_Msg):
    """One change a careless provider makes to the request it was handed (capability ``request-edits``,
    KD-PROJ-3): replace the text of a text part, drop a content part, or drop a whole message."""

    edit: Literal["set_text", "drop_part", "drop_message"]
    message: Annotated[int, Field(ge=0)]  # the index in the request's messages
    part: Annotated[int, Field(ge=0)] | None = None  # set_text, drop_part: the index in its content
    text: str | None = None  # set_text: the new text


class ProviderOpenResult(_Msg):
    stream: str
    edits: tuple[RequestEdit, ...] = ()
    """Capability ``request-edits`` only: the adapter applies them, in order and in place, to the very
    request object its engine handed to the provider, before its first ``provider.next`` (KD-PROJ-3)."""


class ProviderNextParams(_Msg):
    handle: str
    stream: str


class ProviderNextResult(_Msg):
    chunk: ChunkJson


class ToolCallParams(_Msg):
    handle: str
    call_id: str
    name: str
    args: Any = None
    round: int


class ToolCallResult(_Msg):
    text: str
    is_error: bool = False


class HostConfirmParams(_Msg):
    handle: str
    tool_id: str
    action: Literal["fs_write", "process", "egress", "os"]
    preview: dict[str, str]
    call_id: str


class HostConfirmResult(_Msg):
    approved: bool


class HostEmitParams(_Msg):
    handle: str
    event: dict[str, Any]


class HostSleepParams(_Msg):
    handle: str
    seconds: Annotated[float, Field(ge=0)]


class ExportParams(_Msg):
    """Write the session's workflow scaffold to ``workflowPath`` (a file the kit then reads)."""

    handle: str
    workflow_path: Annotated[str, Field(min_length=1)]


class HostLoadSessionParams(_Msg):
    handle: str
    session_id: str


class HostLoadSessionResult(_Msg):
    """The host's persisted transcript: the record and every durable row, in sequence order."""

    record: RecordJson
    messages: tuple[MessageJson, ...]


class HostCreateSessionParams(_Msg):
    handle: str
    record: RecordJson


class HostCommitTurnParams(_Msg):
    """One completed turn, to commit all or nothing. ``turn`` is checked by the kit against the
    strict ``CompletedTurn`` shape; an answer with an error means the commit failed (the session latches)."""

    handle: str
    session_id: str
    turn: dict[str, Any]


class HostRecordCostParams(_Msg):
    handle: str
    session_id: str
    cost: CostJson


class PureSessionParams(_Msg):
    """A persisted session as the pure functions read it: its record and its durable rows (any order)."""

    record: RecordJson
    messages: tuple[MessageJson, ...]


class WorkflowIdParams(_Msg):
    title: str | None = None
    session_id: str


class WorkflowIdResult(_Msg):
    workflow_id: str


class ExportWorkflowResult(_Msg):
    """The exported workflow: ``document`` as JSON data and ``yaml``, its exact serialised text."""

    document: dict[str, Any]
    yaml: str


class StoredRowColumnsParams(_Msg):
    """A message about to be stored, and the completed turn's stop reason when it is the terminal row.

    Any string is carried, so that a case can ask about a reason the store must refuse: only ``stop``,
    ``length`` and ``content_filter``, for an assistant row without a call part, are accepted.
    """

    message: MessageJson
    finish_reason: StrictStr | None = None


class StoredRowColumns(_Msg):
    """The denormalised columns of a ``session_messages`` row (KD-DB-3), every key present.

    ``toolCalls`` is the column's JSON text as its parsed value, so implementations need not agree on
    whitespace or key order.
    """

    content: str | None
    tool_calls: tuple[ToolCallPartJson, ...] | None
    tool_call_id: str | None
    name: str | None
    finish_reason: Literal["stop", "length", "content_filter", "tool_use"] | None


class StoredMessageRow(KitStrict):
    """One ``session_messages`` row as stored: the companion columns, snake_case, JSON columns as text."""

    id: StrictStr
    session_id: StrictStr
    sequence_number: StrictInt
    role: StrictStr
    content: StrictStr | None
    content_parts: StrictStr | None
    tool_calls: StrictStr | None
    tool_call_id: StrictStr | None
    name: StrictStr | None
    finish_reason: StrictStr | None
    model_id: StrictStr | None
    compaction_dropped_through_sequence: StrictInt | None
    created_at: StrictInt


class ReadStoredRowParams(_Msg):
    row: StoredMessageRow


StoredRowError = Literal[
    "malformed_json",
    "invalid_message",
    "text_mismatch",
    "tool_calls_mismatch",
    "tool_call_id_mismatch",
    "name_mismatch",
    "finish_reason_invalid",
]
"""The fixed store errors (KD-DB-4) a single message row can earn on read."""


class ReadStoredMessage(_Msg):
    """The row is sound: the message it holds."""

    message: MessageJson


class ReadStoredRowRefusal(_Msg):
    """The store must refuse the row, with this fixed code."""

    error: StoredRowError


ReadStoredRowResult = ReadStoredMessage | ReadStoredRowRefusal


class ExportResult(_Msg):
    workflow_id: str
    workflow_path: str


class TrimHistoryParams(_Msg):
    """Keep the newest whole turns within ``maxMessages`` message units (any integer: the bound check
    is the implementation's, after its policy check)."""

    handle: str
    max_messages: int


class ContextEstimateParams(_Msg):
    """The context estimate of the next request for the pending user ``text`` (KD-COMP-2)."""

    handle: str
    text: str


class ContextEstimateResult(_Msg):
    input_tokens: Annotated[int, Field(ge=0)]


class PolicyRefusal(_Msg):
    """``MemoryPolicyRefusal``: what compact and trimHistory return when the memory policy forbids them."""

    kind: Literal["policy_refused"]
    memory: Literal["none", "window"]
    message: str


class MemoryPolicyResult(_Msg):
    """The session's memory getters in one answer: the resolved policy as the agent authors it
    (``{type: none}``, ``{type: window, window_size}``, ``{type: summary}``), the automatic-compaction
    permission, and the refusals compact and trimHistory would return (``null``: permitted)."""

    memory_policy: dict[str, Any]
    automatic_compaction_allowed: bool
    compaction_refusal: PolicyRefusal | None
    trim_refusal: PolicyRefusal | None


class TrimmedResult(_Msg):
    kind: Literal["trimmed"]
    kept_message_count: Annotated[int, Field(ge=0)]
    dropped_message_count: Annotated[int, Field(ge=0)]
    kept_turn_count: Annotated[int, Field(ge=0)]


class NothingToTrimResult(_Msg):
    kind: Literal["nothing_to_trim"]
    message_count: Annotated[int, Field(ge=0)]


TrimResult = Annotated[TrimmedResult | NothingToTrimResult | PolicyRefusal, Field(discriminator="kind")]
"""``TrimResult`` (KD-COMP-5)."""


class CompactionOutcome(_Msg):
    """``CompactionResult`` (KD-COMP-5): ``kind`` and the fields of its arm (``policy_refused``:
    ``memory`` and ``message``; ``failed``: ``message``; ``compacted``: ``keptTurnCount``; ...)."""

    model_config = ConfigDict(
        frozen=True,
        extra="allow",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    kind: Literal[
        "compacted", "nothing_to_compact", "failed", "cancelled", "budget_refused", "policy_refused"
    ]


class HostCompactionStartParams(_Msg):
    """The unknown-window disclosure to acknowledge before a manual compaction's first pass (KD-COMP-4);
    the kit checks its content itself, so ``start`` is carried as data."""

    handle: str
    start: dict[str, Any]


class HostResolveProviderParams(_Msg):
    """The host's part of resolving one plan entry's provider (its credential lookup, KD-COMP-10)."""

    handle: str
    provider: str
    model: str


class ProviderEstimateParams(_Msg):
    """The provider's own token estimate of a request (KD-COMP-8): a compaction asks it for the
    prospective history before installing it."""

    handle: str
    provider: str
    model: str
    request: RequestJson


class ProviderEstimateResult(_Msg):
    input_tokens: Annotated[int, Field(ge=0)]


class HostAppendMarkerParams(_Msg):
    """One durable boundary marker to append after every row: the kit checks it itself (a ``system`` row,
    ``compaction.droppedThroughSequence`` naming an earlier row), so ``marker`` is carried as data."""

    handle: str
    session_id: str
    marker: dict[str, Any]
