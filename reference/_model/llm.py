"""The LLM seam: requests, messages, content parts, stream chunks and classified errors.

These are the engine's own types (no vendor SDK type crosses the seam).  Messages and their content
parts are frozen values, validated once where they enter the engine (a user text, a streamed reply, a
tool round) and then shared: a message's content is a tuple, and no field of a part can be set.  A
request is built fresh for every provider attempt and owns its lists (``messages``, ``tools``), so
whatever a provider does to them cannot reach the session's working transcript or a later request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from relavium_reference._model.shapes import WireModel
from relavium_reference._model.vocabulary import LlmErrorKind, StopReason

__all__ = [
    "ContentPart",
    "LlmError",
    "LlmMessage",
    "LlmProvider",
    "LlmReasoningPart",
    "LlmRequest",
    "LlmTextPart",
    "LlmToolCallPart",
    "LlmToolResultPart",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "StopChunk",
    "StreamChunk",
    "StreamErrorChunk",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolDef",
    "Usage",
]


class _Mutable(BaseModel):
    """A request and its tool definitions: closed, camelCase, with list fields of their own."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class _Frozen(_Mutable):
    """A message or a content part: like a request's values, but frozen, so one value can be shared by
    the working transcript and every request that carries it."""

    model_config = ConfigDict(frozen=True)  # merged with the seam's config above


class LlmTextPart(_Frozen):
    type: Literal["text"] = "text"
    text: str


class LlmToolCallPart(_Frozen):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    args: Any = None


class LlmToolResultPart(_Frozen):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    result: Any = None
    is_error: bool = False


class LlmReasoningPart(_Frozen):
    type: Literal["reasoning"] = "reasoning"
    text: str
    signature: str | None = None


ContentPart = Annotated[
    LlmTextPart | LlmToolCallPart | LlmToolResultPart | LlmReasoningPart, Field(discriminator="type")
]


class LlmMessage(_Frozen):
    role: Literal["user", "assistant", "tool"]
    content: tuple[ContentPart, ...]


class ToolDef(_Mutable):
    name: str
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class LlmRequest(_Mutable):
    model: str
    system: str | None = None
    messages: list[LlmMessage]
    tools: list[ToolDef] | None = None
    max_tokens: int | None = None


class Usage(WireModel):
    input_tokens: Annotated[int, Field(ge=0)] = 0
    output_tokens: Annotated[int, Field(ge=0)] = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class LlmError(WireModel):
    """A classified provider failure. ``retryable`` follows from ``kind`` alone."""

    kind: LlmErrorKind
    message: str = ""
    provider: str | None = None
    status: int | None = None
    code: str | None = None
    evidence: Literal["official", "downgraded"] | None = None
    """For ``context_overflow`` only: the provider's word on the overflow (KD-OVF-3).  ``official`` is an
    official, fixture-matched payload from the vendor's own endpoint; ``downgraded`` (or absent) is not
    authoritative: it still settles ``context_overflow`` but never starts a recovery."""

    @property
    def retryable(self) -> bool:
        return self.kind.retryable

    @property
    def authoritative_overflow(self) -> bool:
        return self.kind is LlmErrorKind.CONTEXT_OVERFLOW and self.evidence == "official"


class TextDelta(WireModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningStart(WireModel):
    type: Literal["reasoning_start"] = "reasoning_start"
    id: str


class ReasoningDelta(WireModel):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    id: str
    text: str


class ReasoningEnd(WireModel):
    type: Literal["reasoning_end"] = "reasoning_end"
    id: str
    signature: str | None = None


class ToolCallStart(WireModel):
    type: Literal["tool_call_start"] = "tool_call_start"
    id: str
    name: str


class ToolCallDelta(WireModel):
    type: Literal["tool_call_delta"] = "tool_call_delta"
    id: str
    args_json_delta: str


class ToolCallEnd(WireModel):
    type: Literal["tool_call_end"] = "tool_call_end"
    id: str


class StopChunk(WireModel):
    type: Literal["stop"] = "stop"
    stop_reason: StopReason
    usage: Usage = Field(default_factory=Usage)


class StreamErrorChunk(WireModel):
    type: Literal["error"] = "error"
    error: LlmError
    usage: Usage | None = None
    """The attempt's actual usage when the provider reported it with the failure (Anthropic's native
    context-window stop arrives on a 200 with usage; KD-OVF-3)."""


StreamChunk = Annotated[
    TextDelta
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | StopChunk
    | StreamErrorChunk,
    Field(discriminator="type"),
]


@runtime_checkable
class LlmProvider(Protocol):
    """What the engine needs of a provider: a stream of chunks for a request.

    Calling :meth:`stream` is the invocation: the engine counts the turn as engaged from then on.
    Failures arrive as an ``error`` chunk, never as an exception.
    """

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]: ...
