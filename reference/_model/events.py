"""Session events: the ``session:*`` namespace, the in-turn events a session carries, the envelope.

The envelope (``sessionId``, a per-session ``sequenceNumber`` with no gaps, a UTC ``timestamp``) is
added at one point, by the host's stamper (:mod:`relavium_reference._host.stamper`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from relavium_reference._model.shapes import SessionContext, WireModel
from relavium_reference._model.vocabulary import ErrorCode, SessionStopReason

__all__ = [
    "SESSION_EVENT_TYPES",
    "AgentApprovalRequested",
    "AgentReasoning",
    "AgentToken",
    "AgentToolCall",
    "AgentToolResult",
    "ApprovalPreview",
    "CostUpdated",
    "EventSink",
    "SessionCancelled",
    "SessionCompacted",
    "SessionCompacting",
    "SessionCompactionFailed",
    "SessionCompactionRefused",
    "SessionEvent",
    "SessionExported",
    "SessionStarted",
    "SessionTrimmed",
    "SessionTurnCompleted",
    "SessionTurnStarted",
    "TokensUsed",
    "ToolHistoryEntry",
    "TurnError",
]

NonNegInt = Annotated[int, Field(ge=0)]
NonEmpty = Annotated[str, Field(min_length=1)]


class _Envelope(WireModel):
    session_id: NonEmpty
    sequence_number: NonNegInt
    timestamp: NonEmpty


class TokensUsed(WireModel):
    input: NonNegInt
    output: NonNegInt
    model: str | None = None


class TurnError(WireModel):
    code: ErrorCode
    message: str
    retryable: bool
    correlation_id: str | None = None


class ToolHistoryEntry(WireModel):
    """One structural tool call of a completed turn (kit-defined KD-EVT-1): no arguments, no result."""

    tool_call_id: NonEmpty
    name: NonEmpty
    is_error: bool


class SessionStarted(_Envelope):
    type: Literal["session:started"] = "session:started"
    agent_ref: NonEmpty
    model: NonEmpty
    context: SessionContext


class SessionTurnStarted(_Envelope):
    type: Literal["session:turn_started"] = "session:turn_started"


class SessionTurnCompleted(_Envelope):
    type: Literal["session:turn_completed"] = "session:turn_completed"
    stop_reason: SessionStopReason
    tokens_used: TokensUsed
    error: TurnError | None = None
    tool_history: tuple[ToolHistoryEntry, ...] | None = None


class SessionCancelled(_Envelope):
    type: Literal["session:cancelled"] = "session:cancelled"


class SessionExported(_Envelope):
    type: Literal["session:exported"] = "session:exported"
    workflow_path: NonEmpty


CompactionReason = Literal["manual", "auto-threshold", "auto-overflow"]


class SessionCompacting(_Envelope):
    """Opens a compaction moment (no counts)."""

    type: Literal["session:compacting"] = "session:compacting"
    reason: CompactionReason


class SessionCompacted(_Envelope):
    """Closes a moment with success; ``keptTurnCount`` is required of current producers (KD-COMP-1)."""

    type: Literal["session:compacted"] = "session:compacted"
    reason: CompactionReason
    summary: NonEmpty
    kept_message_count: NonNegInt
    tokens_before: NonNegInt
    tokens_after: NonNegInt
    tokens_used: TokensUsed
    kept_turn_count: NonNegInt | None = None


class SessionCompactionFailed(_Envelope):
    """The failed-moment event (KD-COMP-1): closes an opened moment that did not succeed."""

    type: Literal["session:compaction_failed"] = "session:compaction_failed"
    reason: CompactionReason
    outcome: Literal["failed", "budget_refused"]
    message: str


class SessionCompactionRefused(_Envelope):
    """The standalone side notice of a first-pass budget refusal of after-turn work (KD-COMP-1)."""

    type: Literal["session:compaction_refused"] = "session:compaction_refused"
    reason: CompactionReason
    message: str


class SessionTrimmed(_Envelope):
    type: Literal["session:trimmed"] = "session:trimmed"
    reason: Literal["manual", "auto-fallback"]
    kept_message_count: NonNegInt
    dropped_message_count: NonNegInt
    kept_turn_count: NonNegInt | None = None


class AgentToken(_Envelope):
    type: Literal["agent:token"] = "agent:token"
    node_id: NonEmpty
    token: str
    model: NonEmpty


class AgentReasoning(_Envelope):
    type: Literal["agent:reasoning"] = "agent:reasoning"
    node_id: NonEmpty
    text: str
    model: NonEmpty


class AgentToolCall(_Envelope):
    type: Literal["agent:tool_call"] = "agent:tool_call"
    node_id: NonEmpty
    model: NonEmpty
    tool_id: NonEmpty
    tool_input: Any = None
    attempt_number: NonNegInt | None = None


class AgentToolResult(_Envelope):
    type: Literal["agent:tool_result"] = "agent:tool_result"
    node_id: NonEmpty
    tool_id: NonEmpty
    success: bool
    output_summary: str
    attempt_number: NonNegInt | None = None


class CostUpdated(_Envelope):
    type: Literal["cost:updated"] = "cost:updated"
    node_id: NonEmpty
    model: NonEmpty
    input_tokens: NonNegInt
    output_tokens: NonNegInt
    cost_microcents: NonNegInt
    cumulative_cost_microcents: NonNegInt
    attempt_number: NonNegInt | None = None
    priced: bool | None = None


class ApprovalPreview(WireModel):
    path: str | None = None
    command: str | None = None
    host: str | None = None


class AgentApprovalRequested(_Envelope):
    type: Literal["agent:approval_requested"] = "agent:approval_requested"
    node_id: NonEmpty
    tool_id: NonEmpty
    action: Literal["fs_write", "process", "egress", "os"]
    preview: ApprovalPreview
    attempt_number: NonNegInt | None = None


SessionEvent = Annotated[
    SessionStarted
    | SessionTurnStarted
    | SessionTurnCompleted
    | SessionCancelled
    | SessionExported
    | SessionCompacting
    | SessionCompacted
    | SessionCompactionFailed
    | SessionCompactionRefused
    | SessionTrimmed
    | AgentToken
    | AgentReasoning
    | AgentToolCall
    | AgentToolResult
    | CostUpdated
    | AgentApprovalRequested,
    Field(discriminator="type"),
]

SESSION_EVENT_ADAPTER: TypeAdapter[SessionEvent] = TypeAdapter(SessionEvent)

SESSION_EVENT_TYPES: tuple[str, ...] = (
    "session:started",
    "session:turn_started",
    "session:turn_completed",
    "session:cancelled",
    "session:exported",
    "session:compacting",
    "session:compacted",
    "session:trimmed",
    "session:compaction_failed",
    "session:compaction_refused",
)

EventSink = Callable[[SessionEvent], Awaitable[None] | None]
"""Receives each event in order. An async sink's coroutine is started at once (in order) and awaited as
the acknowledgement; a plain function returning ``None`` acknowledges by returning."""
