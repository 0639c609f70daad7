"""Tools a session may call, the registry that holds them, and the turn policy that governs them.

A session inherits the agent's tools and can only narrow them: the advertised set is the agent's
tool names that the registry knows, filtered by the policy's ``advertise`` predicate.  A tool that
declares a governed ``action`` (``fs_write``, ``process``, ``egress``, ``os``) runs only after the
policy's ``confirm`` hook approves it; without a hook the answer is no (fail-closed, KD-TOOL-1).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import ToolDef

__all__ = [
    "UNKNOWN_TOOL",
    "ApprovalRequest",
    "FunctionTool",
    "GovernedAction",
    "Tool",
    "ToolCallInfo",
    "ToolOutput",
    "ToolRegistry",
    "TurnPolicy",
]

GovernedAction = Literal["fs_write", "process", "egress", "os"]

UNKNOWN_TOOL = "unknown_tool"
"""The fixed structural name recorded when the model names a tool the session cannot resolve."""


@dataclass(frozen=True)
class ToolCallInfo:
    """What a tool is told about the call it serves."""

    call_id: str
    name: str
    round_number: int


@dataclass(frozen=True)
class ToolOutput:
    text: str
    is_error: bool = False


@runtime_checkable
class Tool(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...

    @property
    def action(self) -> GovernedAction | None: ...

    def preview(self, args: Any) -> dict[str, str]:
        """The approval preview for ``args`` (``path`` / ``command`` / ``host``)."""
        ...

    async def run(self, args: Any, call: ToolCallInfo) -> ToolOutput: ...


@dataclass(frozen=True)
class FunctionTool:
    """A tool backed by an async function; the simplest way to register one."""

    name: str
    function: Callable[[Any, ToolCallInfo], Awaitable[ToolOutput]]
    description: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    action: GovernedAction | None = None
    preview_key: str | None = None

    def preview(self, args: Any) -> dict[str, str]:
        if self.preview_key and isinstance(args, dict) and self.preview_key in args:
            key = {"fs_write": "path", "process": "command", "egress": "host"}.get(self.action or "")
            if key:
                return {key: str(args[self.preview_key])}
        return {}

    async def run(self, args: Any, call: ToolCallInfo) -> ToolOutput:
        return await self.function(args, call)


class ToolRegistry:
    """Name -> tool. Immutable once built.  ``InvalidInputError``: ``tools`` is not an iterable of tools
    (objects with a string ``name``), or two share a name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
            raise InvalidInputError("a tool registry needs an iterable of tools", location="tools")
        for tool in tools:
            if not isinstance(getattr(tool, "name", None), str):
                raise InvalidInputError("a tool must have a string name", location="tools.name")
            if tool.name in self._tools:
                raise InvalidInputError("two tools share a name", location=f"tools.{tool.name}")
            self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def definitions(self, names: Iterable[str]) -> list[ToolDef]:
        """Fresh tool definitions for ``names`` (each request owns its own list)."""
        out = []
        for name in names:
            tool = self._tools[name]
            out.append(
                ToolDef(name=tool.name, description=tool.description, parameters=dict(tool.parameters))
            )
        return out


@dataclass(frozen=True)
class ApprovalRequest:
    """What the confirm hook is asked: may this governed action run?"""

    tool_id: str
    action: GovernedAction
    preview: Mapping[str, str]
    call_id: str


@dataclass(frozen=True)
class TurnPolicy:
    """The reseat-less mode projection: which tools are advertised, and who approves governed actions.

    The session snapshots the policy when a turn starts; a change made during a turn applies to the
    next one.
    """

    advertise: Callable[[str], bool] | None = None
    confirm: Callable[[ApprovalRequest], Awaitable[bool]] | None = None

    def advertises(self, tool_id: str) -> bool:
        return True if self.advertise is None else bool(self.advertise(tool_id))

    async def approves(self, request: ApprovalRequest) -> bool:
        if self.confirm is None:
            return False
        return bool(await self.confirm(request))
