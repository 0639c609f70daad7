"""Broken implementations that break one session rule where the kit can see it: on the wire.

Each is the reference engine with one observable behaviour changed in what it sends: an operation's
answer, an event, or a callback's params (the request it hands the provider, the record it persists).
The rule is the clause's, the damage is the smallest that breaks it, and the cases citing the clause
must catch it on every transport (``selftest --stdio``).
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import SESSION_STATE_ERROR

__all__ = ["WIRE_BREAKS"]


def _refusal(code: str) -> RpcError:
    return RpcError(SESSION_STATE_ERROR, f"refused ({code})", {"kind": "session_state", "code": code})


class _AbortSaysStop(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed" and event.get("stopReason") == "aborted":
            event["stopReason"] = "stop"
        return event


class _ToolHistoryWithArguments(WireVariant):
    """toolHistory entries repeat the arguments the tool was called with."""

    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self._args: dict[str, Any] = {}

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "tool.call":
            self._args[str(params.get("callId"))] = params.get("args")
        return params

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        for entry in event.get("toolHistory") or ():
            if isinstance(entry, dict) and str(entry.get("toolCallId")) in self._args:
                entry["arguments"] = self._args[str(entry["toolCallId"])]
        return event


class _SteeringEmitted(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_started":
            event["type"] = "session:steering_requested"
        return event


class _StartedRenamed(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:started":
            event["type"] = "session:opened"
        return event


class _ContextLosesOptionals(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        context = event.get("context")
        if event.get("type") == "session:started" and isinstance(context, dict):
            for key in ("activeFile", "selection", "gitRef"):
                context.pop(key, None)
        return event


class _ScopeTierRenamed(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        context = event.get("context")
        if isinstance(context, dict) and context.get("fsScopeTier") == "full":
            context["fsScopeTier"] = "unrestricted"
        return event


class _AgentRefChanged(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:started" and isinstance(event.get("agentRef"), str):
            event["agentRef"] += "-default"
        return event


class _InternalErrorRetryable(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        error = event.get("error")
        if isinstance(error, dict) and error.get("code") == "internal":
            error["retryable"] = True
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        error = result.get("error") if isinstance(result, dict) else None
        if isinstance(error, dict) and error.get("code") == "internal":
            error["retryable"] = True
        return result


class _VariablesNotPersisted(WireVariant):
    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        context = (params.get("record") or {}).get("context")
        if method == "host.createSession" and isinstance(context, dict):
            context.pop("variables", None)
        return params


class _NoSessionRow(WireVariant):
    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        return None if method == "host.createSession" else params


class _TerminalNamesThePrimary(WireVariant):
    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self._primary: dict[str, str] = {}

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method in ("session.create", "session.resume") and isinstance(params.get("agent"), dict):
            self._primary[str(params.get("handle"))] = str(params["agent"].get("model"))
        return await super().operation(method, params)

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        terminal = (params.get("turn") or {}).get("terminal")
        if method == "host.commitTurn" and isinstance(terminal, dict) and handle in self._primary:
            terminal["modelId"] = self._primary[handle] + "-primary"
        return params


class _CommandOutcomeRenamed(WireVariant):
    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        if method == "session.runUserCommand" and isinstance(result, dict) and "exitCode" in result:
            result["code"] = result.pop("exitCode")
        if method == "session.runUserCommand" and isinstance(result, dict) and "allowlist" in result:
            result["allowlisted"] = result.pop("allowlist")
        return result


class _ProviderRequests(WireVariant):
    """A base: edits the request handed to the provider (``provider.open``)."""

    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self.opened: dict[str, int] = {}
        self.resumed: set[str] = set()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            self.resumed.add(str(params.get("handle")))
        return await super().operation(method, params)

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "provider.open" and isinstance(params.get("request"), dict):
            self.opened[handle] = self.opened.get(handle, 0) + 1
            self.request(handle, params)
        return params

    def request(self, handle: str, params: dict[str, Any]) -> None:
        return None


class _SystemPromptDropped(_ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        if self.opened[handle] > 1:
            params["request"].pop("system", None)


class _LaterRequestsOnAnotherModel(_ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        if self.opened[handle] > 1:
            params["model"] = f"{params.get('model')}-mini"
            params["request"]["model"] = params["model"]


class _ExtraToolAdvertised(_ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        tools = params["request"].get("tools")
        extra = {"name": "shell", "description": "Run anything.", "parameters": {"type": "object"}}
        params["request"]["tools"] = [*(tools or []), extra]


def _messages(params: dict[str, Any]) -> list[dict[str, Any]]:
    messages = params["request"].get("messages")
    return messages if isinstance(messages, list) else []


class _UserMessageNotSent(_ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        messages = _messages(params)
        if messages and messages[-1].get("role") == "user":
            params["request"]["messages"] = messages[:-1]


class _RepliesForgotten(_ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        params["request"]["messages"] = [m for m in _messages(params) if m.get("role") != "assistant"]


class _ResumeForgetsHistory(_ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        if handle in self.resumed:
            messages = _messages(params)
            params["request"]["messages"] = messages[-1:]


class _StateTracking(WireVariant):
    """A base that knows, per handle, the sends in flight and whether the session was cancelled."""

    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self.sending: dict[str, int] = {}
        self.cancelled: set[str] = set()
        self.aborted: set[str] = set()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        handle = str(params.get("handle"))
        self.refuse(handle, method)
        if method == "session.cancel":
            self.cancelled.add(handle)
        if method != "session.send":
            return await super().operation(method, params)
        self.sending[handle] = self.sending.get(handle, 0) + 1
        try:
            result = await super().operation(method, params)
        finally:
            self.sending[handle] -= 1
        if isinstance(result, dict) and result.get("status") == "aborted":
            self.aborted.add(handle)
        return result

    def refuse(self, handle: str, method: str) -> None:
        return None


class _PolicyRefusedWhileBusy(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.setTurnPolicy" and self.sending.get(handle):
            raise _refusal("busy")


class _PolicyRefusedAfterCancel(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.setTurnPolicy" and handle in self.cancelled:
            raise _refusal("not_active")


class _AbortEndsTheSession(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.send" and handle in self.aborted:
            raise _refusal("not_active")


class _CancelledCannotResume(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.resume" and handle in self.cancelled:
            raise _refusal("not_active")


class _RefusalCodesRenamed(WireVariant):
    """Answers one refusal code with another (a wrong code where the spec names one)."""

    renamed: dict[str, str] = {}
    methods: tuple[str, ...] = ()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await super().operation(method, params)
        except RpcError as exc:
            code = exc.data.get("code") if isinstance(exc.data, dict) else None
            if method in self.methods and code in self.renamed:
                raise _refusal(self.renamed[code]) from None
            raise


class _InvalidResumeStateCalledBusy(_RefusalCodesRenamed):
    renamed = {"invalid_resume_state": "busy"}
    methods = ("session.resume",)


class _CommandRacesTheTurn(_RefusalCodesRenamed):
    """A command refused outside idle answers a failed outcome instead of refusing."""

    methods = ("session.runUserCommand",)

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await WireVariant.operation(self, method, params)
        except RpcError as exc:
            if method in self.methods and exc.code == SESSION_STATE_ERROR:
                return {"outcome": "failed", "message": "the command could not run"}
            raise


class _BusySendAnswered(_RefusalCodesRenamed):
    """A send while busy is answered as a failed turn instead of being refused."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await WireVariant.operation(self, method, params)
        except RpcError as exc:
            code = exc.data.get("code") if isinstance(exc.data, dict) else None
            if method == "session.send" and code == "busy":
                return {"status": "failed", "tokensUsed": {"input": 0, "output": 0}}
            raise


def _break(
    name: str, rule: str, clauses: tuple[str, ...], variant: type[WireVariant]
) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, implementation=variant)


WIRE_BREAKS: tuple[BrokenImplementation, ...] = (
    _break(
        "abort-terminal-says-stop",
        "an aborted turn's terminal says stopReason stop",
        ("AS-LIFE-017",),
        _AbortSaysStop,
    ),
    _break(
        "tool-history-carries-arguments",
        "toolHistory entries carry the call's arguments and result",
        ("AS-MSG-012",),
        _ToolHistoryWithArguments,
    ),
    _break(
        "steering-event-emitted",
        "a reserved steering event is emitted at each turn start",
        ("AS-EVT-003",),
        _SteeringEmitted,
    ),
    _break(
        "started-event-renamed",
        "the start event is named outside the session namespace's union",
        ("AS-LIFE-047",),
        _StartedRenamed,
    ),
    _break(
        "context-optionals-dropped",
        "session:started drops activeFile, selection and gitRef",
        ("AS-CTX-001",),
        _ContextLosesOptionals,
    ),
    _break(
        "scope-tier-out-of-set",
        "a full scope tier is reported as 'unrestricted'",
        ("AS-CTX-003",),
        _ScopeTierRenamed,
    ),
    _break(
        "agent-ref-not-the-started-one",
        "session:started names another agent reference",
        ("AS-LIFE-004",),
        _AgentRefChanged,
    ),
    _break(
        "internal-error-retryable",
        "the fixed internal error of an observer failure says retryable",
        ("AS-OBS-007", "AS-OBS-008"),
        _InternalErrorRetryable,
    ),
    _break(
        "variables-not-persisted",
        "the persisted session row loses context.variables",
        ("AS-SEC-008",),
        _VariablesNotPersisted,
    ),
    _break("no-session-row-at-start", "start persists no session row", ("AS-LIFE-006",), _NoSessionRow),
    _break(
        "terminal-names-the-primary",
        "the committed terminal names the primary model, not the producer",
        ("AS-MSG-037",),
        _TerminalNamesThePrimary,
    ),
    _break(
        "command-outcome-fields-renamed",
        "the ran/denied outcomes name their fields differently",
        ("AS-LIFE-031",),
        _CommandOutcomeRenamed,
    ),
    _break(
        "system-prompt-dropped-later",
        "requests after the first lose the agent's system prompt",
        ("AS-SESS-001", "AS-SESS-002"),
        _SystemPromptDropped,
    ),
    _break(
        "later-requests-on-another-model",
        "requests after the first go to another model",
        ("AS-SESS-005",),
        _LaterRequestsOnAnotherModel,
    ),
    _break(
        "extra-tool-advertised",
        "every request advertises a tool the agent does not have",
        ("AS-SEC-001", "AS-SEC-005"),
        _ExtraToolAdvertised,
    ),
    _break(
        "user-message-not-sent",
        "the pending user message is left out of the request",
        ("AS-LIFE-007",),
        _UserMessageNotSent,
    ),
    _break(
        "replies-forgotten",
        "earlier assistant replies are left out of later requests",
        ("AS-LIFE-008",),
        _RepliesForgotten,
    ),
    _break(
        "resume-forgets-history",
        "a resumed session sends only the new user message",
        ("AS-LIFE-034", "AS-SESS-007"),
        _ResumeForgetsHistory,
    ),
    _break(
        "policy-refused-while-busy",
        "setTurnPolicy is refused busy while a turn runs",
        ("AS-LIFE-014",),
        _PolicyRefusedWhileBusy,
    ),
    _break(
        "policy-refused-after-cancel",
        "setTurnPolicy is refused after cancel instead of inert",
        ("AS-LIFE-015",),
        _PolicyRefusedAfterCancel,
    ),
    _break(
        "abort-ends-the-session",
        "after an aborted turn every send is refused not_active",
        ("AS-LIFE-016",),
        _AbortEndsTheSession,
    ),
    _break(
        "cancelled-cannot-resume",
        "a cancelled session's resume is refused",
        ("AS-LIFE-024",),
        _CancelledCannotResume,
    ),
    _break(
        "invalid-resume-state-called-busy",
        "an invalid resume state is refused with code busy",
        ("AS-PROJ-022",),
        _InvalidResumeStateCalledBusy,
    ),
    _break(
        "command-outside-idle-answers-failed",
        "a command outside idle answers failed instead of refusing",
        ("AS-LIFE-032",),
        _CommandRacesTheTurn,
    ),
    _break(
        "busy-send-answered-failed",
        "a send while busy is answered as a failed turn, not refused",
        ("AS-LIFE-049",),
        _BusySendAnswered,
    ),
)
