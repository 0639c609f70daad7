"""Broken implementations, second wire set: one rule each, changed where the kit can see it.

Like ``broken_wire.py``, each is the reference engine behind the message set with one edit to what it
sends or to what it reads back from the kit (a callback's answer), so the cases citing the rule's
clause must catch it in-process and over stdio alike.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from relavium_conformance._selftest.base import BrokenImplementation
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.messages import ToolSpec
from relavium_conformance._wire.protocol import SESSION_STATE_ERROR, Callback
from relavium_reference import FunctionTool

__all__ = ["WIRE_BREAKS_2"]


class _Answers(WireVariant):
    """A base that may change the answer of a callback before the engine reads it (:meth:`answer`)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        async def answered(method: str, params: dict[str, Any]) -> Any:
            answer = await callback(method, params)
            return self.answer(str(params.get("handle")), method, copy.deepcopy(answer))

        super().__init__(answered, **options)

    def answer(self, handle: str, method: str, answer: Any) -> Any:
        return answer


class _ReseatKeepsTheModel(WireVariant):
    """A reseat resumes on the model (and chain) the session was created with, not the chosen one."""

    kept: tuple[str, ...] = ("model", "provider", "fallback_chain")

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            snapshot = (params.get("record") or {}).get("agentSnapshot") or {}
            agent = dict(params.get("agent") or {})
            for key in self.kept:
                wire = "fallbackChain" if key == "fallback_chain" else key
                if wire in snapshot:
                    agent[key] = snapshot[wire]
                else:
                    agent.pop(key, None)
            params = {**params, "agent": agent}
        return await super().operation(method, params)


class _ReseatKeepsTheChain(_ReseatKeepsTheModel):
    kept = ("fallback_chain",)


class _BusyAfterCommand(WireVariant):
    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._ran: set[str] = set()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        handle = str(params.get("handle"))
        if method == "session.send" and handle in self._ran:
            self._ran.discard(handle)
            raise RpcError(SESSION_STATE_ERROR, "refused (busy)", {"kind": "session_state", "code": "busy"})
        result = await super().operation(method, params)
        if method == "session.runUserCommand":
            self._ran.add(handle)
        return result


class _UsageOfTheLastRequest(WireVariant):
    """A turn's tokensUsed is the last provider call's usage, not the sum of its calls."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._last: dict[str, tuple[int, int]] = {}

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "cost:updated":
            self._last[handle] = (int(event.get("inputTokens", 0)), int(event.get("outputTokens", 0)))
        if event.get("type") == "session:turn_started":
            self._last.pop(handle, None)
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        last = self._last.get(str(params.get("handle")))
        if method == "session.send" and isinstance(result, dict) and last is not None:
            result["tokensUsed"] = {**result.get("tokensUsed", {}), "input": last[0], "output": last[1]}
        return result


class _FailedCommitLosesUsage(WireVariant):
    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        error = result.get("error") if isinstance(result, dict) else None
        if method == "session.send" and isinstance(error, dict) and error.get("code") == "internal":
            result["tokensUsed"] = {"input": 0, "output": 0}
        return result


class _ErrorMessageNamesTheCause(_Answers):
    """A failed turn's error message repeats the provider's own error text."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._cause: dict[str, str] = {}

    def answer(self, handle: str, method: str, answer: Any) -> Any:
        chunk = answer.get("chunk") if isinstance(answer, dict) else None
        if method == "provider.next" and isinstance(chunk, dict) and chunk.get("type") == "error":
            self._cause[handle] = str((chunk.get("error") or {}).get("message", ""))
        return answer

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        cause = self._cause.pop(str(params.get("handle")), None)
        error = result.get("error") if isinstance(result, dict) else None
        if method == "session.send" and isinstance(error, dict) and cause:
            error["message"] = f"{error.get('message', '')}: {cause}"
        return result


class _GitCommitUngoverned(WireVariant):
    """git_commit is registered without its governed action, so it runs with no approval."""

    def _tool(self, handle: str, spec: ToolSpec) -> FunctionTool:
        if spec.name == "git_commit":
            spec = spec.model_copy(update={"action": None, "preview_key": None})
        return super()._tool(handle, spec)


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


class _TrimmedWithoutKeptTurns(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("type") == "session:trimmed":
            event.pop("keptTurnCount", None)
        return event


class _ResumeCleansRows(WireVariant):
    """A base: resume tidies the rows it was handed (:meth:`clean`) instead of refusing them."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            params = {**params, "messages": [self.clean(dict(row)) for row in params.get("messages") or ()]}
        return await super().operation(method, params)

    def clean(self, row: dict[str, Any]) -> dict[str, Any]:
        return row


_PART_FIELDS = {"type", "text", "id", "name", "toolCallId", "isError", "mimeType", "handle", "args"}


class _UnknownPartFieldsDropped(_ResumeCleansRows):
    def clean(self, row: dict[str, Any]) -> dict[str, Any]:
        content = row.get("content")
        if isinstance(content, list):
            row["content"] = [
                {k: v for k, v in part.items() if k in _PART_FIELDS} if isinstance(part, dict) else part
                for part in content
            ]
        return row


class _CompactionOnAnyRowIgnored(_ResumeCleansRows):
    def clean(self, row: dict[str, Any]) -> dict[str, Any]:
        if row.get("role") != "system":
            row.pop("compaction", None)
        return row


class _GivenStateIgnored(WireVariant):
    """resume ignores the state it is handed and reconstructs its own from the rows."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            params = {key: value for key, value in params.items() if key != "state"}
        return await super().operation(method, params)


def _rows(answer: Any) -> list[dict[str, Any]]:
    messages = answer.get("messages") if isinstance(answer, dict) else None
    return [row for row in messages or () if isinstance(row, dict)]


class _ExportLeavesOutTheLastTurn(_Answers):
    def answer(self, handle: str, method: str, answer: Any) -> Any:
        rows = _rows(answer)
        if method == "host.loadSession" and rows and rows[-1].get("role") == "assistant":
            answer["messages"] = rows[:-1]
        return answer


class _ExportSkipsSupersededTurns(_Answers):
    def answer(self, handle: str, method: str, answer: Any) -> Any:
        rows = _rows(answer)
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


_SECRET = re.compile(r"sk-[A-Za-z0-9-]+")


class _ExportRedactsKeys(_Answers):
    """The export redacts what looks like an API key in the user's text."""

    def answer(self, handle: str, method: str, answer: Any) -> Any:
        if method == "host.loadSession":
            for row in _rows(answer):
                for part in row.get("content") or ():
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        part["text"] = _SECRET.sub("[redacted]", part["text"])
        return answer


def _break(
    name: str, rule: str, clauses: tuple[str, ...], variant: type[WireVariant]
) -> BrokenImplementation:
    return BrokenImplementation(name, rule, clauses, implementation=variant)


WIRE_BREAKS_2: tuple[BrokenImplementation, ...] = (
    _break(
        "reseat-keeps-the-model",
        "a reseat resumes on the model the session was created with",
        ("AS-SESS-003",),
        _ReseatKeepsTheModel,
    ),
    _break(
        "reseat-keeps-the-chain",
        "a reseat keeps the old model's fallback chain",
        ("AS-SESS-004",),
        _ReseatKeepsTheChain,
    ),
    _break(
        "busy-after-command",
        "after a user command the session stays busy for the next send",
        ("AS-LIFE-033",),
        _BusyAfterCommand,
    ),
    _break(
        "usage-of-the-last-request",
        "a turn's tokensUsed is its last provider call's usage, not the sum",
        ("AS-CAP-014",),
        _UsageOfTheLastRequest,
    ),
    _break(
        "failed-commit-loses-usage",
        "a turn whose commit failed reports zero usage",
        ("AS-CAP-017",),
        _FailedCommitLosesUsage,
    ),
    _break(
        "error-message-names-the-cause",
        "a failed turn's error message repeats the provider's own text",
        ("AS-CAP-020",),
        _ErrorMessageNamesTheCause,
    ),
    _break(
        "git-commit-ungoverned",
        "git_commit runs inside a session with no approval",
        ("AS-SEC-003",),
        _GitCommitUngoverned,
    ),
    _break(
        "tool-arguments-in-the-transcript",
        "the committed tool-call row keeps the call's arguments as text",
        ("AS-MSG-013",),
        _ToolArgumentsInTheTranscript,
    ),
    _break(
        "trimmed-without-kept-turns",
        "session:trimmed leaves out keptTurnCount",
        ("AS-MSG-030",),
        _TrimmedWithoutKeptTurns,
    ),
    _break(
        "unknown-part-fields-dropped",
        "resume drops unknown content fields instead of refusing the row",
        ("AS-VAL-001",),
        _UnknownPartFieldsDropped,
    ),
    _break(
        "compaction-on-any-row-ignored",
        "resume drops a compaction field from a non-system row instead of refusing it",
        ("AS-MSG-036",),
        _CompactionOnAnyRowIgnored,
    ),
    _break(
        "given-state-ignored",
        "resume ignores an invalid given state and reconstructs its own",
        ("AS-PROJ-021",),
        _GivenStateIgnored,
    ),
    _break(
        "export-leaves-out-the-last-turn",
        "the session's export leaves out its newest turn",
        ("AS-LIFE-043",),
        _ExportLeavesOutTheLastTurn,
    ),
    _break(
        "export-skips-superseded-turns",
        "the session's export leaves out turns behind a boundary marker",
        ("AS-MSG-029",),
        _ExportSkipsSupersededTurns,
    ),
    _break(
        "export-redacts-keys",
        "the session's export redacts key-like text in prompts",
        ("AS-EXP-007",),
        _ExportRedactsKeys,
    ),
)
