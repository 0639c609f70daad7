"""Breaks of the tools, secrets and security scope (clauses AS-SEC-*): the context variables, the tools
advertised and the tools that need an approval.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import ProviderRequests
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.protocol_messages import ToolSpec
from relavium_reference import AgentSession, FunctionTool, SessionInput
from relavium_reference._model.events import SessionStarted

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="context-variables-dropped",
    summary="session:started does not echo context.variables",
    clauses=("AS-SEC-007",),
)
class _ContextNotEchoed(AgentSession):
    async def start(self) -> None:
        self._enter(SessionInput.START)
        context = self._context.model_copy(update={"variables": None})
        await self._stamper.emit(
            SessionStarted, agent_ref=self.agent_ref, model=self._agent.model, context=context
        )


@break_of(
    name="variables-not-persisted",
    summary="the persisted session row loses context.variables",
    clauses=("AS-SEC-008",),
)
class _VariablesNotPersisted(WireVariant):
    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        context = (params.get("record") or {}).get("context")
        if method == "host.createSession" and isinstance(context, dict):
            context.pop("variables", None)
        return params


@break_of(
    name="extra-tool-advertised",
    summary="every request advertises a tool the agent does not have",
    clauses=("AS-SEC-001", "AS-SEC-005"),
)
class _ExtraToolAdvertised(ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        tools = params["request"].get("tools")
        extra = {"name": "shell", "description": "Run anything.", "parameters": {"type": "object"}}
        params["request"]["tools"] = [*(tools or []), extra]


@break_of(
    name="git-commit-ungoverned",
    summary="git_commit runs inside a session with no approval",
    clauses=("AS-SEC-003",),
)
class _GitCommitUngoverned(WireVariant):
    """git_commit is registered without its governed action, so it runs with no approval."""

    def _tool(self, handle: str, spec: ToolSpec) -> FunctionTool:
        if spec.name == "git_commit":
            spec = spec.model_copy(update={"action": None, "preview_key": None})
        return super()._tool(handle, spec)
