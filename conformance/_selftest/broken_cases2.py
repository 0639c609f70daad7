"""Broken sessions that prove the rule cases added for issue 10 (point 3) bite: one rule each.

Each is the reference session with one decision changed, caught by the cases citing its clause.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.broken_rules2 import _Observed
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import INVALID_INPUT
from relavium_reference import AgentSession, PersistError
from relavium_reference._host.session import ExportResult
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.commands import CommandAllowlist
from relavium_reference._model.events import AgentReasoning, SessionEvent
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._rules.lifecycle import SessionState
from relavium_reference._rules.projection import Exchange

__all__ = ["CASE_BREAKS"]


class _LooseAllowlist(CommandAllowlist):
    """An entry also admits a path to it, another letter case and surrounding blanks."""

    def allows(self, command: str) -> bool:
        loose = os.path.basename(command.strip()).lower()
        return super().allows(command) or loose in {name.lower() for name in self.names}


class _AllowlistMatchesLoosely(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._allowlist = _LooseAllowlist(self._allowlist.names, self._allowlist.globs)


class _AbortStopsTheCommand(AgentSession):
    def abort(self) -> None:
        if self._command_task is not None and not self._command_task.done():
            self._command_task.cancel()
        super().abort()


class _ExportDuringACommand(AgentSession):
    async def export(self, workflow_path: str) -> ExportResult:
        if self._state is not SessionState.COMMAND:
            return await super().export(workflow_path)
        self._state = SessionState.IDLE  # the command is not treated as occupying the session
        try:
            return await super().export(workflow_path)
        finally:
            self._state = SessionState.COMMAND


class _SendDuringACommand(AgentSession):
    async def send_message(self, text: str) -> Any:
        if self._state is not SessionState.COMMAND:
            return await super().send_message(text)
        self._state = SessionState.IDLE  # the command is not treated as occupying the session
        try:
            return await super().send_message(text)
        finally:
            self._state = SessionState.COMMAND


class _FinalStopFlattened(WireVariant):
    """A final stop's reason other than stop is reported as stop: result, terminal event and row."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:turn_completed" and event.get("stopReason") in _FINAL:
            event["stopReason"] = "stop"
        return event

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        turn = params.get("turn")
        if method == "host.commitTurn" and isinstance(turn, dict) and turn.get("finishReason") in _FINAL:
            turn["finishReason"] = "stop"
        return params

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        if method == "session.send" and isinstance(result, dict) and result.get("stopReason") in _FINAL:
            result["stopReason"] = "stop"
        return result


_FINAL = ("length", "content_filter")


class _NodeIdIsTheAgentId(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return TurnSetup(**{**setup.__dict__, "node_id": self._agent.id})


class _ReasoningJoinsTheReply(_Observed):
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


class _EngagedAtFirstChunk(_Observed):
    """A turn counts as engaged only once a chunk arrived, not at the provider's invocation."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._chunks = 0

    async def seen(self, event: SessionEvent) -> None:
        if event.type in ("agent:token", "agent:reasoning", "agent:tool_call", "cost:updated"):
            self._chunks += 1

    async def send_message(self, text: str) -> Any:
        self._chunks = 0
        return await super().send_message(text)

    def _count_turn(self, progress: TurnProgress) -> None:
        if progress.engaged and self._chunks:
            self._turns_used += 1


class _EmptyFinalForgotten(AgentSession):
    """A turn whose final text is empty is left out of the working transcript."""

    async def send_message(self, text: str) -> Any:
        result = await super().send_message(text)
        if result.status == "completed" and not result.text and self._exchanges:
            self._exchanges.pop()
        return result


class _ResumeForgetsEmptyFinals(AgentSession):
    @classmethod
    def resume(cls, **kwargs: Any) -> AgentSession:
        session = super().resume(**kwargs)
        session._exchanges = [e for e in session._exchanges if e.assistant != ""]
        return session


class _ResumeKeepsThePolicy(WireVariant):
    """A resumed instance is handed the policy the previous instance had."""

    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self._policies: dict[str, Any] = {}

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        handle = str(params.get("handle"))
        result = await super().operation(method, params)
        if method == "session.setTurnPolicy":
            self._policies[handle] = params.get("policy")
        if method == "session.resume" and handle in self._policies:
            await super().operation(
                "session.setTurnPolicy", {"handle": handle, "policy": self._policies[handle]}
            )
        return result


class _ExportNormalisesNextLine(WireVariant):
    """The export's writer turns U+0085 into a plain line feed (a line-break normalisation)."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        result = await super().operation(method, params)
        path = result.get("workflowPath") if isinstance(result, dict) else None
        if method == "session.export" and isinstance(path, str) and os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text.replace("\\N", "\\n").replace("\u0085", "\n"))
        return result


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


class _RefusalsReworded(WireVariant):
    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await super().operation(method, params)
        except RpcError as exc:
            if exc.code == INVALID_INPUT:
                raise RpcError(INVALID_INPUT, "invalid content", {"kind": "invalid_input"}) from None
            raise


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


class _MediaRefused(_ResumeRows):
    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if any(p.get("type") == "media" for r in rows for p in r.get("content") or () if isinstance(p, dict)):
            raise RpcError(INVALID_INPUT, "media refused", {"kind": "invalid_input"})
        return rows


class _MediaNamesDropped(_ResumeRows):
    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for row in rows:
            for part in row.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "media":
                    part.pop("filename", None)
                    part.pop("transcript", None)
        return rows


class _RawCommitFailurePresented(AgentSession):
    """A raw commit failure is presented as the fixed failed result, like a classified one."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        committed = await super()._commit(text, end, progress)
        self._raw_commit_failure = None
        return committed


class _ClassifiedCommitFailureRaised(AgentSession):
    """A classified commit failure rejects the send instead of the fixed failed result."""

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        committed = await super()._commit(text, end, progress)
        if not committed and self._raw_commit_failure is None:
            self._raw_commit_failure = PersistError("the completed turn could not be committed")
        return committed


def _b(name: str, rule: str, clauses: tuple[str, ...], session: type[AgentSession]) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, session)


CASE_BREAKS: tuple[BrokenImplementation, ...] = (
    _b(
        "raw-commit-failure-presented",
        "a raw commit failure ends as the fixed failed result instead of rejecting with it",
        ("AS-OBS-008",),
        _RawCommitFailurePresented,
    ),
    _b(
        "classified-commit-failure-raised",
        "a classified commit failure rejects the send instead of the fixed failed result",
        ("AS-OBS-008",),
        _ClassifiedCommitFailureRaised,
    ),
    BrokenImplementation(
        "refusals-reworded",
        "content refusals carry another message than KD-MSG-2's fixed ones",
        ("AS-VAL-001",),
        implementation=_RefusalsReworded,
    ),
    BrokenImplementation(
        "misplaced-parts-dropped",
        "resume drops parts a row's role does not allow instead of refusing the row",
        ("AS-MSG-005",),
        implementation=_MisplacedPartsDropped,
    ),
    BrokenImplementation(
        "media-refused",
        "resume refuses a handle-only media part",
        ("AS-MSG-006",),
        implementation=_MediaRefused,
    ),
    BrokenImplementation(
        "media-names-dropped",
        "resume drops a media part's filename or transcript instead of refusing the row",
        ("AS-MSG-006",),
        implementation=_MediaNamesDropped,
    ),
    BrokenImplementation(
        "export-normalises-next-line",
        "the export writer turns U+0085 into a line feed, so the text reads back differently",
        ("AS-EXP-005",),
        implementation=_ExportNormalisesNextLine,
    ),
    _b(
        "empty-final-forgotten",
        "an empty-final exchange is left out of the working transcript",
        ("AS-PROJ-017",),
        _EmptyFinalForgotten,
    ),
    _b(
        "resume-forgets-empty-finals",
        "a resumed instance leaves empty-final exchanges out of its working transcript",
        ("AS-MSG-026",),
        _ResumeForgetsEmptyFinals,
    ),
    BrokenImplementation(
        "resume-keeps-the-policy",
        "a resumed instance keeps the previous instance's turn policy (KD-LIFE-3)",
        ("AS-LIFE-034",),
        implementation=_ResumeKeepsThePolicy,
    ),
    BrokenImplementation(
        "final-stop-flattened",
        "a final stop with length or content_filter is reported as stop",
        ("AS-VAL-009",),
        implementation=_FinalStopFlattened,
    ),
    _b(
        "node-id-is-the-agent-id",
        "in-turn events name the agent's id as nodeId, not the session's agent reference",
        ("AS-LIFE-004",),
        _NodeIdIsTheAgentId,
    ),
    _b(
        "reasoning-joins-the-reply",
        "a turn's reasoning text is kept in the transcript the next request carries",
        ("AS-LIFE-008",),
        _ReasoningJoinsTheReply,
    ),
    BrokenImplementation(
        "signature-committed",
        "the committed terminal row keeps the reasoning signature",
        ("AS-MSG-005",),
        implementation=_SignatureCommitted,
    ),
    _b(
        "engaged-at-first-chunk",
        "a turn counts as engaged only once a chunk arrived",
        ("AS-CAP-011",),
        _EngagedAtFirstChunk,
    ),
    _b(
        "send-during-a-command",
        "a send while a user command runs starts a turn instead of being refused busy",
        ("AS-LIFE-032",),
        _SendDuringACommand,
    ),
    _b(
        "allowlist-matches-loosely",
        "the allowlist admits a path to a listed name, another case and surrounding blanks",
        ("AS-LIFE-026", "AS-SEC-002"),
        _AllowlistMatchesLoosely,
    ),
    _b(
        "abort-stops-the-command",
        "an abort while a user command runs stops the command",
        ("AS-LIFE-020",),
        _AbortStopsTheCommand,
    ),
    _b(
        "export-during-a-command",
        "an export while a user command runs is served instead of refused busy",
        ("AS-LIFE-032",),
        _ExportDuringACommand,
    ),
)
