"""Helpers for the engine's own tests: a session wired to a scripted or gated provider."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from relavium_reference import (
    AgentSession,
    AgentSnapshot,
    FunctionTool,
    LlmRequest,
    ScriptedProvider,
    SessionContext,
    SessionDeps,
    SessionEvent,
    StreamChunk,
    ToolCallInfo,
    ToolOutput,
    ToolRegistry,
)
from relavium_reference._model.llm import StopChunk, TextDelta, Usage
from relavium_reference._model.messages import AgentSessionRecord, parse_agent_session_record

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


def text_call(text: str, *, input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    return {
        "chunks": [
            {"type": "text_delta", "text": text},
            {
                "type": "stop",
                "stopReason": "stop",
                "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens},
            },
        ]
    }


def tool_call(call_id: str, name: str, args_json: str = "{}", *, preamble: str = "") -> dict[str, Any]:
    chunks: list[dict[str, Any]] = []
    if preamble:
        chunks.append({"type": "text_delta", "text": preamble})
    chunks += [
        {"type": "tool_call_start", "id": call_id, "name": name},
        {"type": "tool_call_delta", "id": call_id, "argsJsonDelta": args_json},
        {"type": "tool_call_end", "id": call_id},
        {"type": "stop", "stopReason": "tool_use", "usage": {"inputTokens": 7, "outputTokens": 3}},
    ]
    return {"chunks": chunks}


def error_call(kind: str, *, after_text: str | None = None) -> dict[str, Any]:
    chunks: list[dict[str, Any]] = []
    if after_text is not None:
        chunks.append({"type": "text_delta", "text": after_text})
    chunks.append({"type": "error", "error": {"kind": kind, "message": "scripted failure"}})
    return {"chunks": chunks}


AGENT = AgentSnapshot(
    id="helper", model="model-a", provider="openai", system_prompt="You help.", tools=("echo", "write_file")
)


async def _echo(args: Any, call: ToolCallInfo) -> ToolOutput:
    return ToolOutput(f"echo:{args}")


async def _write(args: Any, call: ToolCallInfo) -> ToolOutput:
    return ToolOutput("written")


def default_tools() -> ToolRegistry:
    return ToolRegistry(
        [
            FunctionTool(name="echo", function=_echo),
            FunctionTool(name="write_file", function=_write, action="fs_write", preview_key="path"),
        ]
    )


class GatedProvider:
    """A provider whose every call waits at a gate before each chunk; the test opens the gate."""

    def __init__(self, calls: Sequence[Sequence[StreamChunk]]) -> None:
        self.calls = list(calls)
        self.requests: list[LlmRequest] = []
        self.waiting = asyncio.Event()
        self.gate = asyncio.Event()

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        chunks = self.calls.pop(0)
        return self._play(chunks)

    async def _play(self, chunks: Sequence[StreamChunk]) -> AsyncIterator[StreamChunk]:
        for chunk in chunks:
            self.waiting.set()
            await self.gate.wait()
            self.gate.clear()
            self.waiting.clear()
            yield chunk


def gated_reply(text: str = "ok") -> list[StreamChunk]:
    return [TextDelta(text=text), StopChunk(stop_reason="stop", usage=Usage(input_tokens=4, output_tokens=2))]


async def _no_sleep(_seconds: float) -> None:
    return None


@dataclass
class Harness:
    session: AgentSession
    events: list[SessionEvent] = field(default_factory=list)
    provider: Any = None

    def types(self, *, session_only: bool = False) -> list[str]:
        return [e.type for e in self.events if not session_only or e.type.startswith("session:")]

    def of_type(self, event_type: str) -> list[SessionEvent]:
        return [e for e in self.events if e.type == event_type]


def make_session(
    provider: Any = None,
    *,
    calls: Sequence[dict[str, Any]] = (),
    agent: AgentSnapshot = AGENT,
    context: SessionContext | None = None,
    tools: ToolRegistry | None = None,
    resolver: Callable[[Any, str], Any] | None = None,
    session_id: str = "s-test",
    **deps: Any,
) -> Harness:
    if provider is None:
        provider = ScriptedProvider({"calls": list(calls)})
    events: list[SessionEvent] = []

    async def sink(event: SessionEvent) -> None:
        events.append(event)

    session = AgentSession(
        agent=agent,
        context=context or SessionContext(working_dir="."),
        deps=SessionDeps(
            resolve_provider=resolver or (lambda _p, _m: provider),
            emit=sink,
            tools=tools if tools is not None else default_tools(),
            sleep=_no_sleep,
            **deps,
        ),
        session_id=session_id,
    )
    return Harness(session=session, events=events, provider=provider)


def minimal_record(session_id: str = "s-1") -> AgentSessionRecord:
    """The smallest valid session record a store test starts from (a ``coder`` agent in ``/w``)."""
    return parse_agent_session_record(
        {
            "id": session_id,
            "agentSlug": "coder",
            "context": {"workingDir": "/w"},
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
        }
    )
