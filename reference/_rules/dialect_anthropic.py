"""The Anthropic Messages dialect: the request body, and the SSE events read back as seam chunks (no I/O).

Request: ``POST {base}/v1/messages`` with ``stream: true``; the seam's ``tool`` messages become ``user``
messages of ``tool_result`` blocks, an assistant's tool calls ``tool_use`` blocks, consecutive messages of
one role are merged (the API wants user and assistant to alternate).

Stream (``provider-wire-facts.md`` §1.3): ``message_start`` (input usage), per content block a
``content_block_start`` / ``content_block_delta``... / ``content_block_stop``, then ``message_delta``
(stop reason, cumulative usage) and ``message_stop``; ``ping`` anywhere; an ``error`` event may arrive
mid-stream, after which the vendor closes the stream without ``message_stop``.  A stream that ends without
``message_stop`` is a transport failure, never a silent success.  Input usage is the sum of
``input_tokens`` and the two cache counters, as the vendor documents its total.
"""

from __future__ import annotations

import json
from typing import Any

from relavium_reference._model.llm import (
    LlmMessage,
    LlmReasoningPart,
    LlmRequest,
    LlmTextPart,
    LlmToolCallPart,
    LlmToolResultPart,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StopChunk,
    StreamChunk,
    StreamErrorChunk,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from relavium_reference._model.vocabulary import LlmErrorKind, StopReason
from relavium_reference._rules.dialect_errors import error_from_reply, parse_json, transport_error
from relavium_reference._rules.sse import SseEvent

__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_TOKENS",
    "MESSAGES_PATH",
    "NATIVE_CONTEXT_STOP",
    "AnthropicStream",
    "build_request",
    "request_headers",
]

MESSAGES_PATH = "/v1/messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""The API requires ``max_tokens``; the agent's own cap is sent when it has one."""
NATIVE_CONTEXT_STOP = "model_context_window_exceeded"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
    "refusal": StopReason.CONTENT_FILTER,
}


def request_headers(api_key: str) -> dict[str, str]:
    return {
        "x-api-key": api_key,
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
        "accept": "text/event-stream",
    }


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def _blocks(message: LlmMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, LlmTextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, LlmToolCallPart):
            args = part.args if isinstance(part.args, dict) else {}
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": args})
        elif isinstance(part, LlmToolResultPart):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": _result_text(part.result),
            }
            if part.is_error:
                block["is_error"] = True
            blocks.append(block)
        elif isinstance(part, LlmReasoningPart) and part.signature:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


def build_request(request: LlmRequest) -> dict[str, Any]:
    """The JSON body of one streamed Messages request."""
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "stream": True,
        "messages": messages,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "name": tool.name,
                **({"description": tool.description} if tool.description else {}),
                "input_schema": tool.parameters,
            }
            for tool in request.tools
        ]
    return body


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class AnthropicStream:
    """Reads one streamed reply, event by event; :attr:`finished` once it has ended either way."""

    def __init__(self) -> None:
        self.finished = False
        self._blocks: dict[int, tuple[str, str]] = {}  # index -> (block type, seam id)
        self._signatures: dict[int, str] = {}
        self._input: dict[str, int] = {}
        self._output = 0
        self._stop: str | None = None

    def event(self, sse: SseEvent) -> list[StreamChunk]:
        if self.finished:
            return []
        try:
            data = parse_json(sse.data)
        except ValueError:
            return self._end([StreamErrorChunk(error=transport_error("anthropic", "malformed event data"))])
        if not isinstance(data, dict):
            return []
        kind = data.get("type", sse.event)
        handler = getattr(self, f"_on_{kind}", None)
        return [] if handler is None else list(handler(data))

    def end(self) -> list[StreamChunk]:
        """The byte stream ended: a reply without ``message_stop`` did not complete."""
        if self.finished:
            return []
        message = "the stream ended before message_stop"
        return self._end([StreamErrorChunk(error=transport_error("anthropic", message))])

    def _end(self, chunks: list[StreamChunk]) -> list[StreamChunk]:
        self.finished = True
        return chunks

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            if key in usage and usage[key] is not None:
                self._input[key] = _count(usage[key])  # cumulative: the latest count stands
        if usage.get("output_tokens") is not None:
            self._output = _count(usage["output_tokens"])

    def _on_message_start(self, data: dict[str, Any]) -> list[StreamChunk]:
        message = data.get("message")
        if isinstance(message, dict):
            self._usage(message.get("usage"))
        return []

    def _on_content_block_start(self, data: dict[str, Any]) -> list[StreamChunk]:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return []
        kind = block.get("type")
        if kind == "text":
            self._blocks[index] = ("text", "")
            text = block.get("text")
            return [TextDelta(text=text)] if isinstance(text, str) and text else []
        if kind == "tool_use":
            call_id = str(block.get("id", f"call-{index}"))
            self._blocks[index] = ("tool_use", call_id)
            return [ToolCallStart(id=call_id, name=str(block.get("name", "")))]
        if kind == "thinking":
            reasoning_id = f"reasoning-{index}"
            self._blocks[index] = ("thinking", reasoning_id)
            return [ReasoningStart(id=reasoning_id)]
        return []

    def _on_content_block_delta(self, data: dict[str, Any]) -> list[StreamChunk]:
        index = data.get("index")
        delta = data.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict) or index not in self._blocks:
            return []
        _, seam_id = self._blocks[index]
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
            return [TextDelta(text=delta["text"])]
        if (
            kind == "input_json_delta"
            and isinstance(delta.get("partial_json"), str)
            and delta["partial_json"]
        ):
            return [ToolCallDelta(id=seam_id, args_json_delta=delta["partial_json"])]
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            return [ReasoningDelta(id=seam_id, text=delta["thinking"])]
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            self._signatures[index] = self._signatures.get(index, "") + delta["signature"]
        return []

    def _on_content_block_stop(self, data: dict[str, Any]) -> list[StreamChunk]:
        index = data.get("index")
        if not isinstance(index, int) or index not in self._blocks:
            return []
        kind, seam_id = self._blocks.pop(index)
        if kind == "tool_use":
            return [ToolCallEnd(id=seam_id)]
        if kind == "thinking":
            return [ReasoningEnd(id=seam_id, signature=self._signatures.pop(index, None))]
        return []

    def _on_message_delta(self, data: dict[str, Any]) -> list[StreamChunk]:
        delta = data.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self._stop = delta["stop_reason"]
        self._usage(data.get("usage"))
        return []

    def _on_message_stop(self, data: dict[str, Any]) -> list[StreamChunk]:
        usage = Usage(input_tokens=sum(self._input.values()), output_tokens=self._output)
        if self._stop == NATIVE_CONTEXT_STOP:
            error = error_from_reply("anthropic", None, {})
            error = error.model_copy(
                update={
                    "kind": LlmErrorKind.CONTEXT_OVERFLOW,
                    "code": NATIVE_CONTEXT_STOP,
                    "message": "the response filled the model's context window",
                }
            )
            return self._end([StreamErrorChunk(error=error, usage=usage)])  # its usage counts (KD-OVF-3)
        reason = _STOP_REASONS.get(self._stop or "")
        if reason is None:
            message = f"unknown stop reason {self._stop!r}"
            return self._end([StreamErrorChunk(error=transport_error("anthropic", message))])
        return self._end([StopChunk(stop_reason=reason, usage=usage)])

    def _on_error(self, data: dict[str, Any]) -> list[StreamChunk]:
        return self._end([StreamErrorChunk(error=error_from_reply("anthropic", None, data))])
