"""The reference engine behind the kit's message set.

:class:`ReferenceImplementation` answers the kit's operations with ``relavium_reference`` sessions and
reaches the kit's world (provider, tools, host) only through the ``callback`` it is given.  The same
object serves the in-process adapter and the stdio server, so both transports run the same code.

The ``pure.*`` operations are answered by a table of :class:`PureFunctions` (the engine's own by
default); a deliberately broken implementation swaps one entry (its ``pure`` field, see
``_selftest/base.py``; the breaks themselves are filed in ``_selftest/breaks/``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from relavium_conformance._errors import KitShapeError
from relavium_conformance._reference.kit_callbacks import KitAdmission, KitUsageWriter, poke_estimate
from relavium_conformance._reference.request_edits import apply_edits
from relavium_conformance._version import REFERENCE_NAME, kit_version
from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION, RpcError
from relavium_conformance._wire.model import kit_parse
from relavium_conformance._wire.protocol import (
    CLASSIFIED_HOST_FAILURE,
    INVALID_INPUT,
    OPERATIONS,
    SESSION_STATE_ERROR,
    Callback,
)
from relavium_conformance._wire.protocol_messages import (
    ContextEstimateParams,
    CreateParams,
    Empty,
    ExportParams,
    HandleParams,
    HelloParams,
    HelloResult,
    HostLoadSessionResult,
    ImplementationInfo,
    PolicySpec,
    PureSessionParams,
    ReadStoredRowParams,
    ResumeParams,
    RunUserCommandParams,
    SendParams,
    SetTurnPolicyParams,
    StoredRowColumnsParams,
    ToolSpec,
    TrimHistoryParams,
    WorkflowIdParams,
)
from relavium_reference import (
    DEFAULT_MAX_TOOL_TURNS,
    AgentSession,
    ApprovalRequest,
    FunctionTool,
    InvalidInputError,
    LlmProvider,
    LlmRequest,
    PersistError,
    ProviderId,
    SessionDeps,
    SessionEvent,
    SessionStateError,
    StreamChunk,
    ToolCallInfo,
    ToolOutput,
    ToolRegistry,
    TurnPolicy,
)
from relavium_reference._host.dialect_client import HttpEndpoint, HttpProvider
from relavium_reference._host.history_store import StoreError, derive_columns, message_from_row
from relavium_reference._model.commands import DEFAULT_OUTPUT_LIMIT
from relavium_reference._model.errors import ObserverError
from relavium_reference._model.history_results import BoundaryMarker, CompactionStart
from relavium_reference._model.invocation import ALWAYS_ADMIT, Invocation, ModelInfo
from relavium_reference._model.messages import (
    AgentSessionRecord,
    SessionMessage,
    parse_agent_session_record,
    parse_session_message,
)
from relavium_reference._model.records import CompletedTurn, CostEntry
from relavium_reference._model.shapes import AgentSnapshot, SessionContext, parse_strict
from relavium_reference._model.vocabulary import TERMINAL_FINISH_REASONS
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules.history_fast import FAST_ROW_COLUMNS, fast_message
from relavium_reference._rules.resume import SessionResumeState, reconstruct_session_state
from relavium_reference.export import serialize_workflow, session_to_workflow, workflow_id

__all__ = [
    "REFERENCE_CAPABILITIES",
    "REFERENCE_NAME",
    "REFERENCE_PURE",
    "PureFunctions",
    "ReferenceImplementation",
    "SessionFactory",
    "export_workflow",
    "read_stored_row",
    "stored_row_columns",
]

REFERENCE_CAPABILITIES: tuple[str, ...] = (
    "core",
    "user-commands",
    "resume",
    "export",
    "persistence",
    "memory-policy",
    "trim",
    "overflow",
    "budget",
    "usage",
    "compaction",
    "wire",
    "request-edits",
    "overlapped-usage",
)

_CHUNK = TypeAdapter(StreamChunk)

SessionFactory = type[AgentSession]


def _persisted(
    params: PureSessionParams | HostLoadSessionResult,
) -> tuple[AgentSessionRecord, tuple[SessionMessage, ...]]:
    """The engine's reading of a persisted session carried as JSON: its record and its rows."""
    return parse_agent_session_record(params.record), tuple(
        parse_session_message(row) for row in params.messages
    )


def export_workflow(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[dict[str, Any], str]:
    """The engine's export: the workflow document as JSON data, and its exact YAML text."""
    document = session_to_workflow(record, messages)
    return document_to_data(document), serialize_workflow(document)


def stored_row_columns(message: SessionMessage, finish_reason: str | None) -> dict[str, Any]:
    """The engine's store, write side: the denormalised columns of ``message`` (KD-DB-3), wire form.

    ``finish_reason`` is the completed turn's stop reason, given for its terminal row only (absent:
    ``stop``); giving one for any other row is refused.
    """
    if finish_reason is not None and finish_reason not in TERMINAL_FINISH_REASONS:
        raise InvalidInputError("not a terminal stop reason", location="finishReason")
    if finish_reason is not None and (message.role != "assistant" or message.tool_calls):
        raise InvalidInputError(
            "a finish reason is given only for an assistant row without tool calls", location="finishReason"
        )
    columns = derive_columns(message, finish_reason)
    calls = columns["tool_calls"]
    return {
        "content": columns["content"],
        "toolCalls": None if calls is None else json.loads(calls),
        "toolCallId": columns["tool_call_id"],
        "name": columns["name"],
        "finishReason": columns["finish_reason"],
    }


def read_stored_row(row: Mapping[str, Any]) -> SessionMessage:
    """The engine's store, read side: the message a row holds, or :class:`StoreError` with its code.

    As ``HistoryStore`` reads a whole row: the fast read of a row in canonical form first, and the full
    read for any row it leaves (so the stored-row vectors prove both).
    """
    data = dict(row)
    if data.keys() == _STORED_ROW_KEYS:
        fast = fast_message((*(data[name] for name in FAST_ROW_COLUMNS[:-1]), None))
        if fast is not None:
            return fast
    return message_from_row(data)


_STORED_ROW_KEYS = frozenset(FAST_ROW_COLUMNS[:-1])  # the message columns (the rowid is no input)


@dataclass(frozen=True)
class PureFunctions:
    """What answers each ``pure.*`` operation (parsed params in, the answer before its wire form out).

    Each may raise :class:`InvalidInputError` to refuse its input (``invalid_input`` on the wire);
    ``read_stored_row`` raises :class:`StoreError` for a row the store must refuse (``{error: code}``).
    """

    reconstruct_session_state: Callable[[AgentSessionRecord, Sequence[SessionMessage]], SessionResumeState]
    workflow_id: Callable[[str | None, str], str]
    export_workflow: Callable[[AgentSessionRecord, Sequence[SessionMessage]], tuple[dict[str, Any], str]]
    stored_row_columns: Callable[[SessionMessage, str | None], dict[str, Any]] = stored_row_columns
    read_stored_row: Callable[[Mapping[str, Any]], SessionMessage] = read_stored_row


REFERENCE_PURE = PureFunctions(
    reconstruct_session_state=reconstruct_session_state,
    workflow_id=workflow_id,
    export_workflow=export_workflow,
    stored_row_columns=stored_row_columns,
    read_stored_row=read_stored_row,
)


class _KitPersister:
    """The host's persister, played by the kit: the session's durable facts go out as callbacks."""

    def __init__(self, callback: Callback, handle: str) -> None:
        self._callback = callback
        self._handle = handle

    async def create_session(self, record: AgentSessionRecord) -> None:
        await self._callback("host.createSession", {"handle": self._handle, "record": record.to_wire()})

    async def commit_turn(self, session_id: str, turn: CompletedTurn) -> None:
        """A classified error answer becomes the engine's readable :class:`PersistError`; any other error
        answer is raw and propagates as it came (KD-MSG-6)."""
        try:
            await self._callback(
                "host.commitTurn", {"handle": self._handle, "sessionId": session_id, "turn": turn.to_wire()}
            )
        except RpcError as failure:
            data = failure.data if isinstance(failure.data, dict) else {}
            if data.get("kind") == CLASSIFIED_HOST_FAILURE["kind"]:
                raise PersistError(failure.message) from None
            raise

    async def record_cost(self, session_id: str, entry: CostEntry) -> None:
        await self._callback(
            "host.recordCost", {"handle": self._handle, "sessionId": session_id, "cost": entry.to_wire()}
        )

    async def append_marker(self, session_id: str, marker: BoundaryMarker) -> None:
        await self._callback(
            "host.appendMarker", {"handle": self._handle, "sessionId": session_id, "marker": marker.to_wire()}
        )

    async def load_transcript(self, session_id: str) -> tuple[AgentSessionRecord, tuple[SessionMessage, ...]]:
        answer = await self._callback("host.loadSession", {"handle": self._handle, "sessionId": session_id})
        loaded = kit_parse(HostLoadSessionResult, answer)
        return _persisted(loaded)


class _KitProvider:
    """A provider whose stream the kit feeds chunk by chunk (``provider.open``, then ``provider.next``)."""

    def __init__(
        self,
        callback: Callback,
        handle: str,
        provider: str,
        model: str,
        handed: Callable[[str, LlmRequest], LlmRequest] | None = None,
    ) -> None:
        self._callback = callback
        self._handle = handle
        self._provider = provider
        self._model = model
        self._handed = handed  # what the engine hands over (a broken one: a list it shares)

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        return self._pull(request, Invocation("turn", None))

    def stream_invocation(self, request: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        return self._pull(request, invocation)

    async def _pull(self, owned: LlmRequest, invocation: Invocation) -> AsyncIterator[StreamChunk]:
        if self._handed is not None:
            owned = self._handed(self._handle, owned)
        params: dict[str, Any] = {
            "handle": self._handle,
            "provider": self._provider,
            "model": self._model,
            "request": owned.to_wire(),
        }
        params["purpose"] = invocation.purpose
        if invocation.window is not None:
            params["window"] = invocation.window
        opened = await self._callback("provider.open", params)
        apply_edits(owned, opened.get("edits") or ())  # capability request-edits (KD-PROJ-3)
        stream = opened["stream"]
        while True:
            answer = await self._callback("provider.next", {"handle": self._handle, "stream": stream})
            chunk = _CHUNK.validate_python(answer["chunk"])
            yield chunk
            if chunk.type in ("stop", "error"):
                return


class _KitEstimatingProvider(_KitProvider):
    """A kit provider with its own token estimator (``deps.providerEstimates``, KD-COMP-8)."""

    async def estimate_tokens(self, request: LlmRequest) -> int:
        answer = await self._callback(
            "provider.estimate",
            {
                "handle": self._handle,
                "provider": self._provider,
                "model": self._model,
                "request": request.to_wire(),
            },
        )
        return int(answer["inputTokens"])


class ReferenceImplementation:
    """Serves the kit's operations for any number of sessions, each named by the kit's ``handle``."""

    http_provider: type[HttpProvider] = HttpProvider  # capability wire (a broken one swaps it)

    def __init__(
        self,
        callback: Callback,
        *,
        session_factory: SessionFactory = AgentSession,
        name: str = REFERENCE_NAME,
        capabilities: tuple[str, ...] = REFERENCE_CAPABILITIES,
        pure: PureFunctions = REFERENCE_PURE,
    ) -> None:
        self._callback = callback
        self._pure = pure
        self._factory = session_factory
        self._name = name
        self._capabilities = capabilities
        self._sessions: dict[str, AgentSession] = {}
        self._ids = itertools.count(1)

    def hello_result(self) -> HelloResult:
        return HelloResult(
            protocol_version=PROTOCOL_VERSION,
            implementation=ImplementationInfo(
                name=self._name, version=kit_version(), language=f"python {_python_version()}"
            ),
            capabilities=self._capabilities,
        )

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Answer one operation; session refusals become the protocol's error codes."""
        try:
            return await self._dispatch(method, params)
        except SessionStateError as exc:
            raise RpcError(
                SESSION_STATE_ERROR, exc.message, {"kind": "session_state", "code": exc.code.value}
            ) from None
        except InvalidInputError as exc:
            raise RpcError(
                INVALID_INPUT, exc.message, {"kind": "invalid_input", "message": exc.message}
            ) from None

    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        """One lookup in the method table: parse the params once, then call the row's handler."""
        row = OPERATIONS.get(method)
        if row is None or row.serve is None:
            raise RpcError(-32601, f"method not found: {method}")
        try:
            parsed = kit_parse(row.params, params)
        except KitShapeError as exc:
            raise InvalidInputError(exc.message, location=exc.location) from None
        handler: Callable[[Any], Awaitable[Any]] = getattr(self, row.serve)
        return await handler(parsed)

    # -- operations (handlers named by the method table) ------------------------------------------

    async def on_hello(self, params: HelloParams) -> Any:
        return self.hello_result().to_wire()

    async def on_bye(self, params: Empty) -> None:
        return None

    async def on_session_create(self, params: CreateParams) -> Any:
        return self._create(params)

    async def on_session_resume(self, params: ResumeParams) -> Any:
        return self._resume(params)

    async def on_session_export(self, params: ExportParams) -> Any:
        return (await self._session(params.handle).export(params.workflow_path)).to_wire()

    async def on_session_start(self, params: HandleParams) -> Any:
        await self._session(params.handle).start()
        return {}

    async def on_session_send(self, params: SendParams) -> Any:
        return (await self._session(params.handle).send_message(params.text)).to_wire()

    async def on_session_abort(self, params: HandleParams) -> Any:
        self._session(params.handle).abort()
        return {}

    async def on_session_cancel(self, params: HandleParams) -> Any:
        await self._session(params.handle).cancel()
        return {}

    async def on_session_set_turn_policy(self, params: SetTurnPolicyParams) -> Any:
        self._session(params.handle).set_turn_policy(self._policy(params.handle, params.policy))
        return {}

    async def on_session_run_user_command(self, params: RunUserCommandParams) -> Any:
        session = self._session(params.handle)
        return (await session.run_user_command(params.command, list(params.args))).to_wire()

    async def on_session_memory_policy(self, params: HandleParams) -> Any:
        session = self._session(params.handle)
        policy = session.memory_policy
        _poke(policy)  # a Python host changing what it was handed must not reach the session (AS-PROJ-008)
        refusals = (session.compaction_refusal, session.trim_refusal)
        return {
            "memoryPolicy": session.memory_policy.model_dump(mode="json"),
            "automaticCompactionAllowed": session.automatic_compaction_allowed,
            "compactionRefusal": None if refusals[0] is None else refusals[0].to_wire(),
            "trimRefusal": None if refusals[1] is None else refusals[1].to_wire(),
        }

    async def on_session_context_estimate(self, params: ContextEstimateParams) -> Any:
        return {"inputTokens": self._session(params.handle).context_estimate(params.text)}

    async def on_session_trim_history(self, params: TrimHistoryParams) -> Any:
        return (await self._session(params.handle).trim_history(params.max_messages)).to_wire()

    async def on_session_compact(self, params: HandleParams) -> Any:
        return (await self._session(params.handle).compact()).to_wire()

    # -- pure functions: no session, an answer from the params alone ------------------------------

    async def on_pure_workflow_id(self, params: WorkflowIdParams) -> Any:
        return {"workflowId": self._pure.workflow_id(params.title, params.session_id)}

    async def on_pure_reconstruct_session_state(self, params: PureSessionParams) -> Any:
        record, messages = _persisted(params)
        return self._pure.reconstruct_session_state(record, messages).to_wire()

    async def on_pure_export_workflow(self, params: PureSessionParams) -> Any:
        document, text = self._pure.export_workflow(*_persisted(params))
        return {"document": document, "yaml": text}

    async def on_pure_stored_row_columns(self, params: StoredRowColumnsParams) -> Any:
        return self._pure.stored_row_columns(parse_session_message(params.message), params.finish_reason)

    async def on_pure_read_stored_row(self, params: ReadStoredRowParams) -> Any:
        try:
            return {"message": self._pure.read_stored_row(params.row.model_dump()).to_wire()}
        except StoreError as refusal:
            return {"error": refusal.code}

    def handed(self, handle: str, request: LlmRequest) -> LlmRequest:
        """The request the engine hands its provider: its own, owned one (a broken engine shares)."""
        return request

    def _session(self, handle: str) -> AgentSession:
        try:
            return self._sessions[handle]
        except KeyError:
            raise InvalidInputError("unknown session handle", location="handle") from None

    def _create(self, params: CreateParams) -> dict[str, Any]:
        deps = self._deps(params)
        session = self._factory(
            agent=parse_strict(AgentSnapshot, params.agent),
            context=parse_strict(SessionContext, params.context),
            deps=deps,
            session_id=params.session_id or f"session-{next(self._ids)}",
        )
        poke_estimate(deps)  # the host changes its value afterwards: a copy must not see it
        self._sessions[params.handle] = session
        return {"sessionId": session.session_id}

    def _resume(self, params: ResumeParams) -> dict[str, Any]:
        agent = parse_strict(AgentSnapshot, params.agent)
        context = parse_strict(SessionContext, params.context)
        record = parse_agent_session_record(params.record)
        messages = tuple(parse_session_message(row) for row in params.messages)
        state = (
            parse_strict(SessionResumeState, params.state)
            if params.state is not None
            else self._pure.reconstruct_session_state(record, messages)
        )
        deps = self._deps(params)
        session = self._factory.resume(
            agent=agent,
            context=context,
            deps=deps,
            state=state,
            session_id=record.id,
            agent_ref=record.agent_slug,
        )
        poke_estimate(deps)
        self._sessions[params.handle] = session
        return {"sessionId": session.session_id}

    def _deps(self, params: CreateParams) -> SessionDeps:
        handle = params.handle
        callback = self._callback

        async def emit(event: SessionEvent) -> None:
            """A classified error answer becomes the engine's readable :class:`ObserverError`; any other
            error answer is raw and propagates as it came (KD-EVT-5)."""
            try:
                await callback("host.emit", {"handle": handle, "event": event.to_wire()})
            except RpcError as failure:
                data = failure.data if isinstance(failure.data, dict) else {}
                if data.get("kind") == CLASSIFIED_HOST_FAILURE["kind"]:
                    raise ObserverError(failure.message) from None
                raise

        async def sleep(seconds: float) -> None:
            await callback("host.sleep", {"handle": handle, "seconds": seconds})

        deps = params.deps
        unavailable = frozenset(deps.unavailable_providers)

        endpoints = {e.provider: e for e in deps.provider_endpoints}

        def resolve(provider: ProviderId, model: str) -> LlmProvider:
            if provider.value in unavailable:
                raise LookupError("no credential for this provider")  # refused before any invocation
            endpoint = endpoints.get(provider.value)
            if endpoint is not None:  # capability wire: the engine's own HTTP client, in the vendor's dialect
                return self.http_provider(
                    HttpEndpoint(
                        dialect=provider.value,
                        base_url=endpoint.base_url,
                        api_key=endpoint.api_key,
                        official=endpoint.official,
                    )
                )
            kit = _KitEstimatingProvider if deps.provider_estimates else _KitProvider
            return kit(callback, handle, provider.value, model, self.handed)

        async def prepare(provider: ProviderId, model: str) -> None:
            await callback(
                "host.resolveProvider", {"handle": handle, "provider": provider.value, "model": model}
            )

        async def acknowledge(start: CompactionStart) -> None:
            await callback("host.compactionStart", {"handle": handle, "start": start.to_wire()})

        models = {
            name: ModelInfo(context_window=spec.context_window, self_managed=spec.self_managed)
            for name, spec in deps.models.items()
        }
        optional: dict[str, Any] = {}
        if deps.compact_threshold is not None:
            optional["compact_threshold"] = deps.compact_threshold
        if deps.after_turn_compaction is not None:
            optional["after_turn_compaction"] = deps.after_turn_compaction
        return SessionDeps(
            resolve_provider=resolve,
            models=models,
            max_tokens_estimate=deps.max_tokens_estimate,
            max_messages=deps.max_messages,
            on_compaction_start=acknowledge,
            prepare_provider=prepare if deps.resolution_callback else None,
            **optional,
            emit=emit,
            sleep=sleep,
            tools=ToolRegistry(self._tool(handle, spec) for spec in params.tools),
            max_turns=deps.max_turns,
            max_tool_turns=DEFAULT_MAX_TOOL_TURNS if deps.max_tool_turns is None else deps.max_tool_turns,
            allowed_commands=deps.allowed_commands,
            allowed_command_globs=deps.allowed_command_globs,
            command_output_limit=deps.command_output_limit or DEFAULT_OUTPUT_LIMIT,
            persister=_KitPersister(callback, handle),
            admission=KitAdmission(callback, handle) if deps.admission else ALWAYS_ADMIT,
            usage_writer=KitUsageWriter(callback, handle) if deps.usage_writer else None,
        )

    def _tool(self, handle: str, spec: ToolSpec) -> FunctionTool:
        callback = self._callback

        async def call_kit(args: Any, call: ToolCallInfo) -> ToolOutput:
            answer = await callback(
                "tool.call",
                {
                    "handle": handle,
                    "callId": call.call_id,
                    "name": call.name,
                    "args": args,
                    "round": call.round_number,
                },
            )
            return ToolOutput(text=str(answer.get("text", "")), is_error=bool(answer.get("isError", False)))

        return FunctionTool(
            name=spec.name,
            function=call_kit,
            description=spec.description,
            parameters=spec.parameters or {"type": "object"},
            action=spec.action,
            preview_key=spec.preview_key,
        )

    def _policy(self, handle: str, spec: PolicySpec | None) -> TurnPolicy | None:
        if spec is None:
            return None
        callback = self._callback
        allowed = None if spec.advertise is None else frozenset(spec.advertise)

        async def confirm(request: ApprovalRequest) -> bool:
            answer = await callback(
                "host.confirm",
                {
                    "handle": handle,
                    "toolId": request.tool_id,
                    "action": request.action,
                    "preview": dict(request.preview),
                    "callId": request.call_id,
                },
            )
            return bool(answer.get("approved", False))

        return TurnPolicy(
            advertise=None if allowed is None else (lambda name: name in allowed),
            confirm=confirm if spec.confirm else None,
        )


def _poke(policy: object) -> None:
    """Try, as a careless host would, to widen the policy value the getter returned.

    A frozen copy refuses or ignores it; a getter that hands out the session's own, mutable policy lets
    it change what the next request carries, which the memory cases then see.
    """
    target = "none" if getattr(policy, "type", None) == "summary" else "summary"
    try:
        policy.type = target  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return


def _python_version() -> str:
    import platform

    return platform.python_version()
