"""Breaks of the session lifecycle (clauses AS-LIFE-001 to 024 and 044 on): start, sendMessage, turn
policy changes, abort and cancel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import (
    Observed,
    ProviderRequests,
    RefusalCodesRenamed,
    handle_root,
    refusal_error,
    request_messages,
)
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import SESSION_STATE_ERROR, Callback
from relavium_conformance._wire.protocol_messages import CreateParams
from relavium_reference import AgentSession, SessionStopReason, TurnPolicy, TurnResult
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.events import (
    AgentReasoning,
    AgentToken,
    SessionCancelled,
    SessionEvent,
    SessionTrimmed,
    SessionTurnCompleted,
    TokensUsed,
)
from relavium_reference._model.history_results import Trimmed, TrimResult
from relavium_reference._model.messages import AgentSessionRecord, ReasoningPart, SessionMessage, TextPart
from relavium_reference._rules.lifecycle import SessionState
from relavium_reference._rules.projection import Exchange, HistoryMessage
from relavium_reference._rules.resume import SessionResumeState, reconstruct_session_state

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="aborted-turn-kept",
    summary="an aborted turn's user message stays in the transcript",
    clauses=("AS-LIFE-018",),
)
class _AbortKeepsTheUser(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "aborted":
            self._exchanges.append(Exchange(user=text, assistant=""))
        return result


@break_of(
    name="turn-completed-after-cancel",
    summary="a cancelled turn still publishes session:turn_completed",
    clauses=("AS-LIFE-021", "AS-LIFE-023"),
)
class _TurnCompletedAfterCancel(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "cancelled":
            await self._stamper.emit(
                SessionTurnCompleted,
                stop_reason=SessionStopReason.ABORTED,
                tokens_used=TokensUsed(input=0, output=0),
            )
        return result


@break_of(
    name="late-abort-discards-reply",
    summary="an abort after the turn resolved discards the reply",
    clauses=("AS-LIFE-022",),
)
class _LateAbortDiscards(AgentSession):
    def abort(self) -> None:
        if self._progress is not None:
            self._progress.resolved = False
        super().abort()


@break_of(
    name="idle-abort-emits",
    summary="an abort with no turn in flight emits a terminal",
    clauses=("AS-LIFE-020",),
)
class _AbortWhenIdleEmits(AgentSession):
    def abort(self) -> None:
        if self._turn_task is None and self._state.value == "idle":
            self._interrupt = None
            asyncio.get_running_loop().create_task(
                self._stamper.emit(
                    SessionTurnCompleted,
                    stop_reason=SessionStopReason.ABORTED,
                    tokens_used=TokensUsed(input=0, output=0),
                )
            )
        super().abort()


@break_of(
    name="tool-pairs-leak",
    summary="a tool round's results reach the next turn's request",
    clauses=("AS-LIFE-010", "AS-MSG-009"),
)
class _ToolPairsLeak(AgentSession):
    """Carries the previous turn's tool results into the next request, as assistant text."""

    _leak: str = ""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        if not self._leak:
            return setup
        history = [*setup.history, HistoryMessage("assistant", self._leak)]
        return TurnSetup(**{**setup.__dict__, "history": history})

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if progress.tool_history:
            self._leak = "[tool results: " + ", ".join(e.tool_call_id for e in progress.tool_history) + "]"
        return await super()._settle(end, progress)


@break_of(
    name="policy-applies-mid-turn",
    summary="a policy change during a turn takes effect in that same turn",
    clauses=("AS-LIFE-012",),
)
class _PolicyAppliesMidTurn(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        session = self

        async def live_confirm(request: Any) -> bool:
            return await session._policy.approves(request)

        live = TurnPolicy(advertise=policy.advertise, confirm=live_confirm)
        return super()._turn_setup(text, live)


@break_of(
    name="abort-stops-the-command",
    summary="an abort while a user command runs stops the command",
    clauses=("AS-LIFE-020",),
)
class _AbortStopsTheCommand(AgentSession):
    def abort(self) -> None:
        if self._command_task is not None and not self._command_task.done():
            self._command_task.cancel()
        super().abort()


@break_of(
    name="node-id-is-the-agent-id",
    summary="in-turn events name the agent's id as nodeId, not the session's agent reference",
    clauses=("AS-LIFE-004",),
)
class _NodeIdIsTheAgentId(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return TurnSetup(**{**setup.__dict__, "node_id": self._agent.id})


@break_of(
    name="reasoning-joins-the-reply",
    summary="a turn's reasoning text is kept in the transcript the next request carries",
    clauses=("AS-LIFE-008",),
)
class _ReasoningJoinsTheReply(Observed):
    """The turn's reasoning text is kept in the working transcript, before the reply."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._thought = ""

    async def seen(self, event: SessionEvent) -> None:
        if isinstance(event, AgentReasoning):
            self._thought += event.text

    async def send_message(self, text: str) -> Any:
        self._thought = ""
        result = await super().send_message(text)
        if self._thought and self._exchanges and self._exchanges[-1].user == text:
            last = self._exchanges[-1]
            self._exchanges[-1] = Exchange(user=last.user, assistant=self._thought + (last.assistant or ""))
        return result


@break_of(
    name="reconstruct-reasoning-as-text",
    summary="a stored reasoning part is read back as reply text, so a resumed session sends it on",
    clauses=("AS-LIFE-008", "AS-PROJ-015"),
    replaces="reconstruct_session_state",
)
def _reasoning_read_as_text(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """A stored reasoning part is read back as text of its reply (so it reaches the next request)."""
    read = [
        m.model_copy(
            update={
                "content": tuple(
                    TextPart(text=part.text) if isinstance(part, ReasoningPart) else part
                    for part in m.content
                )
            }
        )
        for m in messages
    ]
    return reconstruct_session_state(record, read)


@break_of(
    name="cancel-replays-tokens",
    summary="after session:cancelled the turn's token events are delivered again as a replay",
    clauses=("AS-LIFE-003",),
)
class _CancelReplaysTokens(Observed):
    """After session:cancelled the transient token events are delivered again, as a replay log."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._replay_log: list[str] = []

    async def seen(self, event: SessionEvent) -> None:
        if isinstance(event, AgentToken):
            self._replay_log.append(event.token)

    async def cancel(self) -> None:
        await super().cancel()
        replay, self._replay_log = self._replay_log, []
        for token in replay:
            await self._stamper.emit(AgentToken, node_id=self.agent_ref, token=token, model=self._agent.model)


@break_of(
    name="empty-final-not-committed",
    summary="a turn whose final text is empty commits no rows (no explicit empty terminal)",
    clauses=("AS-LIFE-009",),
)
class _EmptyFinalNotCommitted(AgentSession):
    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        if not end.text:
            return True  # an empty final is not worth a row: the explicit terminal is lost
        return await super()._commit(text, end, progress)


@break_of(
    name="policy-change-reseats",
    summary="setTurnPolicy rebuilds the instance and loses the conversation",
    clauses=("AS-LIFE-011",),
)
class _PolicyChangeReseats(AgentSession):
    """setTurnPolicy rebuilds the instance: the conversation so far is lost."""

    def set_turn_policy(self, policy: TurnPolicy | None) -> None:
        super().set_turn_policy(policy)
        self._exchanges = []


@break_of(
    name="abort-emits-cancelled", summary="an abort also emits session:cancelled", clauses=("AS-LIFE-019",)
)
class _AbortEmitsCancelled(AgentSession):
    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        result = await super()._settle_interrupted(progress)
        if result.status == "aborted":
            await self._stamper.emit(SessionCancelled)
        return result


@break_of(
    name="sessions-share-an-id",
    summary="a second session is given the first one's session id",
    clauses=("AS-LIFE-005",),
)
class _OneSessionId(WireVariant):
    """Every session of a case is given the first one's session id (on its create answer and its events)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._first_ids: dict[str, str] = {}

    def _same(self, handle: str, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            first = self._first_ids.setdefault(handle_root(handle), value["sessionId"])
            value["sessionId"] = first
        return value

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        return dict(self._same(handle, event))

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        return self._same(str(params.get("handle")), result) if method == "session.create" else result


@break_of(
    name="busy-across-sessions",
    summary="a send is refused busy while another session's turn streams",
    clauses=("AS-LIFE-049",),
)
class _BusyAcrossSessions(WireVariant):
    """A send is refused busy while any session of the case has a turn in flight (one busy flag)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._side_sending: dict[str, int] = {}

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method != "session.send":
            return await super().operation(method, params)
        root = handle_root(str(params.get("handle")))
        if self._side_sending.get(root):
            raise RpcError(SESSION_STATE_ERROR, "refused (busy)", {"kind": "session_state", "code": "busy"})
        self._side_sending[root] = self._side_sending.get(root, 0) + 1
        try:
            return await super().operation(method, params)
        finally:
            self._side_sending[root] -= 1


@break_of(
    name="sessions-share-a-transcript",
    summary="a second session works on the first one's working transcript",
    clauses=("AS-LIFE-008",),
)
class _SharedTranscript(ReferenceImplementation):
    """A case's second session works on the first one's working transcript (one history for both)."""

    def _create(self, params: CreateParams) -> dict[str, Any]:
        created = super()._create(params)
        root = handle_root(params.handle)
        if root != params.handle and root in self._sessions:
            self._sessions[params.handle]._exchanges = self._sessions[root]._exchanges
        return created


@break_of(
    name="abort-terminal-says-stop",
    summary="an aborted turn's terminal says stopReason stop",
    clauses=("AS-LIFE-017",),
)
class _AbortSaysStop(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed" and event.get("stopReason") == "aborted":
            event["stopReason"] = "stop"
        return event


@break_of(
    name="started-event-renamed",
    summary="the start event is named outside the session namespace's union",
    clauses=("AS-LIFE-047",),
)
class _StartedRenamed(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:started":
            event["type"] = "session:opened"
        return event


@break_of(
    name="agent-ref-not-the-started-one",
    summary="session:started names another agent reference",
    clauses=("AS-LIFE-004",),
)
class _AgentRefChanged(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:started" and isinstance(event.get("agentRef"), str):
            event["agentRef"] += "-default"
        return event


@break_of(name="no-session-row-at-start", summary="start persists no session row", clauses=("AS-LIFE-006",))
class _NoSessionRow(WireVariant):
    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        return None if method == "host.createSession" else params


@break_of(
    name="user-message-not-sent",
    summary="the pending user message is left out of the request",
    clauses=("AS-LIFE-007",),
)
class _UserMessageNotSent(ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        messages = request_messages(params)
        if messages and messages[-1].get("role") == "user":
            params["request"]["messages"] = messages[:-1]


@break_of(
    name="replies-forgotten",
    summary="earlier assistant replies are left out of later requests",
    clauses=("AS-LIFE-008",),
)
class _RepliesForgotten(ProviderRequests):
    def request(self, handle: str, params: dict[str, Any]) -> None:
        params["request"]["messages"] = [m for m in request_messages(params) if m.get("role") != "assistant"]


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


@break_of(
    name="policy-refused-while-busy",
    summary="setTurnPolicy is refused busy while a turn runs",
    clauses=("AS-LIFE-014",),
)
class _PolicyRefusedWhileBusy(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.setTurnPolicy" and self.sending.get(handle):
            raise refusal_error("busy")


@break_of(
    name="policy-refused-after-cancel",
    summary="setTurnPolicy is refused after cancel instead of inert",
    clauses=("AS-LIFE-015",),
)
class _PolicyRefusedAfterCancel(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.setTurnPolicy" and handle in self.cancelled:
            raise refusal_error("not_active")


@break_of(
    name="abort-ends-the-session",
    summary="after an aborted turn every send is refused not_active",
    clauses=("AS-LIFE-016",),
)
class _AbortEndsTheSession(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.send" and handle in self.aborted:
            raise refusal_error("not_active")


@break_of(
    name="cancelled-cannot-resume",
    summary="a cancelled session's resume is refused",
    clauses=("AS-LIFE-024",),
)
class _CancelledCannotResume(_StateTracking):
    def refuse(self, handle: str, method: str) -> None:
        if method == "session.resume" and handle in self.cancelled:
            raise refusal_error("not_active")


@break_of(
    name="busy-send-answered-failed",
    summary="a send while busy is answered as a failed turn, not refused",
    clauses=("AS-LIFE-049",),
)
class _BusySendAnswered(RefusalCodesRenamed):
    """A send while busy is answered as a failed turn instead of being refused."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await WireVariant.operation(self, method, params)
        except RpcError as exc:
            code = exc.data.get("code") if isinstance(exc.data, dict) else None
            if method == "session.send" and code == "busy":
                return {"status": "failed", "tokensUsed": {"input": 0, "output": 0}}
            raise


@break_of(
    name="length-stop-reply-dropped",
    summary="a turn that stopped on length keeps its user but not its cut reply in the working transcript",
    clauses=("AS-LIFE-008",),
)
class _LengthReplyDropped(AgentSession):
    """The reply is reported and committed, but the transcript's slot keeps the user alone."""

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        if end.succeeded and end.stop_reason is SessionStopReason.LENGTH and self._exchanges:
            last = self._exchanges[-1]
            self._exchanges[-1] = Exchange(user=last.user, assistant="")
        return await super()._settle(end, progress)


@break_of(
    name="trimmed-announced-after-cancel",
    summary="a trim whose marker landed after a cancel still announces session:trimmed",
    clauses=("AS-LIFE-003",),
)
class _TrimmedAfterCancel(AgentSession):
    """The trim's event goes out whatever happened to the session while the marker was written."""

    async def _trim(self, max_messages: int, reason: Literal["manual", "auto-fallback"]) -> TrimResult:
        result = await super()._trim(max_messages, reason)
        if isinstance(result, Trimmed) and self._state is SessionState.CANCELLED:
            await self._stamper.emit(
                SessionTrimmed,
                reason=reason,
                kept_message_count=result.kept_message_count,
                dropped_message_count=result.dropped_message_count,
                kept_turn_count=result.kept_turn_count,
            )
        return result
