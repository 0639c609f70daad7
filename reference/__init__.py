"""relavium_reference: the reference engine of the Relavium Agent Session Specification.

Every public name is imported on first use (see :func:`__getattr__`): a process that needs one corner of
the engine (the kit's exception root, the strict workflow reader, a stdio run that never drives the engine
in-process) does not import the rest.
"""

from __future__ import annotations

import importlib
import typing as _typing
import warnings as _warnings
from typing import Any as _Any

if _typing.TYPE_CHECKING:  # the names below are imported on first use (see __getattr__)
    from relavium_reference._host.history_store import HistoryStore, StoreError
    from relavium_reference._host.history_usage import SqliteUsageWriter
    from relavium_reference._host.persister import SqlitePersister, TurnPersister
    from relavium_reference._host.scripted import ProviderScript, ScriptedProvider, load_script
    from relavium_reference._host.session import (
        DEFAULT_SESSION_MAX_TURNS,
        AgentSession,
        SessionDeps,
        TurnResult,
    )
    from relavium_reference._host.stamper import Clock, SystemClock
    from relavium_reference._host.turn import DEFAULT_MAX_TOOL_TURNS
    from relavium_reference._model.commands import (
        CommandAllowlist,
        CommandCancelled,
        CommandDenied,
        CommandFailed,
        CommandRan,
        UserCommandOutcome,
    )
    from relavium_reference._model.errors import (
        DependencyError,
        InvalidInputError,
        PersistError,
        RelaviumError,
        ScriptError,
        SessionStateCode,
        SessionStateError,
    )
    from relavium_reference._model.events import (
        SESSION_EVENT_TYPES,
        AgentApprovalRequested,
        AgentReasoning,
        AgentToken,
        AgentToolCall,
        AgentToolResult,
        CostUpdated,
        EventSink,
        SessionCancelled,
        SessionEvent,
        SessionExported,
        SessionStarted,
        SessionTurnCompleted,
        SessionTurnStarted,
        TokensUsed,
        ToolHistoryEntry,
        TurnError,
    )
    from relavium_reference._model.llm import (
        LlmError,
        LlmMessage,
        LlmProvider,
        LlmRequest,
        LlmTextPart,
        LlmToolCallPart,
        LlmToolResultPart,
        StreamChunk,
        ToolDef,
        Usage,
    )
    from relavium_reference._model.messages import (
        AgentSessionRecord,
        SessionMessage,
        parse_agent_session_record,
        parse_session_message,
    )
    from relavium_reference._model.records import CompletedTurn, CostEntry, MessageDraft
    from relavium_reference._model.shapes import AgentSnapshot, FallbackEntry, SessionContext, parse_strict
    from relavium_reference._model.strict_schema import strict_clean
    from relavium_reference._model.tools import (
        UNKNOWN_TOOL,
        ApprovalRequest,
        FunctionTool,
        Tool,
        ToolCallInfo,
        ToolOutput,
        ToolRegistry,
        TurnPolicy,
    )
    from relavium_reference._model.usage_writer import ModelPrice
    from relavium_reference._model.vocabulary import (
        ErrorCode,
        FsScopeTier,
        LlmErrorKind,
        ProviderId,
        SessionStopReason,
        StopReason,
    )
    from relavium_reference._rules.lifecycle import SessionInput, SessionState
    from relavium_reference._rules.projection import Exchange
    from relavium_reference._rules.resume import (
        SessionResumeState,
        TurnSpan,
        reconstruct_session_state,
        resume_state_problem,
    )

    SessionStore = HistoryStore  # deprecated alias (see _DEPRECATED)

_LAZY: dict[str, tuple[str, str]] = {
    "SqlitePersister": ("relavium_reference._host.persister", "SqlitePersister"),
    "TurnPersister": ("relavium_reference._host.persister", "TurnPersister"),
    "ProviderScript": ("relavium_reference._host.scripted", "ProviderScript"),
    "ScriptedProvider": ("relavium_reference._host.scripted", "ScriptedProvider"),
    "load_script": ("relavium_reference._host.scripted", "load_script"),
    "DEFAULT_SESSION_MAX_TURNS": ("relavium_reference._host.session", "DEFAULT_SESSION_MAX_TURNS"),
    "AgentSession": ("relavium_reference._host.session", "AgentSession"),
    "SessionDeps": ("relavium_reference._host.session", "SessionDeps"),
    "TurnResult": ("relavium_reference._host.session", "TurnResult"),
    "Clock": ("relavium_reference._host.stamper", "Clock"),
    "SystemClock": ("relavium_reference._host.stamper", "SystemClock"),
    "HistoryStore": ("relavium_reference._host.history_store", "HistoryStore"),
    "StoreError": ("relavium_reference._host.history_store", "StoreError"),
    "SqliteUsageWriter": ("relavium_reference._host.history_usage", "SqliteUsageWriter"),
    "DEFAULT_MAX_TOOL_TURNS": ("relavium_reference._host.turn", "DEFAULT_MAX_TOOL_TURNS"),
    "ModelPrice": ("relavium_reference._model.usage_writer", "ModelPrice"),
    "CommandAllowlist": ("relavium_reference._model.commands", "CommandAllowlist"),
    "CommandCancelled": ("relavium_reference._model.commands", "CommandCancelled"),
    "CommandDenied": ("relavium_reference._model.commands", "CommandDenied"),
    "CommandFailed": ("relavium_reference._model.commands", "CommandFailed"),
    "CommandRan": ("relavium_reference._model.commands", "CommandRan"),
    "UserCommandOutcome": ("relavium_reference._model.commands", "UserCommandOutcome"),
    "DependencyError": ("relavium_reference._model.errors", "DependencyError"),
    "InvalidInputError": ("relavium_reference._model.errors", "InvalidInputError"),
    "PersistError": ("relavium_reference._model.errors", "PersistError"),
    "RelaviumError": ("relavium_reference._model.errors", "RelaviumError"),
    "ScriptError": ("relavium_reference._model.errors", "ScriptError"),
    "SessionStateCode": ("relavium_reference._model.errors", "SessionStateCode"),
    "SessionStateError": ("relavium_reference._model.errors", "SessionStateError"),
    "SESSION_EVENT_TYPES": ("relavium_reference._model.events", "SESSION_EVENT_TYPES"),
    "AgentApprovalRequested": ("relavium_reference._model.events", "AgentApprovalRequested"),
    "AgentReasoning": ("relavium_reference._model.events", "AgentReasoning"),
    "AgentToken": ("relavium_reference._model.events", "AgentToken"),
    "AgentToolCall": ("relavium_reference._model.events", "AgentToolCall"),
    "AgentToolResult": ("relavium_reference._model.events", "AgentToolResult"),
    "CostUpdated": ("relavium_reference._model.events", "CostUpdated"),
    "EventSink": ("relavium_reference._model.events", "EventSink"),
    "SessionCancelled": ("relavium_reference._model.events", "SessionCancelled"),
    "SessionEvent": ("relavium_reference._model.events", "SessionEvent"),
    "SessionExported": ("relavium_reference._model.events", "SessionExported"),
    "SessionStarted": ("relavium_reference._model.events", "SessionStarted"),
    "SessionTurnCompleted": ("relavium_reference._model.events", "SessionTurnCompleted"),
    "SessionTurnStarted": ("relavium_reference._model.events", "SessionTurnStarted"),
    "TokensUsed": ("relavium_reference._model.events", "TokensUsed"),
    "ToolHistoryEntry": ("relavium_reference._model.events", "ToolHistoryEntry"),
    "TurnError": ("relavium_reference._model.events", "TurnError"),
    "LlmError": ("relavium_reference._model.llm", "LlmError"),
    "LlmMessage": ("relavium_reference._model.llm", "LlmMessage"),
    "LlmProvider": ("relavium_reference._model.llm", "LlmProvider"),
    "LlmRequest": ("relavium_reference._model.llm", "LlmRequest"),
    "LlmTextPart": ("relavium_reference._model.llm", "LlmTextPart"),
    "LlmToolCallPart": ("relavium_reference._model.llm", "LlmToolCallPart"),
    "LlmToolResultPart": ("relavium_reference._model.llm", "LlmToolResultPart"),
    "StreamChunk": ("relavium_reference._model.llm", "StreamChunk"),
    "ToolDef": ("relavium_reference._model.llm", "ToolDef"),
    "Usage": ("relavium_reference._model.llm", "Usage"),
    "AgentSessionRecord": ("relavium_reference._model.messages", "AgentSessionRecord"),
    "SessionMessage": ("relavium_reference._model.messages", "SessionMessage"),
    "parse_agent_session_record": ("relavium_reference._model.messages", "parse_agent_session_record"),
    "parse_session_message": ("relavium_reference._model.messages", "parse_session_message"),
    "CompletedTurn": ("relavium_reference._model.records", "CompletedTurn"),
    "CostEntry": ("relavium_reference._model.records", "CostEntry"),
    "MessageDraft": ("relavium_reference._model.records", "MessageDraft"),
    "AgentSnapshot": ("relavium_reference._model.shapes", "AgentSnapshot"),
    "FallbackEntry": ("relavium_reference._model.shapes", "FallbackEntry"),
    "SessionContext": ("relavium_reference._model.shapes", "SessionContext"),
    "parse_strict": ("relavium_reference._model.shapes", "parse_strict"),
    "strict_clean": ("relavium_reference._model.strict_schema", "strict_clean"),
    "UNKNOWN_TOOL": ("relavium_reference._model.tools", "UNKNOWN_TOOL"),
    "ApprovalRequest": ("relavium_reference._model.tools", "ApprovalRequest"),
    "FunctionTool": ("relavium_reference._model.tools", "FunctionTool"),
    "Tool": ("relavium_reference._model.tools", "Tool"),
    "ToolCallInfo": ("relavium_reference._model.tools", "ToolCallInfo"),
    "ToolOutput": ("relavium_reference._model.tools", "ToolOutput"),
    "ToolRegistry": ("relavium_reference._model.tools", "ToolRegistry"),
    "TurnPolicy": ("relavium_reference._model.tools", "TurnPolicy"),
    "ErrorCode": ("relavium_reference._model.vocabulary", "ErrorCode"),
    "FsScopeTier": ("relavium_reference._model.vocabulary", "FsScopeTier"),
    "LlmErrorKind": ("relavium_reference._model.vocabulary", "LlmErrorKind"),
    "ProviderId": ("relavium_reference._model.vocabulary", "ProviderId"),
    "SessionStopReason": ("relavium_reference._model.vocabulary", "SessionStopReason"),
    "StopReason": ("relavium_reference._model.vocabulary", "StopReason"),
    "SessionInput": ("relavium_reference._rules.lifecycle", "SessionInput"),
    "SessionState": ("relavium_reference._rules.lifecycle", "SessionState"),
    "Exchange": ("relavium_reference._rules.projection", "Exchange"),
    "SessionResumeState": ("relavium_reference._rules.resume", "SessionResumeState"),
    "TurnSpan": ("relavium_reference._rules.resume", "TurnSpan"),
    "reconstruct_session_state": ("relavium_reference._rules.resume", "reconstruct_session_state"),
    "resume_state_problem": ("relavium_reference._rules.resume", "resume_state_problem"),
}

# Old public names kept for one release: reading one warns (DeprecationWarning) and answers the new name's
# value.  ``SessionStore`` was the durable ``history.db`` store, renamed so that "session store" means only
# the session-store contract's stores.
_DEPRECATED: dict[str, str] = {"SessionStore": "HistoryStore"}


# Type checkers read the imports above instead: a module-level __getattr__ would let them accept any
# name, a misspelt one included.  (mypy knows the condition by the name TYPE_CHECKING: an alias of
# that name would hide it.)
if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> _Any:
        """Import a public name on first use and keep it (later lookups are plain attribute reads)."""
        if name in _DEPRECATED:
            new_name = _DEPRECATED[name]
            _warnings.warn(
                f"relavium_reference.{name} is deprecated: use relavium_reference.{new_name}",
                DeprecationWarning,
                stacklevel=2,
            )
            return __getattr__(new_name)
        try:
            module, attribute = _LAZY[name]
        except KeyError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__all__ = [
    "DEFAULT_MAX_TOOL_TURNS",
    "DEFAULT_SESSION_MAX_TURNS",
    "SESSION_EVENT_TYPES",
    "UNKNOWN_TOOL",
    "AgentApprovalRequested",
    "AgentReasoning",
    "AgentSession",
    "AgentSessionRecord",
    "AgentSnapshot",
    "AgentToken",
    "AgentToolCall",
    "AgentToolResult",
    "ApprovalRequest",
    "Clock",
    "CommandAllowlist",
    "CommandCancelled",
    "CommandDenied",
    "CommandFailed",
    "CommandRan",
    "CompletedTurn",
    "CostEntry",
    "CostUpdated",
    "DependencyError",
    "ErrorCode",
    "EventSink",
    "Exchange",
    "FallbackEntry",
    "FsScopeTier",
    "FunctionTool",
    "HistoryStore",
    "InvalidInputError",
    "LlmError",
    "LlmErrorKind",
    "LlmMessage",
    "LlmProvider",
    "LlmRequest",
    "LlmTextPart",
    "LlmToolCallPart",
    "LlmToolResultPart",
    "MessageDraft",
    "ModelPrice",
    "PersistError",
    "ProviderId",
    "ProviderScript",
    "RelaviumError",
    "ScriptError",
    "ScriptedProvider",
    "SessionCancelled",
    "SessionContext",
    "SessionDeps",
    "SessionEvent",
    "SessionExported",
    "SessionInput",
    "SessionMessage",
    "SessionResumeState",
    "SessionStarted",
    "SessionState",
    "SessionStateCode",
    "SessionStateError",
    "SessionStopReason",
    "SessionTurnCompleted",
    "SessionTurnStarted",
    "SqlitePersister",
    "SqliteUsageWriter",
    "StopReason",
    "StoreError",
    "StreamChunk",
    "SystemClock",
    "TokensUsed",
    "Tool",
    "ToolCallInfo",
    "ToolDef",
    "ToolHistoryEntry",
    "ToolOutput",
    "ToolRegistry",
    "TurnError",
    "TurnPersister",
    "TurnPolicy",
    "TurnResult",
    "TurnSpan",
    "Usage",
    "UserCommandOutcome",
    "load_script",
    "parse_agent_session_record",
    "parse_session_message",
    "parse_strict",
    "reconstruct_session_state",
    "resume_state_problem",
    "strict_clean",
]
