"""The kit's message set: one set of methods and shapes, carried in-process or as JSON-RPC over stdio.

Kit -> implementation (operations): ``hello``, ``session.create``, ``session.start``, ``session.send``,
``session.abort``, ``session.cancel``, ``session.setTurnPolicy``, ``session.runUserCommand``, ``bye``,
and the pure functions the vector suites check (``pure.reconstructSessionState``, ``pure.workflowId``,
``pure.exportWorkflow``, ``pure.storedRowColumns``, ``pure.readStoredRow``: no session, no callback, an
answer computed from the params alone).
Implementation -> kit (the world the session lives in): ``provider.open``, ``provider.next``,
``tool.call``, ``host.confirm``, ``host.emit``, ``host.sleep``.

Every params and result object has a model here; ``schemas/protocol/`` holds their JSON Schemas
(generated, with a drift test) and ``--validate-protocol`` checks every message against them.
The reference is ``docs/protocol.md``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictInt, StrictStr, TypeAdapter

from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION, RpcError
from relavium_reference._host.session import ExportResult, TurnResult
from relavium_reference._model.commands import UserCommandOutcome
from relavium_reference._model.llm import LlmRequest, StreamChunk
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage, ToolCallPart
from relavium_reference._model.records import CostEntry
from relavium_reference._model.shapes import AgentSnapshot, SessionContext, StrictModel, WireModel
from relavium_reference._rules.resume import SessionResumeState
from relavium_reference._schemas import SCHEMA_DIALECT

__all__ = [
    "CALLBACKS",
    "INVALID_INPUT",
    "OPERATIONS",
    "PROTOCOL_VERSION",
    "PURE_METHODS",
    "SESSION_STATE_ERROR",
    "UNSUPPORTED_OPERATION",
    "Callback",
    "ExportWorkflowResult",
    "HelloResult",
    "MethodShape",
    "OperationError",
    "PureSessionParams",
    "ReadStoredRowParams",
    "ReadStoredRowResult",
    "StoredMessageRow",
    "StoredRowColumns",
    "StoredRowColumnsParams",
    "StoredRowError",
    "WorkflowIdParams",
    "WorkflowIdResult",
    "error_from_rpc",
    "protocol_schemas",
]

# JSON-RPC error codes an implementation uses for the session's own refusals.
SESSION_STATE_ERROR = -32001  # data: {"kind": "session_state", "code": "<SessionStateError code>"}
INVALID_INPUT = -32002  # data: {"kind": "invalid_input", "message": "<fixed message>"}
UNSUPPORTED_OPERATION = -32003  # data: {"kind": "unsupported"}

Callback = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""How an implementation calls the kit: ``await callback(method, params) -> result``."""


class _Msg(WireModel):
    pass


class KitInfo(_Msg):
    name: str
    version: str


class HelloParams(_Msg):
    protocol_version: str
    kit: KitInfo


class ImplementationInfo(_Msg):
    name: Annotated[str, Field(min_length=1)]
    version: str
    language: str


class HelloResult(_Msg):
    protocol_version: str
    implementation: ImplementationInfo
    capabilities: tuple[str, ...] = ()


class ToolSpec(_Msg):
    """A tool the kit plays: calls reach the kit as ``tool.call``."""

    name: Annotated[str, Field(min_length=1)]
    description: str | None = None
    parameters: dict[str, Any] | None = None
    action: Literal["fs_write", "process", "egress", "os"] | None = None
    preview_key: str | None = None


class DepsSpec(_Msg):
    max_turns: int | None = None
    max_tool_turns: int | None = None
    allowed_commands: tuple[str, ...] = ()
    allowed_command_globs: tuple[str, ...] = ()
    command_output_limit: int | None = None
    unavailable_providers: tuple[str, ...] = ()
    """Providers the host holds no credential for: resolving one is refused before any invocation
    (KD-CAP-1), so the implementation must not call ``provider.open`` for it."""


class CaseLabel(_Msg):
    """The conformance case a session serves: informative, so the implementation's logs can name it."""

    id: Annotated[str, Field(min_length=1)]
    title: str | None = None


class CreateParams(_Msg):
    """``case`` (optional) names the conformance case; an implementation may log it and must not act on it."""

    handle: str
    agent: AgentSnapshot
    context: SessionContext
    deps: DepsSpec = Field(default_factory=DepsSpec)
    tools: tuple[ToolSpec, ...] = ()
    session_id: str | None = None
    case: CaseLabel | None = None


class ResumeParams(CreateParams):
    """Continue a persisted session as a new instance under ``handle`` (the old instance is dropped).

    The implementation builds the resume state from ``record`` and ``messages`` with its own
    reconstruction, unless ``state`` is given: then it must resume from exactly that state, which lets
    a case check that an invalid state is refused (``invalid_resume_state``).

    ``messages`` are durable rows as the host holds them; the protocol carries them as plain objects so
    that a case can hand over a row the implementation must refuse (an unknown field, raw tool
    arguments): checking them strictly is the implementation's job (``invalid_input``).
    """

    record: AgentSessionRecord
    messages: tuple[dict[str, Any], ...] = ()
    state: SessionResumeState | None = None


class CreateResult(_Msg):
    session_id: Annotated[str, Field(min_length=1)]


class HandleParams(_Msg):
    handle: str


class SendParams(_Msg):
    handle: str
    text: str


class PolicySpec(_Msg):
    """A turn policy as data: ``advertise`` lists the tools kept (absent: all); ``confirm`` installs the
    approval hook, which then asks the kit through ``host.confirm``."""

    advertise: tuple[str, ...] | None = None
    confirm: bool = False


class SetTurnPolicyParams(_Msg):
    handle: str
    policy: PolicySpec | None = None


class RunUserCommandParams(_Msg):
    handle: str
    command: str
    args: tuple[str, ...] = ()


class Empty(_Msg):
    pass


class ProviderOpenParams(_Msg):
    handle: str
    provider: str
    model: str
    request: LlmRequest


class ProviderOpenResult(_Msg):
    stream: str


class ProviderNextParams(_Msg):
    handle: str
    stream: str


class ProviderNextResult(_Msg):
    chunk: StreamChunk


class ToolCallParams(_Msg):
    handle: str
    call_id: str
    name: str
    args: Any = None
    round: int


class ToolCallResult(_Msg):
    text: str
    is_error: bool = False


class HostConfirmParams(_Msg):
    handle: str
    tool_id: str
    action: Literal["fs_write", "process", "egress", "os"]
    preview: dict[str, str]
    call_id: str


class HostConfirmResult(_Msg):
    approved: bool


class HostEmitParams(_Msg):
    handle: str
    event: dict[str, Any]


class HostSleepParams(_Msg):
    handle: str
    seconds: Annotated[float, Field(ge=0)]


class ExportParams(_Msg):
    """Write the session's workflow scaffold to ``workflowPath`` (a file the kit then reads)."""

    handle: str
    workflow_path: Annotated[str, Field(min_length=1)]


class HostLoadSessionParams(_Msg):
    handle: str
    session_id: str


class HostLoadSessionResult(_Msg):
    """The host's persisted transcript: the record and every durable row, in sequence order."""

    record: AgentSessionRecord
    messages: tuple[SessionMessage, ...]


class HostCreateSessionParams(_Msg):
    handle: str
    record: AgentSessionRecord


class HostCommitTurnParams(_Msg):
    """One completed turn, to commit all or nothing. ``turn`` is checked by the kit against the
    strict ``CompletedTurn`` shape; an answer with an error means the commit failed (the session latches)."""

    handle: str
    session_id: str
    turn: dict[str, Any]


class HostRecordCostParams(_Msg):
    handle: str
    session_id: str
    cost: CostEntry


class PureSessionParams(_Msg):
    """A persisted session as the pure functions read it: its record and its durable rows (any order)."""

    record: AgentSessionRecord
    messages: tuple[SessionMessage, ...]


class WorkflowIdParams(_Msg):
    title: str | None = None
    session_id: str


class WorkflowIdResult(_Msg):
    workflow_id: str


class ExportWorkflowResult(_Msg):
    """The exported workflow: ``document`` as JSON data and ``yaml``, its exact serialised text."""

    document: dict[str, Any]
    yaml: str


class StoredRowColumnsParams(_Msg):
    """A message about to be stored, and the completed turn's stop reason when it is the terminal row.

    Any string is carried, so that a case can ask about a reason the store must refuse: only ``stop``,
    ``length`` and ``content_filter``, for an assistant row without a call part, are accepted.
    """

    message: SessionMessage
    finish_reason: StrictStr | None = None


class StoredRowColumns(_Msg):
    """The denormalised columns of a ``session_messages`` row (KD-DB-3), every key present.

    ``toolCalls`` is the column's JSON text as its parsed value, so implementations need not agree on
    whitespace or key order.
    """

    content: str | None
    tool_calls: tuple[ToolCallPart, ...] | None
    tool_call_id: str | None
    name: str | None
    finish_reason: Literal["stop", "length", "content_filter", "tool_use"] | None


class StoredMessageRow(StrictModel):
    """One ``session_messages`` row as stored: the companion columns, snake_case, JSON columns as text."""

    id: StrictStr
    session_id: StrictStr
    sequence_number: StrictInt
    role: StrictStr
    content: StrictStr | None
    content_parts: StrictStr | None
    tool_calls: StrictStr | None
    tool_call_id: StrictStr | None
    name: StrictStr | None
    finish_reason: StrictStr | None
    model_id: StrictStr | None
    compaction_dropped_through_sequence: StrictInt | None
    created_at: StrictInt


class ReadStoredRowParams(_Msg):
    row: StoredMessageRow


StoredRowError = Literal[
    "malformed_json",
    "invalid_message",
    "text_mismatch",
    "tool_calls_mismatch",
    "tool_call_id_mismatch",
    "name_mismatch",
    "finish_reason_invalid",
]
"""The fixed store errors (KD-DB-4) a single message row can earn on read."""


class ReadStoredMessage(_Msg):
    """The row is sound: the message it holds."""

    message: SessionMessage


class ReadStoredRowRefusal(_Msg):
    """The store must refuse the row, with this fixed code."""

    error: StoredRowError


ReadStoredRowResult = ReadStoredMessage | ReadStoredRowRefusal


class MethodShape(BaseModel):
    params: Any
    result: Any
    notification: bool = False


OPERATIONS: dict[str, MethodShape] = {
    "hello": MethodShape(params=HelloParams, result=HelloResult),
    "session.create": MethodShape(params=CreateParams, result=CreateResult),
    "session.start": MethodShape(params=HandleParams, result=Empty),
    "session.send": MethodShape(params=SendParams, result=TurnResult),
    "session.abort": MethodShape(params=HandleParams, result=Empty),
    "session.cancel": MethodShape(params=HandleParams, result=Empty),
    "session.setTurnPolicy": MethodShape(params=SetTurnPolicyParams, result=Empty),
    "session.runUserCommand": MethodShape(params=RunUserCommandParams, result=UserCommandOutcome),
    "session.resume": MethodShape(params=ResumeParams, result=CreateResult),
    "session.export": MethodShape(params=ExportParams, result=ExportResult),
    "pure.reconstructSessionState": MethodShape(params=PureSessionParams, result=SessionResumeState),
    "pure.workflowId": MethodShape(params=WorkflowIdParams, result=WorkflowIdResult),
    "pure.exportWorkflow": MethodShape(params=PureSessionParams, result=ExportWorkflowResult),
    "pure.storedRowColumns": MethodShape(params=StoredRowColumnsParams, result=StoredRowColumns),
    "pure.readStoredRow": MethodShape(params=ReadStoredRowParams, result=ReadStoredRowResult),
    "bye": MethodShape(params=Empty, result=None, notification=True),
}

CALLBACKS: dict[str, MethodShape] = {
    "provider.open": MethodShape(params=ProviderOpenParams, result=ProviderOpenResult),
    "provider.next": MethodShape(params=ProviderNextParams, result=ProviderNextResult),
    "tool.call": MethodShape(params=ToolCallParams, result=ToolCallResult),
    "host.confirm": MethodShape(params=HostConfirmParams, result=HostConfirmResult),
    "host.emit": MethodShape(params=HostEmitParams, result=Empty),
    "host.sleep": MethodShape(params=HostSleepParams, result=Empty),
    "host.createSession": MethodShape(params=HostCreateSessionParams, result=Empty),
    "host.commitTurn": MethodShape(params=HostCommitTurnParams, result=Empty),
    "host.recordCost": MethodShape(params=HostRecordCostParams, result=Empty),
    "host.loadSession": MethodShape(params=HostLoadSessionParams, result=HostLoadSessionResult),
}


PURE_METHODS: frozenset[str] = frozenset(name for name in OPERATIONS if name.startswith("pure."))
"""The operations that need no session: the vector suites call them directly."""


class OperationError(Exception):
    """An operation answered with an error: the session refused it, or the input was invalid."""

    def __init__(self, kind: str, code: str | None, message: str) -> None:
        super().__init__(f"{kind}: {code or message}")
        self.kind = kind
        self.code = code
        self.message = message

    def to_observation(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.code is not None:
            out["code"] = self.code
        return out


def error_from_rpc(error: RpcError) -> OperationError:
    data = error.data if isinstance(error.data, dict) else {}
    if error.code == SESSION_STATE_ERROR:
        return OperationError("session_state", str(data.get("code")), error.message)
    if error.code == INVALID_INPUT:
        return OperationError("invalid_input", None, error.message)
    if error.code == UNSUPPORTED_OPERATION:
        return OperationError("unsupported", None, error.message)
    return OperationError("rpc_error", str(error.code), error.message)


def _schema(shape: Any) -> dict[str, Any]:
    if shape is None:
        return {"type": "null"}
    return TypeAdapter(shape).json_schema(by_alias=True)


def protocol_schemas() -> dict[str, dict[str, Any]]:
    """File name (under ``schemas/``) -> schema, one per method: its params and its result.

    Definitions shared by the two halves are hoisted to the document's ``$defs``.
    """
    out: dict[str, dict[str, Any]] = {}
    for direction, table in (("kit-to-implementation", OPERATIONS), ("implementation-to-kit", CALLBACKS)):
        for method, shape in table.items():
            name = f"protocol/methods/{method}.schema.json"
            params, result = _schema(shape.params), _schema(shape.result)
            defs = {**params.pop("$defs", {}), **result.pop("$defs", {})}
            out[name] = {
                "$schema": SCHEMA_DIALECT,
                "$id": f"https://relavium.dev/conformance/schemas/{name}",
                "description": f"{direction}: params and result of `{method}`",
                "type": "object",
                "properties": {"params": params, "result": result},
                "required": ["params", "result"],
                "additionalProperties": False,
                **({"$defs": defs} if defs else {}),
            }
    return out


def write_protocol_schemas(root: Path) -> None:
    for name, schema in protocol_schemas().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
