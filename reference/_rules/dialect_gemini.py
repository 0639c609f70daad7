"""The Gemini ``generateContent`` dialect (Google's generativelanguage API): request body and stream, no I/O.

Request: ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the key in
``x-goog-api-key``; the model is in the path, not the body.  The seam's messages become ``contents`` of
role ``user`` or ``model`` (consecutive ones of one role merged); an assistant's tool calls are
``functionCall`` parts with their arguments as an object; a tool result is a ``functionResponse`` part of a
``user`` content, naming the function the call named (Gemini pairs results by name, and by ``id`` when the
call carried one), its value under ``output`` (``error`` when the tool failed).  The system prompt is
``systemInstruction``, the tools one ``functionDeclarations`` list, the output cap
``generationConfig.maxOutputTokens``.

Thought signatures: a thinking model puts an opaque ``thoughtSignature`` on a part (on the first
``functionCall`` of a reply with calls) and wants it back on that part in the next request of the turn
(Gemini refuses a current-turn function call without it).  The seam keeps signatures on reasoning only, so
a signature on a non-thought part is read as an empty reasoning block carrying it, just before that part;
when the request is built, such signatures go back onto the message's function calls in order (onto its
first text part when it has no call), and a signed thought part keeps its own.

Stream (``provider-wire-facts.md`` §3): ``data:`` lines without an event name, each a whole
``GenerateContentResponse``: ``candidates[0].content.parts`` (``text``; ``thought: true`` text is
reasoning; ``functionCall`` arrives whole, never in fragments), ``usageMetadata`` (a running total: the
latest count stands, never a sum), and on the last one ``finishReason``.  There is no ``[DONE]``: the chunk
carrying ``finishReason`` ends the reply, and a body that ends before one is a transport failure.
Gemini has no tool-use finish reason: ``STOP`` after a ``functionCall`` is the seam's ``tool_use``.  A data
object with an ``error`` is a failure frame (the google.rpc envelope).  A prompt blocked outright
(``promptFeedback.blockReason``, no candidates) is a content-filter stop.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from relavium_reference._model.llm import (
    LlmError,
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

__all__ = ["API_VERSION", "GeminiStream", "build_request", "request_headers", "stream_path"]

API_VERSION = "v1beta"

_FINISH_REASONS: dict[str, StopReason] = {
    "STOP": StopReason.STOP,
    "MAX_TOKENS": StopReason.LENGTH,
    "SAFETY": StopReason.CONTENT_FILTER,
    "RECITATION": StopReason.CONTENT_FILTER,
    "BLOCKLIST": StopReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": StopReason.CONTENT_FILTER,
    "SPII": StopReason.CONTENT_FILTER,
    "IMAGE_SAFETY": StopReason.CONTENT_FILTER,
}
"""The finish reasons that end a reply normally; any other (``MALFORMED_FUNCTION_CALL``, ``OTHER``...) is a
failure of unknown kind that names the reason."""


def stream_path(model: str) -> str:
    """The request path and query below the base URL (a ``models/`` prefix on the name is dropped)."""
    name = model.removeprefix("models/")
    return f"/{API_VERSION}/models/{quote(name, safe='.-_')}:streamGenerateContent?alt=sse"


def request_headers(api_key: str) -> dict[str, str]:
    return {
        "x-goog-api-key": api_key,
        "content-type": "application/json",
        "accept": "text/event-stream",
    }


def _response(result: Any, is_error: bool) -> dict[str, Any]:
    return {"error" if is_error else "output": result}


def _sign(parts: list[dict[str, Any]], signatures: list[str]) -> None:
    """Put the message's loose signatures back: on its function calls in order, else on its first text."""
    calls = [p for p in parts if "functionCall" in p]
    targets = calls or [p for p in parts if "text" in p and not p.get("thought")][:1]
    for part, signature in zip(targets, signatures, strict=False):
        part["thoughtSignature"] = signature


def _parts(message: LlmMessage, names: dict[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    loose: list[str] = []  # signatures that came on a non-thought part
    for part in message.content:
        if isinstance(part, LlmTextPart):
            if part.text:
                parts.append({"text": part.text})
        elif isinstance(part, LlmToolCallPart):
            names[part.id] = part.name
            args = part.args if isinstance(part.args, dict) else {}
            parts.append({"functionCall": {"id": part.id, "name": part.name, "args": args}})
        elif isinstance(part, LlmToolResultPart):
            response = {
                "id": part.tool_call_id,
                "name": names.get(part.tool_call_id, part.tool_call_id),
                "response": _response(part.result, part.is_error),
            }
            parts.append({"functionResponse": response})
        elif isinstance(part, LlmReasoningPart):
            if part.text:
                thought: dict[str, Any] = {"text": part.text, "thought": True}
                if part.signature:
                    thought["thoughtSignature"] = part.signature
                parts.append(thought)
            elif part.signature:
                loose.append(part.signature)
    _sign(parts, loose)
    return parts


def build_request(request: LlmRequest) -> dict[str, Any]:
    """The JSON body of one streamed ``generateContent`` request (the model goes in the path)."""
    names: dict[str, str] = {}  # call id -> function name, for the results that follow their calls
    contents: list[dict[str, Any]] = []
    for message in request.messages:
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, names)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    body: dict[str, Any] = {"contents": contents}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        declarations = [
            {
                "name": tool.name,
                **({"description": tool.description} if tool.description else {}),
                "parametersJsonSchema": tool.parameters,
            }
            for tool in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
    if request.max_tokens:
        body["generationConfig"] = {"maxOutputTokens": request.max_tokens}
    return body


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class GeminiStream:
    """Reads one streamed reply, data line by data line; :attr:`finished` once it has ended either way."""

    def __init__(self) -> None:
        self.finished = False
        self._calls = 0  # function calls seen (ids for the ones that carry none)
        self._reasoning = False
        self._signature: str | None = None  # the open thought block's signature
        self._signed = 0  # signature blocks read (their ids)
        self._usage = Usage()

    def event(self, sse: SseEvent) -> list[StreamChunk]:
        if self.finished:
            return []
        try:
            data = parse_json(sse.data)
        except ValueError:
            return self._end([StreamErrorChunk(error=transport_error("gemini", "malformed chunk data"))])
        if not isinstance(data, dict):
            return []
        if data.get("error"):
            return self._end([StreamErrorChunk(error=error_from_reply("gemini", None, data))])
        self.usage(data.get("usageMetadata"))
        candidates = data.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(candidate, dict):
            feedback = data.get("promptFeedback")
            if isinstance(feedback, dict) and feedback.get("blockReason"):
                return self._end([StopChunk(stop_reason=StopReason.CONTENT_FILTER, usage=self._usage)])
            return []
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        chunks: list[StreamChunk] = []
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                chunks.extend(self._part(part))
        finish = candidate.get("finishReason")
        if isinstance(finish, str) and finish:
            chunks.extend(self._finish(finish))
        return chunks

    def end(self) -> list[StreamChunk]:
        """The byte stream ended: a reply without a ``finishReason`` did not complete."""
        if self.finished:
            return []
        message = "the stream ended before a finishReason"
        return self._end([StreamErrorChunk(error=transport_error("gemini", message))])

    def usage(self, metadata: Any) -> None:
        """``usageMetadata`` is the reply's running total: the latest report stands."""
        if not isinstance(metadata, dict):
            return
        self._usage = Usage(
            input_tokens=_count(metadata.get("promptTokenCount"))
            + _count(metadata.get("toolUsePromptTokenCount")),
            output_tokens=_count(metadata.get("candidatesTokenCount"))
            + _count(metadata.get("thoughtsTokenCount")),
        )

    def _end(self, chunks: list[StreamChunk]) -> list[StreamChunk]:
        self.finished = True
        return chunks

    def _close_reasoning(self) -> list[StreamChunk]:
        if not self._reasoning:
            return []
        self._reasoning = False
        signature, self._signature = self._signature, None
        return [ReasoningEnd(id="reasoning-0", signature=signature)]

    def _part(self, part: dict[str, Any]) -> list[StreamChunk]:
        text = part.get("text")
        raw = part.get("thoughtSignature")
        signature = raw if isinstance(raw, str) and raw else None
        thinking = isinstance(text, str) and bool(text)
        if part.get("thought") is True and (thinking or self._reasoning or signature is None):
            if signature is not None:
                self._signature = signature  # the thought block's own, given back on its thought part
            if not thinking:
                return []
            opening: list[StreamChunk] = [] if self._reasoning else [ReasoningStart(id="reasoning-0")]
            self._reasoning = True
            return [*opening, ReasoningDelta(id="reasoning-0", text=text)]
        if signature is None:
            return self._content(part)
        if part.get("thought") is True:
            part = {}  # an empty signed thought: only its signature is left to carry
        block = f"signature-{self._signed}"
        self._signed += 1
        signed: list[StreamChunk] = [ReasoningStart(id=block), ReasoningEnd(id=block, signature=signature)]
        return [*self._close_reasoning(), *signed, *self._content(part)]

    def _content(self, part: dict[str, Any]) -> list[StreamChunk]:
        text = part.get("text")
        call = part.get("functionCall")
        if isinstance(call, dict):
            call_id = str(call.get("id") or f"call-{self._calls}")
            self._calls += 1
            args = call.get("args")
            arguments = json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False)
            return [
                *self._close_reasoning(),
                ToolCallStart(id=call_id, name=str(call.get("name") or "")),
                ToolCallDelta(id=call_id, args_json_delta=arguments),
                ToolCallEnd(id=call_id),
            ]
        if isinstance(text, str) and text:
            return [*self._close_reasoning(), TextDelta(text=text)]
        return []

    def _finish(self, finish: str) -> list[StreamChunk]:
        chunks: list[StreamChunk] = [*self._close_reasoning()]
        reason = _FINISH_REASONS.get(finish)
        if reason is None:
            error = LlmError(
                kind=LlmErrorKind.UNKNOWN,
                message=f"the reply ended with finish reason {finish}",
                provider="gemini",
                code=finish,
            )
            chunks.append(StreamErrorChunk(error=error, usage=self._usage))
        else:
            if reason is StopReason.STOP and self._calls:
                reason = StopReason.TOOL_USE  # Gemini has no tool-use finish reason of its own
            chunks.append(StopChunk(stop_reason=reason, usage=self._usage))
        return self._end(chunks)
