"""Breaks of the session messages (clauses AS-MSG-*): the rows written for a turn, their parts and
what resume reads back from them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import (
    Answers,
    ResumeCleansRows,
    answer_rows,
    state_with,
    strip_calls,
)
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import INVALID_INPUT, Callback
from relavium_reference import AgentSession, TurnPolicy, TurnResult
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._host.history_store import StoreError, message_from_row
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.events import CompactionReason, SessionCompacted
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage, TextPart, ToolResultPart
from relavium_reference._model.messages import TextPart as DurableText
from relavium_reference._model.records import CompletedTurn, MessageDraft
from relavium_reference._model.tools import ApprovalRequest, Tool, ToolCallInfo, ToolOutput, ToolRegistry
from relavium_reference._rules.resume import SessionResumeState, reconstruct_session_state

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="reconstruct-ignores-boundary-markers",
    summary="droppedThroughSequence markers are ignored: no boundary, no preamble",
    clauses=("AS-MSG-027",),
    replaces="reconstruct_session_state",
)
def _reconstruct_ignores_markers(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    return reconstruct_session_state(record, [m.model_copy(update={"compaction": None}) for m in messages])


@break_of(
    name="latch-checked-before-approval",
    summary="the latch refuses a tool before its approval is asked, instead of right before dispatch",
    clauses=("AS-MSG-017",),
)
class _LatchBeforeApproval(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)

        async def confirm(request: ApprovalRequest) -> bool:
            if self._latched:
                return False  # refused before the approval was even asked
            return await policy.approves(request)

        return replace(setup, policy=TurnPolicy(advertise=policy.advertise, confirm=confirm))


@break_of(
    name="tool-dispatched-after-latch",
    summary="a tool is still dispatched after a usage write latched the session",
    clauses=("AS-MSG-018",),
)
class _DispatchesAfterLatch(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        return replace(super()._turn_setup(text, policy), latched=lambda: False)


@break_of(
    name="failed-turn-cost-dropped",
    summary="a failed or aborted turn's billed cost is never recorded",
    clauses=("AS-MSG-022",),
)
class _DropsUncommittedCost(AgentSession):
    async def _record_uncommitted_cost(self, progress: TurnProgress) -> None:
        return None


class _DropsOutcomeAfterLatch:
    """A tool whose outcome is thrown away when the session latched while it ran."""

    def __init__(self, tool: Tool, latched: Callable[[], bool]) -> None:
        self._tool = tool
        self._latched = latched
        self.name, self.description, self.parameters = tool.name, tool.description, tool.parameters
        self.action = tool.action

    def preview(self, args: Any) -> dict[str, str]:
        return self._tool.preview(args)

    async def run(self, args: Any, call: ToolCallInfo) -> ToolOutput:
        output = await self._tool.run(args, call)
        if self._latched():
            return ToolOutput("the session stopped after a failed save", is_error=True)
        return output


@break_of(
    name="started-tool-dropped-after-latch",
    summary=(
        "a tool already running when a usage write fails has its outcome replaced by the latch's refusal"
    ),
    clauses=("AS-MSG-020",),
)
class _StartedToolDroppedAfterLatch(AgentSession):
    """Once a failed write latched the session, a tool that was already running cannot record its outcome."""

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        tools = (setup.registry.get(name) for name in setup.registry.names())
        registry = ToolRegistry(_DropsOutcomeAfterLatch(t, setup.latched) for t in tools if t is not None)
        return replace(setup, registry=registry)


@break_of(
    name="signature-committed",
    summary="the committed terminal row keeps the reasoning signature",
    clauses=("AS-MSG-005",),
)
class _SignatureCommitted(WireVariant):
    """The committed terminal row keeps the turn's reasoning signature."""

    def __init__(self, callback: Any, **options: Any) -> None:
        async def watched(method: str, params: dict[str, Any]) -> Any:
            answer = await callback(method, params)
            chunk = answer.get("chunk") if isinstance(answer, dict) else None
            if method == "provider.next" and isinstance(chunk, dict) and chunk.get("signature"):
                self._signature = str(chunk["signature"])
            return answer

        self._signature = ""
        super().__init__(watched, **options)

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        turn = params.get("turn")
        if method == "host.commitTurn" and isinstance(turn, dict) and self._signature:
            part = {"type": "reasoning", "text": "", "signature": self._signature}
            turn["terminal"]["content"] = [part, *turn["terminal"]["content"]]
        return params


@break_of(
    name="resume-forgets-empty-finals",
    summary="a resumed instance leaves empty-final exchanges out of its working transcript",
    clauses=("AS-MSG-026",),
)
class _ResumeForgetsEmptyFinals(AgentSession):
    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._exchanges = [e for e in session._exchanges if e.assistant != ""]
        return session


class _ResumeRows(WireVariant):
    """A base: resume hands the engine its rows after :meth:`rows` (a refusal raised there is the
    engine's)."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            rows = [copy.deepcopy(r) for r in params.get("messages") or () if isinstance(r, dict)]
            params = {**params, "messages": self.rows(rows)}
        return await super().operation(method, params)

    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return rows


@break_of(
    name="misplaced-parts-dropped",
    summary="resume drops parts a row's role does not allow instead of refusing the row",
    clauses=("AS-MSG-005",),
)
class _MisplacedPartsDropped(_ResumeRows):
    """Parts a row's role does not allow are dropped (a tool row keeps its first result)."""

    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for row in rows:
            content = [p for p in row.get("content") or () if isinstance(p, dict)]
            if row.get("role") in ("user", "system"):
                row["content"] = [p for p in content if p.get("type") in ("text", "media")]
                if row.get("role") == "system":
                    row["content"] = [p for p in row["content"] if p.get("type") == "text"]
            elif row.get("role") == "tool":
                row["content"] = content[:1]
        return rows


@break_of(name="media-refused", summary="resume refuses a handle-only media part", clauses=("AS-MSG-006",))
class _MediaRefused(_ResumeRows):
    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if any(p.get("type") == "media" for r in rows for p in r.get("content") or () if isinstance(p, dict)):
            raise RpcError(INVALID_INPUT, "media refused", {"kind": "invalid_input"})
        return rows


@break_of(
    name="media-names-dropped",
    summary="resume drops a media part's filename or transcript instead of refusing the row",
    clauses=("AS-MSG-006",),
)
class _MediaNamesDropped(_ResumeRows):
    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for row in rows:
            for part in row.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "media":
                    part.pop("filename", None)
                    part.pop("transcript", None)
        return rows


@break_of(
    name="compacted-without-kept-turn-count",
    summary="session:compacted leaves out keptTurnCount",
    clauses=("AS-MSG-030",),
)
class _DropsKeptTurnCount(AgentSession):
    """``session:compacted`` leaves out ``keptTurnCount``."""

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
        inner = job.stamper

        class _Stamper:
            async def emit(self, event_type: Any, **payload: Any) -> Any:
                if event_type is SessionCompacted:
                    payload.pop("kept_turn_count", None)
                return await inner.emit(event_type, **payload)

        job.stamper = _Stamper()  # type: ignore[assignment]
        return job


def _without_terminal_text(user_text: str) -> CompletedTurn:
    """A turn whose terminal row has no text part: built without validation, as a broken engine would."""
    return CompletedTurn.model_construct(
        user=MessageDraft(role="user", content=(DurableText(text=user_text),)),
        structural=(),
        terminal=MessageDraft.model_construct(role="assistant", content=(), model_id=None),
        finish_reason="stop",
        costs=(),
    )


@break_of(
    name="persists-aborted-turn",
    summary="an aborted turn is committed to the transcript",
    clauses=("AS-MSG-021",),
)
class _PersistsAbortedTurn(AgentSession):
    """Commits an aborted turn as if it had completed with the text streamed so far."""

    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "aborted" and self._deps.persister is not None:
            turn = CompletedTurn(
                user=MessageDraft(role="user", content=(DurableText(text=text),)),
                terminal=MessageDraft(role="assistant", content=(DurableText(text=""),)),
            )
            await self._deps.persister.commit_turn(self.session_id, turn)
        return result


@break_of(
    name="drops-empty-terminal",
    summary="an empty final text is persisted without a terminal text part",
    clauses=("AS-MSG-011",),
)
class _DropsEmptyTerminal(AgentSession):
    """Writes no text part on the terminal row when the final text is empty (the old archive's shape)."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        if end.text or self._deps.persister is None:
            return await super()._commit(text, end, progress)
        turn = _without_terminal_text(text)
        try:
            await self._deps.persister.commit_turn(self.session_id, turn)
        except Exception:
            self._latched = True
            return False
        return True


@break_of(
    name="commits-in-two-transactions",
    summary="a completed turn reaches the host in two commits instead of one whole exchange",
    clauses=("AS-MSG-014",),
)
class _CommitsInTwoTransactions(AgentSession):
    """Commits the user row first and the rest of the exchange in a second commit."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        persister = self._deps.persister
        if persister is None:
            return await super()._commit(text, end, progress)
        user_only = _without_terminal_text(text)
        try:
            await persister.commit_turn(self.session_id, user_only)
        except Exception:
            self._latched = True
            return False
        return await super()._commit(text, end, progress)


@break_of(
    name="ignores-the-latch",
    summary="after a failed commit the session keeps calling the provider and running commands",
    clauses=("AS-MSG-015",),
)
class _IgnoresTheLatch(AgentSession):
    """Carries on after a failed commit as if nothing had happened."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        await super()._commit(text, end, progress)
        self._latched = False
        return True


_KNOWN_PART_FIELDS = {
    "text": {"type", "text"},
    "tool_call": {"type", "id", "name"},
    "tool_result": {"type", "toolCallId", "name", "isError", "byteLength", "truncated", "attachments"},
    "reasoning": {"type", "text", "redacted"},
    "media": {"type", "mimeType", "source", "byteLength", "durationMs"},
}


def _strip(message: Any) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    parts = []
    for part in message["content"]:
        keep = _KNOWN_PART_FIELDS.get(str(part.get("type")), set(part)) if isinstance(part, dict) else None
        parts.append({k: v for k, v in part.items() if k in keep} if keep is not None else part)
    return {**message, "content": parts}


@break_of(
    name="accepts-unknown-content-fields",
    summary=("durable rows with unknown fields or raw tool arguments are read, the extras silently dropped"),
    clauses=("AS-MSG-005",),
)
class _AcceptsUnknownContentFields(ReferenceImplementation):
    """Silently drops unknown fields (and raw arguments, results, signatures) of durable content parts."""

    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume" and isinstance(params.get("messages"), list):
            params = {**params, "messages": [_strip(message) for message in params["messages"]]}
        return await super()._dispatch(method, params)


@break_of(
    name="resume-empty-final-not-counted",
    summary="an empty-final turn does not count as completed",
    clauses=("AS-MSG-026",),
    replaces="reconstruct_session_state",
    through=state_with,
)
def _empty_final_not_counted(
    state: SessionResumeState, _rows: Sequence[SessionMessage]
) -> SessionResumeState:
    alone = [s for s in state.completed_turn_spans if s.end - s.start == 1]
    if not alone:
        return state
    return state.model_copy(update={"turn_count": max(0, state.turn_count - len(alone))})


@break_of(
    name="store-drops-media-names",
    summary="the store drops a media part's filename or transcript instead of refusing the row",
    clauses=("AS-MSG-006",),
    replaces="read_stored_row",
)
def _media_names_dropped(row: Mapping[str, Any]) -> SessionMessage:
    """A media part's filename or transcript is dropped before the row is read."""
    try:
        parts = json.loads(row["content_parts"]) if isinstance(row.get("content_parts"), str) else None
    except ValueError:
        parts = None
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "media":
                part.pop("filename", None)
                part.pop("transcript", None)
        row = {**row, "content_parts": json.dumps(parts, separators=(",", ":"))}
    return message_from_row(dict(row))


@break_of(
    name="store-refuses-media",
    summary="the store refuses a row with a handle-only media part",
    clauses=("AS-MSG-006",),
    replaces="read_stored_row",
)
def _media_refused(row: Mapping[str, Any]) -> SessionMessage:
    if '"type":"media"' in str(row.get("content_parts") or ""):
        raise StoreError("invalid_message")
    return message_from_row(dict(row))


@break_of(
    name="store-drops-byte-size",
    summary="the store reads a tool result without its byte-size fields",
    clauses=("AS-MSG-004",),
    replaces="read_stored_row",
)
def _byte_size_dropped(row: Mapping[str, Any]) -> SessionMessage:
    """A tool result's byte-size fields are read as transient and left out of the message."""
    message = message_from_row(dict(row))
    content = tuple(
        part.model_copy(update={"byte_length": None, "truncated": None})
        if isinstance(part, ToolResultPart)
        else part
        for part in message.content
    )
    return message.model_copy(update={"content": content})


@break_of(
    name="reconstruct-preamble-is-terminal",
    summary="a tool-call row carrying preamble text is read as the turn's terminal",
    clauses=("AS-MSG-025",),
    replaces="reconstruct_session_state",
)
def _preamble_is_terminal(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """An assistant row with text and tool calls is read as the turn's terminal text."""
    read = [
        m if m.role != "assistant" or not m.text or not m.tool_calls else strip_calls(m) for m in messages
    ]
    return reconstruct_session_state(record, read)


@break_of(
    name="latch-forgotten",
    summary="after a failed commit the session is not latched: the next send reaches the provider",
    clauses=("AS-MSG-016",),
)
class _LatchForgotten(AgentSession):
    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        committed = await super()._commit(text, end, progress)
        self._latched = False
        return committed


@break_of(
    name="resume-rewrites-history",
    summary=("after a resume, the exchanges already persisted are written again before the next turn's rows"),
    clauses=("AS-MSG-002",),
)
class _ResumeRewritesHistory(AgentSession):
    """A resumed instance's first commit is preceded by commits of every exchange it restored."""

    _replay: tuple[tuple[str, str], ...] = ()

    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        if isinstance(session, _ResumeRewritesHistory):
            session._replay = tuple(
                (e.user, e.assistant) for e in session._exchanges if e.assistant is not None
            )
        return session

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        persister = self._deps.persister
        replay, self._replay = self._replay, ()
        if persister is not None:
            for user, reply in replay:
                turn = CompletedTurn(
                    user=MessageDraft(role="user", content=(TextPart(text=user),)),
                    terminal=MessageDraft(role="assistant", content=(TextPart(text=reply),)),
                )
                await persister.commit_turn(self.session_id, turn)
        return await super()._commit(text, end, progress)


@break_of(
    name="tool-history-carries-arguments",
    summary="toolHistory entries carry the call's arguments and result",
    clauses=("AS-MSG-012",),
)
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


@break_of(
    name="terminal-names-the-primary",
    summary="the committed terminal names the primary model, not the producer",
    clauses=("AS-MSG-037",),
)
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


@break_of(
    name="tool-arguments-in-the-transcript",
    summary="the committed tool-call row keeps the call's arguments as text",
    clauses=("AS-MSG-013",),
)
class _ToolArgumentsInTheTranscript(WireVariant):
    """The committed tool-call row keeps the call's streamed arguments as text."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._args: dict[str, Any] = {}

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "tool.call":
            self._args[str(params.get("callId"))] = params.get("args")
        if method == "host.commitTurn":
            for row in (params.get("turn") or {}).get("structural") or ():
                calls = [p for p in row.get("content", ()) if p.get("type") == "tool_call"]
                for call in calls:
                    if str(call.get("id")) in self._args:
                        text = f"arguments: {self._args[str(call['id'])]}"
                        row["content"] = [{"type": "text", "text": text}, *row["content"]]
        return params


@break_of(
    name="trimmed-without-kept-turns",
    summary="session:trimmed leaves out keptTurnCount",
    clauses=("AS-MSG-030",),
)
class _TrimmedWithoutKeptTurns(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:trimmed":
            event.pop("keptTurnCount", None)
        return event


@break_of(
    name="compaction-on-any-row-ignored",
    summary="resume drops a compaction field from a non-system row instead of refusing it",
    clauses=("AS-MSG-036",),
)
class _CompactionOnAnyRowIgnored(ResumeCleansRows):
    def clean(self, row: dict[str, Any]) -> dict[str, Any]:
        if row.get("role") != "system":
            row.pop("compaction", None)
        return row


@break_of(
    name="export-skips-superseded-turns",
    summary="the session's export leaves out turns behind a boundary marker",
    clauses=("AS-MSG-029",),
)
class _ExportSkipsSupersededTurns(Answers):
    def answer(self, handle: str, method: str, answer: Any) -> Any:
        rows = answer_rows(answer)
        through = max(
            (
                int(r["compaction"]["droppedThroughSequence"])
                for r in rows
                if isinstance(r.get("compaction"), dict)
            ),
            default=None,
        )
        if method == "host.loadSession" and through is not None:
            answer["messages"] = [r for r in rows if int(r.get("sequenceNumber", 0)) > through]
        return answer
