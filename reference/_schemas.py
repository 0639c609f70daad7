"""JSON Schemas (draft 2020-12) generated from the engine's boundary models.

``schemas/`` holds the committed copies; ``tests/test_schemas.py`` fails when a committed file and its
model drift apart.  ``relavium-conformance regen-schemas`` rewrites them (``--check`` only compares).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from relavium_reference._host.scripted import ProviderScript
from relavium_reference._host.session import TurnResult
from relavium_reference._model.commands import UserCommandOutcome
from relavium_reference._model.events import SessionEvent
from relavium_reference._model.llm import LlmRequest, StreamChunk
from relavium_reference._model.records import CompletedTurn, CostEntry
from relavium_reference._model.shapes import AgentSnapshot, SessionContext
from relavium_reference._model.strict_schema import strict_clean
from relavium_reference._model.vocabulary import ErrorCode, SessionStopReason
from relavium_reference._rules.resume import SessionResumeState

__all__ = ["SCHEMA_DIALECT", "engine_schemas", "render", "strict_clean"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_ID_BASE = "https://relavium.dev/conformance/schemas/"

_SOURCES: dict[str, tuple[Any, str]] = {
    "session-context.schema.json": (SessionContext, "The session context a session runs against."),
    "agent-snapshot.schema.json": (AgentSnapshot, "The frozen agent a session binds."),
    "session-event.schema.json": (SessionEvent, "One event of a session's stream, envelope included."),
    "error-code.schema.json": (
        ErrorCode,
        "The closed error-code enum (companion enum plus context_overflow).",
    ),
    "session-stop-reason.schema.json": (SessionStopReason, "The six session stop reasons."),
    "llm-request.schema.json": (LlmRequest, "A request as a provider receives it."),
    "stream-chunk.schema.json": (StreamChunk, "One chunk of a provider stream."),
    "provider-script.schema.json": (ProviderScript, "A ScriptedProvider script."),
    "turn-result.schema.json": (TurnResult, "What sendMessage returns."),
    "user-command-outcome.schema.json": (UserCommandOutcome, "What runUserCommand returns."),
    "session-resume-state.schema.json": (SessionResumeState, "What a resumed session starts from."),
    "cost-entry.schema.json": (CostEntry, "Money and tokens one model spent."),
    "completed-turn.schema.json": (CompletedTurn, "One completed exchange, committed all or nothing."),
}


def _message_schemas() -> dict[str, dict[str, Any]]:
    from relavium_reference._model.messages import json_schemas

    return json_schemas()


# Other modules contribute their own generated schemas here (name -> generator).
EXTRA_SOURCES: list[Callable[[], dict[str, dict[str, Any]]]] = [_message_schemas]


def _schema_for(name: str, source: Any, title: str) -> dict[str, Any]:
    schema = TypeAdapter(source).json_schema(by_alias=True)
    return {"$schema": SCHEMA_DIALECT, "$id": _ID_BASE + name, "description": title, **schema}


def engine_schemas() -> dict[str, dict[str, Any]]:
    """File name -> schema, for every boundary model of the engine."""
    out = {name: _schema_for(name, source, title) for name, (source, title) in _SOURCES.items()}
    for extra in EXTRA_SOURCES:
        out.update(extra())
    return out


def render(schema: dict[str, Any]) -> str:
    """The committed text of a generated schema: strict-clean (:func:`strict_clean`), sorted, indented."""
    return json.dumps(strict_clean(schema), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
