"""The OpenAI Chat Completions dialect (and the compatible hosts, DeepSeek among them), no I/O.

Request: ``POST {base}/chat/completions`` (the base carries ``/v1``) with ``stream: true`` and
``stream_options.include_usage`` so that the reply ends with a usage chunk.  The system prompt is the first
message; an assistant's tool calls are ``tool_calls`` with JSON-text ``arguments``; each seam tool result
is one ``tool`` message.

Stream (``provider-wire-facts.md`` §2.3): ``data:`` lines of ``chat.completion.chunk`` objects without an
event name, ended by ``data: [DONE]``.  A tool call's fragments share an ``index`` (the accumulation key);
only the first carries ``id`` and ``name``.  The ``finish_reason`` arrives on a chunk of its own; the usage
chunk has empty ``choices``.  A data object with a truthy ``error`` is a failure frame; a stream that ends
without ``[DONE]`` is a transport failure.  DeepSeek's ``reasoning_content`` deltas are reasoning.
"""

from __future__ import annotations

import json
from typing import Any

from relavium_reference._model.llm import (
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
from relavium_reference._model.vocabulary import StopReason
from relavium_reference._rules.dialect_errors import error_from_reply, parse_json, transport_error
from relavium_reference._rules.overflow import Dialect
from relavium_reference._rules.sse import SseEvent

__all__ = ["CHAT_PATH", "DONE", "OpenAiStream", "build_request", "request_headers"]

CHAT_PATH = "/chat/completions"
DONE = "[DONE]"

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": StopReason.STOP,
    "length": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.CONTENT_FILTER,
}


def request_headers(api_key: str) -> dict[str, str]:
    return {
        "authorization": f"Bearer {api_key}",
        "content-type": "application/json",
        "accept": "text/event-stream",
    }


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def build_request(request: LlmRequest) -> dict[str, Any]:
    """The JSON body of one streamed Chat Completions request."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        text = "".join(p.text for p in message.content if isinstance(p, LlmTextPart))
        if message.role == "tool":
            for part in message.content:
                if isinstance(part, LlmToolResultPart):
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": part.tool_call_id,
                            "content": _result_text(part.result),
                        }
                    )
            continue
        if message.role == "user":
            messages.append({"role": "user", "content": text})
            continue
        calls = [
            {
                "id": part.id,
                "type": "function",
                "function": {"name": part.name, "arguments": json.dumps(part.args if part.args else {})},
            }
            for part in message.content
            if isinstance(part, LlmToolCallPart)
        ]
        entry: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            entry["tool_calls"] = calls
        messages.append(entry)
    body: dict[str, Any] = {
        "model": request.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": messages,
    }
    if request.max_tokens:
        body["max_tokens"] = request.max_tokens
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    **({"description": tool.description} if tool.description else {}),
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]
    return body


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class OpenAiStream:
    """Reads one streamed reply, data line by data line; :attr:`finished` once it has ended either way."""

    def __init__(self, dialect: Dialect = "openai") -> None:
        self.dialect = dialect
        self.finished = False
        self._calls: dict[int, str] = {}  # index -> call id, in the order they opened
        self._reasoning = False
        self._finish: str | None = None
        self._usage = Usage()

    def event(self, sse: SseEvent) -> list[StreamChunk]:
        if self.finished:
            return []
        if sse.data.strip() == DONE:
            return self._done()
        try:
            data = parse_json(sse.data)
        except ValueError:
            message = "malformed chunk data"
            return self._end([StreamErrorChunk(error=transport_error(self.dialect, message))])
        if not isinstance(data, dict):
            return []
        if data.get("error"):
            return self._end([StreamErrorChunk(error=error_from_reply(self.dialect, None, data))])
        usage = data.get("usage")
        if isinstance(usage, dict):
            self._usage = Usage(
                input_tokens=_count(usage.get("prompt_tokens")),
                output_tokens=_count(usage.get("completion_tokens")),
            )
        chunks: list[StreamChunk] = []
        for choice in _listed(data.get("choices")):
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                chunks.extend(self._choice(choice))
        return chunks

    def end(self) -> list[StreamChunk]:
        if self.finished:
            return []
        message = "the stream ended before [DONE]"
        return self._end([StreamErrorChunk(error=transport_error(self.dialect, message))])

    def _end(self, chunks: list[StreamChunk]) -> list[StreamChunk]:
        self.finished = True
        return chunks

    def _choice(self, choice: dict[str, Any]) -> list[StreamChunk]:
        chunks: list[StreamChunk] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                if not self._reasoning:
                    self._reasoning = True
                    chunks.append(ReasoningStart(id="reasoning-0"))
                chunks.append(ReasoningDelta(id="reasoning-0", text=reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                chunks.extend(self._close_reasoning())
                chunks.append(TextDelta(text=content))
            for call in _listed(delta.get("tool_calls")):
                if isinstance(call, dict):
                    chunks.extend(self._tool_fragment(call))
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish
        return chunks

    def _close_reasoning(self) -> list[StreamChunk]:
        if not self._reasoning:
            return []
        self._reasoning = False
        return [ReasoningEnd(id="reasoning-0")]

    def _tool_fragment(self, call: dict[str, Any]) -> list[StreamChunk]:
        index = call.get("index")
        if not isinstance(index, int):
            return []
        raw = call.get("function")
        function: dict[str, Any] = raw if isinstance(raw, dict) else {}
        chunks: list[StreamChunk] = []
        if index not in self._calls:
            call_id = str(call.get("id") or f"call-{index}")
            self._calls[index] = call_id
            chunks.extend(self._close_reasoning())
            chunks.append(ToolCallStart(id=call_id, name=str(function.get("name") or "")))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            chunks.append(ToolCallDelta(id=self._calls[index], args_json_delta=arguments))
        return chunks

    def _done(self) -> list[StreamChunk]:
        chunks: list[StreamChunk] = [*self._close_reasoning()]
        chunks.extend(ToolCallEnd(id=call_id) for call_id in self._calls.values())
        reason = _FINISH_REASONS.get(self._finish or "")
        if reason is None:
            message = f"the stream ended without a known finish reason ({self._finish!r})"
            chunks.append(StreamErrorChunk(error=transport_error(self.dialect, message)))
        else:
            chunks.append(StopChunk(stop_reason=reason, usage=self._usage))
        return self._end(chunks)


def _listed(value: object) -> list[object]:
    """A frame's list member, or nothing when the vendor sent another kind of value (a hostile or broken
    frame must never turn into an exception of the reader)."""
    return value if isinstance(value, list) else []
