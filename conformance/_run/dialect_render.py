"""A case's provider script written out in a vendor's HTTP dialect (capability ``wire``).

The same script a seam-level case plays through ``provider.next`` is rendered here as the bytes a vendor
would send (``shared/spec/provider-wire-facts.md``): Anthropic Messages server-sent events, OpenAI Chat
Completions ``data:`` chunks ended by ``[DONE]`` (DeepSeek is the OpenAI dialect with its own overflow
wording), or Gemini ``streamGenerateContent`` ``data:`` chunks, the last one carrying ``finishReason``.
Usage goes where the vendor puts it (Anthropic: input in ``message_start``, cumulative output in
``message_delta``; OpenAI: a last chunk with empty ``choices``; Gemini: ``usageMetadata`` on every chunk, a
running total, complete on the last).  Gemini sends a function call whole: the script's argument fragments
are joined and sent as one ``functionCall`` part (they must make one JSON object).

A classified error chunk becomes that dialect's error: as the first step of an invocation, an HTTP status
and the vendor's JSON envelope; later, an error frame inside the 200 stream, after which the stream ends
(Anthropic sends no ``message_stop`` then).  The payload chosen for each kind is KD-WIRE-2; the overflows
are the official recorded ones (KD-OVF-1).  Kind ``transport`` is a connection dropped before any reply.
An Anthropic error chunk with code ``model_context_window_exceeded`` is the vendor's native context stop: a
200 stream ending with that stop reason and the chunk's usage.  A ``{provider_error: name}`` step is the
recorded payload itself: its status and body, or (status null) its frame inside a 200 stream.
Wire-only steps give a recorded reply verbatim (``wire: {status, body}``, for look-alikes) or drop the
connection mid-stream (``wire: disconnect``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from relavium_conformance._corpus.cases import DoStep, HoldStep, ProviderErrorStep, WireReply, WireStep
from relavium_conformance._corpus.provider_errors import RecordedProviderError, provider_error
from relavium_conformance._errors import KitUsageError

__all__ = ["DIALECT_PATHS", "ERROR_PAYLOADS", "Reply", "endpoint_model", "render"]

DIALECT_PATHS: dict[str, str] = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "deepseek": "/chat/completions",
    "gemini": "/v1beta/models/{model}:streamGenerateContent?alt=sse",
}
"""The request path of each dialect under its base URL's host (OpenAI's base URL carries ``/v1``; Gemini's
path names the model, and ``/v1`` stands for ``/v1beta`` too, as newer SDKs send)."""

_GEMINI_PATH = re.compile(
    r"^/v1(?:beta)?/models/(?P<model>[^/:?]+):streamGenerateContent\?(?:[^#]*&)?alt=sse(?:&|$)"
)


def endpoint_model(dialect: str, path: str, body: Any) -> tuple[bool, str | None]:
    """Whether ``path`` (with its query) is the dialect's streaming endpoint, and the model it asks for."""
    if dialect == "gemini":
        match = _GEMINI_PATH.match(path)
        return (True, unquote(match["model"])) if match else (False, None)
    model = body.get("model") if isinstance(body, dict) else None
    return path.split("?", 1)[0] == DIALECT_PATHS.get(dialect), model if isinstance(model, str) else None


NATIVE_STOP = "model_context_window_exceeded"

_ANTHROPIC_ERRORS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "timeout": (504, "timeout_error", "Request timed out"),
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "bad_request": (
        400,
        "invalid_request_error",
        "messages.0.content: text content blocks must be non-empty",
    ),
    "context_overflow": (400, "invalid_request_error", "prompt is too long: 205429 tokens > 200000 maximum"),
}
_OPENAI_ERRORS: dict[str, tuple[int, dict[str, Any]]] = {
    "rate_limit": (
        429,
        {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"},
    ),
    "overloaded": (
        503,
        {"message": "The engine is currently overloaded, please try again later", "type": "server_error"},
    ),
    "timeout": (504, {"message": "Gateway timeout", "type": "server_error", "code": None}),
    "auth": (
        401,
        {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"},
    ),
    "bad_request": (
        400,
        {
            "message": "Invalid value for 'temperature'",
            "type": "invalid_request_error",
            "code": "invalid_value",
        },
    ),
    "context_overflow": (
        400,
        {
            "message": "This model's maximum context length is 4097 tokens. However, your messages "
            "resulted in 4294 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
    ),
}
_DEEPSEEK_OVERFLOW = {
    "message": "This model's maximum context length is 65536 tokens. However, you requested 66343 tokens "
    "(62247 in the messages, 4096 in the completion). Please reduce the length of the messages or "
    "completion.",
    "type": "invalid_request_error",
    "param": None,
    "code": "invalid_request_error",
}


_GEMINI_ERRORS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    "timeout": (504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
    "auth": (
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). Please use API "
        "Key or other form of API consumer identity to call this API.",
    ),
    "bad_request": (400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified"),
    "context_overflow": (
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
    ),
}


def _error_body(dialect: str, kind: str) -> tuple[int, dict[str, Any]]:
    if dialect == "gemini":
        if kind not in _GEMINI_ERRORS:
            raise KitUsageError(f"no {dialect} payload for error kind {kind!r} (KD-WIRE-2)")
        status, name, message = _GEMINI_ERRORS[kind]
        return status, {"error": {"code": status, "message": message, "status": name}}
    if dialect == "anthropic":
        if kind not in _ANTHROPIC_ERRORS:
            raise KitUsageError(f"no {dialect} payload for error kind {kind!r} (KD-WIRE-2)")
        status, kind_name, message = _ANTHROPIC_ERRORS[kind]
        return status, {"type": "error", "error": {"type": kind_name, "message": message}}
    if kind == "context_overflow" and dialect == "deepseek":
        return 400, {"error": dict(_DEEPSEEK_OVERFLOW)}
    if kind not in _OPENAI_ERRORS:
        raise KitUsageError(f"no {dialect} payload for error kind {kind!r} (KD-WIRE-2)")
    status, inner = _OPENAI_ERRORS[kind]
    return status, {"error": {"param": None, "code": None, **inner}}


ERROR_PAYLOADS: dict[str, tuple[str, ...]] = {
    "anthropic": tuple(_ANTHROPIC_ERRORS),
    "openai": tuple(_OPENAI_ERRORS),
    "deepseek": tuple(_OPENAI_ERRORS),
    "gemini": tuple(_GEMINI_ERRORS),
}
"""The seam error kinds each dialect can render (plus ``transport``: a dropped connection)."""


@dataclass
class Reply:
    """What the loopback server sends for one request: an error reply, or a 200 stream of SSE frames."""

    status: int = 200
    body: bytes = b""
    frames: list[bytes] = field(default_factory=list)
    disconnect: bool = False  # drop the connection after the frames (mid-stream), or before any reply
    silent: bool = False  # no reply at all: the connection closes right after the request


def _usage(steps: Sequence[Any]) -> tuple[int, int]:
    for step in steps:
        if isinstance(step, dict) and step.get("type") in ("stop", "error") and step.get("usage"):
            usage = step["usage"]
            return int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))
    return 0, 0


def _is_native_stop(dialect: str, step: Any) -> bool:
    """Anthropic's native context-window stop: a 200 reply that ends with that stop reason (KD-OVF-3)."""
    if dialect != "anthropic" or not isinstance(step, dict) or step.get("type") != "error":
        return False
    return (step.get("error") or {}).get("code") == NATIVE_STOP


def _recorded(step: Any) -> RecordedProviderError | None:
    return provider_error(step.provider_error) if isinstance(step, ProviderErrorStep) else None


def _first_reply(dialect: str, step: Any) -> Reply | None:
    if isinstance(step, WireStep) and isinstance(step.wire, WireReply):
        return Reply(status=step.wire.status, body=json.dumps(step.wire.body).encode())
    recorded = _recorded(step)
    if recorded is not None and recorded.status is not None:  # a recorded reply, served as recorded
        return Reply(status=recorded.status, body=json.dumps(recorded.body).encode())
    if _is_native_stop(dialect, step):
        return None
    if isinstance(step, dict) and step.get("type") == "error":
        kind = str((step.get("error") or {}).get("kind"))
        if kind == "transport":
            return Reply(silent=True)
        status, body = _error_body(dialect, kind)
        return Reply(status=status, body=json.dumps(body).encode())
    return None


def render(dialect: str, steps: Sequence[Any], model: str) -> Reply:
    """One invocation's reply in ``dialect`` (``anthropic``, ``openai``, ``deepseek`` or ``gemini``)."""
    if dialect not in DIALECT_PATHS:
        raise KitUsageError(f"the kit serves no {dialect!r} dialect over HTTP")
    if any(isinstance(step, DoStep | HoldStep) for step in steps):
        raise KitUsageError("a wire invocation has no do or hold steps")
    first = _first_reply(dialect, steps[0]) if steps else None
    if first is not None:
        return first
    writer: _Anthropic | _OpenAi | _Gemini
    if dialect == "anthropic":
        writer = _Anthropic(model, _usage(steps))
    elif dialect == "gemini":
        writer = _Gemini(model, _usage(steps))
    else:
        writer = _OpenAi(dialect, model, _usage(steps))
    reply = Reply(frames=writer.start())
    for step in steps:
        if isinstance(step, WireStep):
            if isinstance(step.wire, WireReply):
                raise KitUsageError("a written-out reply must be the first step of its invocation")
            reply.disconnect = True
            return reply
        recorded = _recorded(step)
        if recorded is not None:  # a recorded stream error frame (its status is null)
            reply.frames.append(writer.error(recorded.body))
            return reply
        kind = step.get("type")
        if _is_native_stop(dialect, step):
            reply.frames.extend(writer.chunk({"type": "stop", "stopReason": NATIVE_STOP}))
            return reply
        if kind == "error":
            _, body = _error_body(dialect, str((step.get("error") or {}).get("kind")))
            reply.frames.append(writer.error(body))
            return reply
        reply.frames.extend(writer.chunk(step))
        if kind == "stop":
            return reply
    return reply  # a script without a stop: the stream ends cleanly but incomplete


def _sse(event: str | None, data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


_ANTHROPIC_STOPS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_use": "tool_use",
    "content_filter": "refusal",
}
_OPENAI_STOPS = {
    "stop": "stop",
    "length": "length",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}


class _Anthropic:
    def __init__(self, model: str, usage: tuple[int, int]) -> None:
        self._model = model
        self._input, self._output = usage
        self._index = -1
        self._open: str | None = None  # the kind of the open content block

    def start(self) -> list[bytes]:
        message: dict[str, Any] = {
            "id": "msg_kit",
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self._input, "output_tokens": 1},
        }
        return [
            _sse("message_start", {"type": "message_start", "message": message}),
            _sse("ping", {"type": "ping"}),
        ]

    def _close(self) -> list[bytes]:
        if self._open is None:
            return []
        self._open = None
        return [_sse("content_block_stop", {"type": "content_block_stop", "index": self._index})]

    def _block(self, kind: str, block: dict[str, Any]) -> list[bytes]:
        frames = self._close()
        self._index += 1
        self._open = kind
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        return [*frames, _sse("content_block_start", start)]

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _sse(
            "content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta}
        )

    def chunk(self, step: dict[str, Any]) -> list[bytes]:
        kind = step.get("type")
        frames: list[bytes] = []
        if kind == "text_delta":
            if self._open != "text":
                frames += self._block("text", {"type": "text", "text": ""})
            frames.append(self._delta({"type": "text_delta", "text": step["text"]}))
        elif kind == "reasoning_start":
            frames += self._block("thinking", {"type": "thinking", "thinking": ""})
        elif kind == "reasoning_delta":
            frames.append(self._delta({"type": "thinking_delta", "thinking": step["text"]}))
        elif kind == "reasoning_end":
            if step.get("signature"):
                frames.append(self._delta({"type": "signature_delta", "signature": step["signature"]}))
            frames += self._close()
        elif kind == "tool_call_start":
            block = {"type": "tool_use", "id": step["id"], "name": step["name"], "input": {}}
            frames += self._block("tool_use", block)
            frames.append(self._delta({"type": "input_json_delta", "partial_json": ""}))
        elif kind == "tool_call_delta":
            frames.append(self._delta({"type": "input_json_delta", "partial_json": step["argsJsonDelta"]}))
        elif kind == "tool_call_end":
            frames += self._close()
        elif kind == "stop":
            stop = str(step.get("stopReason"))
            reason = NATIVE_STOP if stop == NATIVE_STOP else _ANTHROPIC_STOPS.get(stop, "end_turn")
            delta = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None}}
            frames += self._close()
            frames.append(_sse("message_delta", {**delta, "usage": {"output_tokens": self._output}}))
            frames.append(_sse("message_stop", {"type": "message_stop"}))
        return frames

    def error(self, body: dict[str, Any]) -> bytes:
        return _sse("error", body)


class _OpenAi:
    def __init__(self, dialect: str, model: str, usage: tuple[int, int]) -> None:
        self._dialect = dialect
        self._model = model
        self._input, self._output = usage
        self._calls: dict[str, int] = {}

    def _frame(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        chunk = {
            "id": "chatcmpl-kit",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": self._model,
            "choices": choices,
            **extra,
        }
        return _sse(None, chunk)

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return self._frame([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    def start(self) -> list[bytes]:
        return [self._delta({"role": "assistant", "content": ""})]

    def chunk(self, step: dict[str, Any]) -> list[bytes]:
        kind = step.get("type")
        if kind == "text_delta":
            return [self._delta({"content": step["text"]})]
        if kind == "reasoning_delta" and self._dialect == "deepseek":
            return [self._delta({"content": None, "reasoning_content": step["text"]})]
        if kind == "tool_call_start":
            index = self._calls.setdefault(step["id"], len(self._calls))
            call = {"index": index, "id": step["id"], "type": "function"}
            return [
                self._delta({"tool_calls": [{**call, "function": {"name": step["name"], "arguments": ""}}]})
            ]
        if kind == "tool_call_delta":
            index = self._calls.get(step["id"], 0)
            fragment = {"index": index, "function": {"arguments": step["argsJsonDelta"]}}
            return [self._delta({"tool_calls": [fragment]})]
        if kind == "stop":
            reason = _OPENAI_STOPS.get(str(step.get("stopReason")), "stop")
            usage = {
                "prompt_tokens": self._input,
                "completion_tokens": self._output,
                "total_tokens": self._input + self._output,
            }
            return [self._delta({}, reason), self._frame([], usage=usage), _sse(None, "[DONE]")]
        return []

    def error(self, body: dict[str, Any]) -> bytes:
        return _sse(None, body)


_GEMINI_STOPS = {"stop": "STOP", "length": "MAX_TOKENS", "tool_use": "STOP", "content_filter": "SAFETY"}


class _Gemini:
    """Every chunk a whole ``GenerateContentResponse``; usage on each, a running total (the input from the
    first chunk on, the output complete on the last), so a reader that adds chunk usages up is caught."""

    def __init__(self, model: str, usage: tuple[int, int]) -> None:
        self._model = model
        self._input, self._output = usage
        self._call: dict[str, str] | None = None  # the function call being written: id, name, arguments

    def _frame(self, parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        usage: dict[str, Any] = {"promptTokenCount": self._input, "totalTokenCount": self._input}
        if finish is not None:
            candidate["finishReason"] = finish
            usage = {
                "promptTokenCount": self._input,
                "candidatesTokenCount": self._output,
                "totalTokenCount": self._input + self._output,
            }
        response = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self._model,
            "responseId": "kit-response",
        }
        return _sse(None, response)

    def start(self) -> list[bytes]:
        return []

    def _function_call(self) -> list[bytes]:
        call, self._call = self._call, None
        if call is None:
            return []
        try:
            args = json.loads(call["args"] or "{}")
        except ValueError:
            args = None
        if not isinstance(args, dict):
            raise KitUsageError("Gemini sends a function call whole: its arguments must make one JSON object")
        return [self._frame([{"functionCall": {"id": call["id"], "name": call["name"], "args": args}}])]

    def chunk(self, step: dict[str, Any]) -> list[bytes]:
        kind = step.get("type")
        if kind == "text_delta":
            return [self._frame([{"text": step["text"]}])]
        if kind == "reasoning_delta":
            return [self._frame([{"text": step["text"], "thought": True}])]
        if kind == "reasoning_end" and step.get("signature"):
            raise KitUsageError("the kit writes no Gemini thought signature")
        if kind == "tool_call_start":
            frames = self._function_call()
            self._call = {"id": step["id"], "name": step["name"], "args": ""}
            return frames
        if kind == "tool_call_delta" and self._call is not None:
            self._call["args"] += step["argsJsonDelta"]
            return []
        if kind == "tool_call_end":
            return self._function_call()
        if kind == "stop":
            finish = _GEMINI_STOPS.get(str(step.get("stopReason")), "STOP")
            return [*self._function_call(), self._frame([{"text": ""}], finish)]
        return []

    def error(self, body: dict[str, Any]) -> bytes:
        return _sse(None, body)
