"""Breaks of what a session is (clauses AS-SESS-*): one user message, one turn; one model and its
chain per instance, kept across requests and rebuilt at a reseat; the provider seam's data.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import Observed, ProviderRequests, with_http_provider
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_reference import SessionStopReason
from relavium_reference._host.dialect_client import HttpProvider
from relavium_reference._model.events import (
    SessionEvent,
    SessionTurnCompleted,
    SessionTurnStarted,
    TokensUsed,
)
from relavium_reference._rules.sse import SseDecoder, SseEvent

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


class _PerReadDecoder(SseDecoder):
    """Takes every network read for whole lines: a frame split across two reads is lost."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        fresh = SseDecoder()
        return fresh.feed(chunk) + fresh.close()


@break_of(
    name="http-frames-per-read",
    summary=("the HTTP client parses each network read as whole SSE lines, losing frames split across reads"),
    clauses=("AS-SESS-006",),
    through=with_http_provider,
)
class _FramesPerRead(HttpProvider):
    decoder = _PerReadDecoder


@break_of(
    name="tool-round-is-a-turn",
    summary="each tool round is published as a turn of its own",
    clauses=("AS-SESS-006",),
)
class _ToolRoundIsATurn(Observed):
    """Every tool round is published as a turn of its own (a terminal, then a new start)."""

    async def seen(self, event: SessionEvent) -> None:
        if event.type == "agent:tool_result":
            await self._stamper.emit(
                SessionTurnCompleted,
                stop_reason=SessionStopReason.STOP,
                tokens_used=TokensUsed(input=0, output=0),
            )
            await self._stamper.emit(SessionTurnStarted)


@break_of(
    name="system-prompt-dropped-later",
    summary="requests after the first lose the agent's system prompt",
    clauses=("AS-SESS-001", "AS-SESS-002"),
)
class _SystemPromptDropped(ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        if self.opened[handle] > 1:
            params["request"].pop("system", None)


@break_of(
    name="later-requests-on-another-model",
    summary="requests after the first go to another model",
    clauses=("AS-SESS-005",),
)
class _LaterRequestsOnAnotherModel(ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        if self.opened[handle] > 1:
            params["model"] = f"{params.get('model')}-mini"
            params["request"]["model"] = params["model"]


@break_of(
    name="reseat-keeps-the-model",
    summary="a reseat resumes on the model the session was created with",
    clauses=("AS-SESS-003",),
)
class _ReseatKeepsTheModel(WireVariant):
    """A reseat resumes on the model (and chain) the session was created with, not the chosen one."""

    kept: tuple[str, ...] = ("model", "provider", "fallback_chain")

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            snapshot = (params.get("record") or {}).get("agentSnapshot") or {}
            agent = dict(params.get("agent") or {})
            for key in self.kept:
                wire = "fallbackChain" if key == "fallback_chain" else key
                if wire in snapshot:
                    agent[key] = snapshot[wire]
                else:
                    agent.pop(key, None)
            params = {**params, "agent": agent}
        return await super().operation(method, params)


@break_of(
    name="reseat-keeps-the-chain",
    summary="a reseat keeps the old model's fallback chain",
    clauses=("AS-SESS-004",),
)
class _ReseatKeepsTheChain(_ReseatKeepsTheModel):
    kept = ("fallback_chain",)
