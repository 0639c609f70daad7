"""Breaks of the tools, secrets and security scope (clauses AS-SEC-*): the context variables, the tools
advertised and the tools that need an approval; a host callback's diagnostic kept out of the public error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import Governor, ProviderRequests, WrappedSession
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.protocol_messages import ToolSpec
from relavium_reference import AgentSession, FunctionTool, SessionInput, TurnResult
from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.events import SessionStarted
from relavium_reference._model.invocation import Admission, AdmissionRefused, AdmissionRequest, Admitted
from relavium_reference._model.usage_writer import (
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)

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


@break_of(
    name="callback-diagnostic-in-terminal",
    summary="a failing cost governor's or usage writer's own message becomes the turn's public error",
    clauses=("AS-OBS-007",),
)
class _DiagnosticInTerminal(WrappedSession):
    """The text of the last failing accounting callback is copied into the turn's terminal."""

    _diagnostic: str | None = None

    def governor(self, inner: Admission) -> Admission:
        session = self

        class Noting(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                try:
                    return await self.inner.admit(request)
                except Exception as exc:
                    session._diagnostic = str(exc)
                    raise

        return Noting(inner)

    def writer(self, inner: UsageWriter) -> UsageWriter:
        session = self

        class Noting:
            async def open(self, basis: UsageBasis) -> UsageTotals:
                return await inner.open(basis)

            async def pending(self, record: UsagePending) -> None:
                try:
                    await inner.pending(record)
                except Exception as exc:
                    session._diagnostic = str(exc)
                    raise

            async def resolved(self, record: UsageResolved) -> UsageSettled:
                return await inner.resolved(record)

        return Noting()

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.error_code is not None and self._diagnostic is not None:
            end = replace(end, error_message=self._diagnostic)
        return await super()._settle(end, progress)
