"""The kit's protocol, as one method table: each method declared once.

A row (:class:`Method`) names the method, its direction (``kit`` calls the implementation's operations;
the implementation calls back the ``world`` the kit plays), its params and result messages
(:mod:`relavium_conformance._wire.protocol_messages`), the capability it belongs to, and its handler on each
side: the case-format operation that issues it (kit side) and the reference implementation's method
that serves it, or the kit's world method that answers a callback.  Everything else derives from the
table: both dispatchers, the case format's operation names, the JSON Schemas of ``schemas/protocol/``
and the method table of ``docs/protocol.md`` (generated; drift tests compare).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter

from relavium_conformance._errors import KitError
from relavium_conformance._wire import budget_messages as bm
from relavium_conformance._wire import protocol_messages as m
from relavium_conformance._wire import store_messages as sm
from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION, RpcError
from relavium_conformance._wire.model import SCHEMA_DIALECT, SCHEMA_ID_BASE

__all__ = [
    "CALLBACKS",
    "CASE_OPERATIONS",
    "INVALID_INPUT",
    "METHODS",
    "OPERATIONS",
    "PROTOCOL_VERSION",
    "PURE_METHODS",
    "SESSION_STATE_ERROR",
    "UNSUPPORTED_OPERATION",
    "Callback",
    "Method",
    "OperationError",
    "error_from_rpc",
    "method_table_markdown",
    "protocol_schemas",
    "with_method_table",
]

# JSON-RPC error codes an implementation uses for the session's own refusals.
SESSION_STATE_ERROR = -32001  # data: {"kind": "session_state", "code": "<SessionStateError code>"}
INVALID_INPUT = -32002  # data: {"kind": "invalid_input", "message": "<fixed message>"}
UNSUPPORTED_OPERATION = -32003  # data: {"kind": "unsupported"}
SESSION_ERROR = -32004  # data: {"kind": "session_error", "code": "<SessionError code>"} (store profile)
CLASSIFIED_HOST_FAILURE: dict[str, str] = {"kind": "classified", "code": "persist_failed"}
"""The data of a host callback's error answer that is a readable, classified failure (KD-MSG-6); an error
answer without it is raw (opaque)."""

Callback = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""How an implementation calls the kit: ``await callback(method, params) -> result``."""

Direction = Literal["kit", "world"]


@dataclass(frozen=True)
class Method:
    """One protocol method, declared once."""

    name: str
    direction: Direction
    """``kit``: the kit calls the implementation (an operation); ``world``: the implementation calls the
    kit, which plays its world (provider, tools, host)."""
    params: Any
    result: Any
    """A message model, a shape alias, or ``None`` for a notification."""
    capability: str
    summary: str
    case_op: str | None = None
    """Kit side of an operation: the case-format operation that issues it (``None``: the runner's own)."""
    serve: str | None = None
    """Implementation side of an operation: the reference implementation's handler method."""
    answer: str | None = None
    """Kit side of a callback: the kit world's handler method."""
    notification: bool = False

    @property
    def pure(self) -> bool:
        return self.name.startswith("pure.")


def _op(
    name: str,
    params: Any,
    result: Any,
    capability: str,
    summary: str,
    *,
    case_op: str | None = None,
    notification: bool = False,
) -> Method:
    return Method(
        name,
        "kit",
        params,
        result,
        capability,
        summary,
        case_op=case_op,
        serve=_handler(name),
        notification=notification,
    )


def _cb(name: str, params: Any, result: Any, capability: str, summary: str) -> Method:
    return Method(name, "world", params, result, capability, summary, answer=_handler(name))


def _handler(name: str) -> str:
    """``session.runUserCommand`` -> ``on_session_run_user_command``: the handler's name on its side."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name.replace(".", "_"))
    return f"on_{snake}"


METHODS: tuple[Method, ...] = (
    _op("hello", m.HelloParams, m.HelloResult, "core", "versions and the declared capabilities"),
    _op("session.create", m.CreateParams, m.CreateResult, "core", "a new session under a handle"),
    _op("session.start", m.HandleParams, m.Empty, "core", "start the session", case_op="start"),
    _op(
        "session.send",
        m.SendParams,
        m.TurnResultJson,
        "core",
        "one turn; answers when it settles",
        case_op="send",
    ),
    _op("session.abort", m.HandleParams, m.Empty, "core", "abort the running turn", case_op="abort"),
    _op("session.cancel", m.HandleParams, m.Empty, "core", "cancel the session", case_op="cancel"),
    _op(
        "session.setTurnPolicy",
        m.SetTurnPolicyParams,
        m.Empty,
        "core",
        "install or clear a turn policy",
        case_op="setTurnPolicy",
    ),
    _op(
        "session.runUserCommand",
        m.RunUserCommandParams,
        m.CommandOutcomeJson,
        "user-commands",
        "run a user command",
        case_op="runUserCommand",
    ),
    _op(
        "session.resume",
        m.ResumeParams,
        m.CreateResult,
        "resume",
        "continue a persisted session as a new instance",
        case_op="resume",
    ),
    _op(
        "session.export",
        m.ExportParams,
        m.ExportResult,
        "export",
        "write the workflow scaffold",
        case_op="export",
    ),
    _op(
        "session.memoryPolicy",
        m.HandleParams,
        m.MemoryPolicyResult,
        "memory-policy",
        "the memory getters: policy, automatic permission, refusals",
        case_op="memoryPolicy",
    ),
    _op(
        "session.contextEstimate",
        m.ContextEstimateParams,
        m.ContextEstimateResult,
        "memory-policy",
        "the context estimate of the next request",
        case_op="contextEstimate",
    ),
    _op(
        "session.trimHistory",
        m.TrimHistoryParams,
        m.TrimResult,
        "trim",
        "keep the newest whole turns within a message bound",
        case_op="trimHistory",
    ),
    _op(
        "session.compact",
        m.HandleParams,
        m.CompactionOutcome,
        "memory-policy",
        "compact the older context (its policy refusal is memory-policy's)",
        case_op="compact",
    ),
    _op(
        "pure.reconstructSessionState",
        m.PureSessionParams,
        m.ResumeStateJson,
        "resume",
        "the resume state of durable rows",
    ),
    _op("pure.workflowId", m.WorkflowIdParams, m.WorkflowIdResult, "export", "the export's workflow id"),
    _op(
        "pure.exportWorkflow",
        m.PureSessionParams,
        m.ExportWorkflowResult,
        "export",
        "the export mapping and its text",
    ),
    _op(
        "pure.storedRowColumns",
        m.StoredRowColumnsParams,
        m.StoredRowColumns,
        "persistence",
        "the denormalised columns of a row to store",
    ),
    _op(
        "pure.readStoredRow",
        m.ReadStoredRowParams,
        m.ReadStoredRowResult,
        "persistence",
        "read one stored row back, or its fixed refusal",
    ),
    _op("bye", m.Empty, None, "core", "the run is over", notification=True),
    _cb("provider.open", m.ProviderOpenParams, m.ProviderOpenResult, "core", "open a provider stream"),
    _cb("provider.next", m.ProviderNextParams, m.ProviderNextResult, "core", "pull the next chunk"),
    _cb("tool.call", m.ToolCallParams, m.ToolCallResult, "core", "run a tool the kit plays"),
    _cb("host.confirm", m.HostConfirmParams, m.HostConfirmResult, "core", "ask the host's approval"),
    _cb("host.emit", m.HostEmitParams, m.Empty, "core", "deliver one event, in order"),
    _cb("host.sleep", m.HostSleepParams, m.Empty, "core", "wait on the kit's clock"),
    _cb(
        "host.createSession",
        m.HostCreateSessionParams,
        m.Empty,
        "persistence",
        "persist a new session record",
    ),
    _cb(
        "host.commitTurn",
        m.HostCommitTurnParams,
        m.Empty,
        "persistence",
        "commit one completed turn, all or nothing",
    ),
    _cb(
        "host.appendMarker",
        m.HostAppendMarkerParams,
        m.Empty,
        "trim",
        "append one durable boundary marker row",
    ),
    _cb(
        "host.compactionStart",
        m.HostCompactionStartParams,
        m.Empty,
        "compaction",
        "acknowledge the unknown-window disclosure before a compaction's first pass",
    ),
    _cb(
        "host.resolveProvider",
        m.HostResolveProviderParams,
        m.Empty,
        "compaction",
        "prepare one plan entry's provider for a compaction (deps.resolutionCallback)",
    ),
    _cb(
        "provider.estimate",
        m.ProviderEstimateParams,
        m.ProviderEstimateResult,
        "compaction",
        "the provider's own token estimate of a request (deps.providerEstimates)",
    ),
    _cb("host.recordCost", m.HostRecordCostParams, m.Empty, "persistence", "record spend"),
    _cb(
        "host.admit",
        bm.HostAdmitParams,
        bm.HostAdmitResult,
        "budget",
        "ask the cost governor to admit one provider attempt",
    ),
    _cb(
        "host.releaseAdmission",
        bm.HostReleaseAdmissionParams,
        m.Empty,
        "budget",
        "give back an admission that was never used",
    ),
    _cb(
        "host.usage",
        bm.HostUsageParams,
        bm.HostUsageResult,
        "usage",
        "the usage writer: open, pending before a call, resolved after",
    ),
    _cb(
        "host.loadSession",
        m.HostLoadSessionParams,
        m.HostLoadSessionResult,
        "export",
        "read the host's persisted transcript",
    ),
    # --- the session-store profile (``_store/``): a store never calls back -------------------------
    _op("store.open", sm.StoreOpen, sm.StoreEmpty, "session-store", "open the store over the kit's location"),
    _op("store.setClock", sm.StoreSetClock, sm.StoreEmpty, "store:clock", "move the store's clock"),
    _op("store.acquire", sm.StoreAcquire, sm.Acquired, "session-store", "get or create a session"),
    _op("store.touch", sm.StoreSessionId, sm.StoreEmpty, "session-store", "mark a session active"),
    _op(
        "store.release", sm.StoreSessionId, sm.StoreEmpty, "session-store", "drop a session from the live set"
    ),
    _op("store.forget", sm.StoreSessionId, sm.StoreEmpty, "store:forget", "drop the cached view only"),
    _op("store.pin", sm.StoreSessionId, sm.StoreEmpty, "store:pin", "protect from idle eviction"),
    _op("store.unpin", sm.StoreSessionId, sm.StoreEmpty, "store:pin", "end the protection"),
    _op("store.noteTaskRun", sm.StoreNoteTaskRun, sm.StoreEmpty, "store:noteTaskRun", "record a started run"),
    _op("store.list", sm.StoreEmpty, sm.StoreSessions, "store:list", "summaries, newest first"),
    _op("store.listPlaced", sm.StoreListPlaced, sm.StoreRows, "store:listPlaced", "the placed partition"),
    _op("store.fork", sm.StoreFork, sm.StoreForked, "store:fork", "copy a session's committed history"),
    _op("store.ownerOf", sm.StoreSessionId, sm.StoreOwner, "store:ownership", "no row, anonymous or owned"),
    _op("store.register", sm.StoreRegister, sm.StoreEmpty, "store:ownership", "first-write-wins ownership"),
    _op(
        "store.incarnationOf",
        sm.StoreSessionId,
        sm.StoreIncarnation,
        "store:incarnationOf",
        "the row's incarnation",
    ),
    _op("store.size", sm.StoreEmpty, sm.StoreSize, "session-store", "how many live sessions"),
    _op("store.dispose", sm.StoreEmpty, sm.StoreEmpty, "session-store", "release the store's resources"),
    _op("store.entries", sm.StoreRef, sm.StoreEntries, "session-store", "a live session's committed path"),
    _op("store.append", sm.StoreAppend, sm.StoreEmpty, "session-store", "append, or stage a turn in flight"),
    _op("store.commit", sm.StoreRef, sm.StoreEmpty, "session-store", "commit the staged turn"),
    _op(
        "pure.boundedTail",
        sm.StoreBoundedTail,
        sm.StoreBoundedTailResult,
        "session-store",
        "the tail a stateless runner resumes from",
    ),
    _op(
        "pure.hasConversationContent",
        sm.StoreBranch,
        sm.StoreVerdict,
        "session-store",
        "whether a branch holds conversation",
    ),
    _op(
        "pure.isSessionConflict",
        sm.StoreConflict,
        sm.StoreVerdict,
        "session-store",
        "whether a value is a session conflict",
    ),
)

OPERATIONS: dict[str, Method] = {row.name: row for row in METHODS if row.direction == "kit"}
CALLBACKS: dict[str, Method] = {row.name: row for row in METHODS if row.direction == "world"}
PURE_METHODS: frozenset[str] = frozenset(name for name, row in OPERATIONS.items() if row.pure)
"""The operations that need no session: the vector suites call them directly."""
CASE_OPERATIONS: dict[str, Method] = {row.case_op: row for row in METHODS if row.case_op is not None}
"""Case-format operation name -> the method it issues."""


class OperationError(KitError):
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
    if error.code == SESSION_ERROR:  # the session-store profile's refusal (_store/protocol.py)
        return OperationError("session_error", str(data.get("code")), error.message)
    return OperationError("rpc_error", str(error.code), error.message)


def _schema(shape: Any) -> dict[str, Any]:
    if shape is None:
        return {"type": "null"}
    from relavium_reference import strict_clean  # strict validators refuse pydantic's discriminator

    return dict(strict_clean(TypeAdapter(shape).json_schema(by_alias=True)))


def protocol_schemas() -> dict[str, dict[str, Any]]:
    """File name (under ``schemas/``) -> schema, one per method: its params and its result.

    Definitions shared by the two halves are hoisted to the document's ``$defs``; nested domain shapes
    are ``$ref``s to the shipped shape schemas.
    """
    out: dict[str, dict[str, Any]] = {}
    for row in METHODS:
        name = f"protocol/methods/{row.name}.schema.json"
        params, result = _schema(row.params), _schema(row.result)
        defs = {**params.pop("$defs", {}), **result.pop("$defs", {})}
        direction = "kit-to-implementation" if row.direction == "kit" else "implementation-to-kit"
        out[name] = {
            "$schema": SCHEMA_DIALECT,
            "$id": f"{SCHEMA_ID_BASE}{name}",
            "description": f"{direction}: params and result of `{row.name}`",
            "type": "object",
            "properties": {"params": params, "result": result},
            "required": ["params", "result"],
            "additionalProperties": False,
            **({"$defs": defs} if defs else {}),
        }
    return out


def method_table_markdown() -> str:
    """The method table of ``docs/protocol.md`` (between its ``method-table`` markers)."""
    lines = [
        "| method | direction | capability | case operation | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in METHODS:
        direction = "kit → implementation" if row.direction == "kit" else "implementation → kit"
        kind = " (notification)" if row.notification else ""
        lines.append(
            f"| `{row.name}`{kind} | {direction} | `{row.capability}` | "
            f"{f'`{row.case_op}`' if row.case_op else ''} | {row.summary} |"
        )
    return "\n".join(lines) + "\n"


_TABLE_START, _TABLE_END = "<!-- method-table -->\n", "<!-- /method-table -->"


def with_method_table(page: str) -> str:
    """``page`` (the text of ``docs/protocol.md``) with its generated method table brought up to date."""
    head, start, rest = page.partition(_TABLE_START)
    _old, end, tail = rest.partition(_TABLE_END)
    if not start or not end:
        raise ValueError("the page has no method-table markers")
    return head + start + method_table_markdown() + end + tail
