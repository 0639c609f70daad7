"""The session's dependencies and its plain results: ``SessionDeps``, ``TurnResult``, ``ExportResult``.

Split from :mod:`relavium_reference._host.session` so that module stays one concept (the session's
sequencing); everything here is re-exported there.
"""

from __future__ import annotations

import asyncio
import math
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.attempt_deadline import DEFAULT_ATTEMPT_DEADLINE, AttemptDeadline
from relavium_reference._host.persister import TurnPersister
from relavium_reference._host.stamper import Clock, SystemClock
from relavium_reference._host.turn import ProviderResolver
from relavium_reference._model.commands import DEFAULT_OUTPUT_LIMIT
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.events import EventSink, TokensUsed, TurnError
from relavium_reference._model.history_results import CompactionStartHook
from relavium_reference._model.invocation import ALWAYS_ADMIT, Admission, ModelInfo
from relavium_reference._model.shapes import AgentSnapshot, SessionContext, WireModel
from relavium_reference._model.tools import ToolRegistry
from relavium_reference._model.usage_writer import ModelPrice
from relavium_reference._model.vocabulary import ProviderId, SessionStopReason
from relavium_reference._rules.compaction_measure import DEFAULT_COMPACT_THRESHOLD
from relavium_reference._rules.store_text import store_text_problem
from relavium_reference._rules.turn_cap import (
    DEFAULT_MAX_TOOL_TURNS,
    DEFAULT_SESSION_MAX_TURNS,
    resolve_max_turns,
)

__all__ = [
    "DEFAULT_SESSION_MAX_TURNS",
    "ExportResult",
    "SessionDeps",
    "TurnResult",
    "check_session_arguments",
    "check_session_deps",
    "checked_session_id",
    "resolve_max_turns",
    "write_whole",
]


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class SessionDeps:
    """Everything a session needs from its host. Copied at construction.

    ``AgentSession`` checks every field's type when it is constructed (:func:`check_session_deps`): a
    value of the wrong type, or a count out of range, is refused there with ``InvalidInputError`` naming
    the field, never later from deep inside a turn."""

    resolve_provider: ProviderResolver
    emit: EventSink
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    clock: Clock = field(default_factory=SystemClock)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    max_turns: int | None = None
    max_tool_turns: int = DEFAULT_MAX_TOOL_TURNS
    allowed_commands: tuple[str, ...] = ()
    allowed_command_globs: tuple[str, ...] = ()
    command_output_limit: int = DEFAULT_OUTPUT_LIMIT
    new_id: Callable[[], str] = _new_id
    persister: TurnPersister | None = None
    # -- compaction and admission (the seams of measured compaction and of the budget) --
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    """Model metadata by model name; a model not listed has an unknown window."""
    admission: Admission = ALWAYS_ADMIT
    """Asked before every provider attempt and every summary pass (default: admit all)."""
    compact_threshold: float = DEFAULT_COMPACT_THRESHOLD
    after_turn_compaction: bool = True
    max_tokens_estimate: int | None = None  # estimate-only output fallback, copied at construction
    usage_writer: UsageWriter | None = None
    """The host's usage writer (KD-USE-1).  Absent, a persister that keeps usage (``SqlitePersister``)
    supplies one over its own store for the session; an explicit writer always wins."""
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    """The host's prices by model name, for the writer its persister supplies (absent: unpriced)."""
    max_messages: int | None = None
    """The configured deterministic trim an ordinary after-turn compaction failure falls back to."""
    on_compaction_start: CompactionStartHook | None = None
    """The unknown-window acknowledgement (KD-COMP-4); without it such a manual compaction fails."""
    prepare_provider: Callable[[ProviderId, str], Awaitable[None]] | None = None
    """The host's asynchronous part of resolving a provider (e.g. fetching its credential), awaited by a
    compaction's cold planning before ``resolve_provider`` for each plan entry (KD-COMP-10); raising makes
    that entry unattemptable."""
    attempt_deadline: AttemptDeadline = DEFAULT_ATTEMPT_DEADLINE
    """How long one provider attempt may wait for a chunk and last in all (``_host/attempt_deadline.py``):
    past either, the attempt ends as a ``timeout`` provider error."""


def _refuse(location: str, wanted: str) -> InvalidInputError:
    return InvalidInputError(f"{location} must be {wanted}", location=location)


def _count(value: object, location: str, *, optional: bool = False, minimum: int = 0) -> None:
    if value is None and optional:
        return
    if type(value) is not int or value < minimum:  # bool is an int subclass, never a count
        raise _refuse(location, f"an integer of at least {minimum}" + (" or None" if optional else ""))


def _names(value: object, location: str) -> None:
    if not isinstance(value, tuple | list) or not all(isinstance(name, str) for name in value):
        raise _refuse(location, "a tuple of strings")


def _mapping(value: object, location: str, kind: type) -> None:
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, kind) for key, item in value.items()
    ):
        raise _refuse(location, f"a mapping of model names to {kind.__name__}")


def _callable(value: object, location: str, *, optional: bool = False) -> None:
    if not (callable(value) or (optional and value is None)):
        raise _refuse(location, "callable" + (" or None" if optional else ""))


def _port(value: object, location: str, methods: tuple[str, ...], *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not all(callable(getattr(value, name, None)) for name in methods):
        raise _refuse(location, "an object with " + ", ".join(methods) + (" (or None)" if optional else ""))


def check_session_deps(deps: object) -> SessionDeps:
    """``deps`` when every field has the type its annotation names (and counts are not negative); else
    :class:`InvalidInputError` naming the first field (camelCase) that is wrong.  Ports are checked for
    their methods, not their class, so any host object that has them passes."""
    if not isinstance(deps, SessionDeps):
        raise _refuse("deps", "a SessionDeps")
    _callable(deps.resolve_provider, "resolveProvider")
    _callable(deps.emit, "emit")
    if not isinstance(deps.tools, ToolRegistry):
        raise _refuse("tools", "a ToolRegistry")
    _port(deps.clock, "clock", ("now",))
    _callable(deps.sleep, "sleep")
    _count(deps.max_turns, "maxTurns", optional=True)
    _count(deps.max_tool_turns, "maxToolTurns")
    _names(deps.allowed_commands, "allowedCommands")
    _names(deps.allowed_command_globs, "allowedCommandGlobs")
    _count(deps.command_output_limit, "commandOutputLimit")
    _callable(deps.new_id, "newId")
    _port(deps.persister, "persister", ("create_session", "commit_turn", "record_cost"), optional=True)
    _mapping(deps.models, "models", ModelInfo)
    for info in deps.models.values():
        if info.context_window is not None and type(info.context_window) is not int:
            raise _refuse("models.contextWindow", "an integer or None")
        if not isinstance(info.self_managed, bool):
            raise _refuse("models.selfManaged", "a bool")
    _port(deps.admission, "admission", ("admit", "release"))
    threshold = deps.compact_threshold
    if type(threshold) not in (int, float) or not math.isfinite(threshold) or threshold < 0:
        raise _refuse("compactThreshold", "a finite number of at least 0")
    if not isinstance(deps.after_turn_compaction, bool):
        raise _refuse("afterTurnCompaction", "a bool")
    _count(deps.max_tokens_estimate, "maxTokensEstimate", optional=True)
    _port(deps.usage_writer, "usageWriter", ("open", "pending", "resolved"), optional=True)
    _mapping(deps.prices, "prices", ModelPrice)
    for price in deps.prices.values():
        _count(price.input_microcents, "prices.inputMicrocents")
        _count(price.output_microcents, "prices.outputMicrocents")
    _count(deps.max_messages, "maxMessages", optional=True)
    _callable(deps.on_compaction_start, "onCompactionStart", optional=True)
    _callable(deps.prepare_provider, "prepareProvider", optional=True)
    if not isinstance(deps.attempt_deadline, AttemptDeadline):
        raise _refuse("attemptDeadline", "an AttemptDeadline")
    return deps


def check_session_arguments(agent: object, context: object, session_id: object, agent_ref: object) -> None:
    """The other arguments of ``AgentSession``: :class:`InvalidInputError` for a value of the wrong type."""
    if not isinstance(agent, AgentSnapshot):
        raise _refuse("agent", "an AgentSnapshot")
    if not isinstance(context, SessionContext):
        raise _refuse("context", "a SessionContext")
    if session_id is not None:
        checked_session_id(session_id, "sessionId")
    if agent_ref is not None and not isinstance(agent_ref, str):
        raise _refuse("agentRef", "a string or None")


def checked_session_id(value: object, location: str) -> str:
    """A session id given by the host (or answered by its ``new_id``): a string a store can keep."""
    problem = store_text_problem(value)
    if problem is not None:
        raise InvalidInputError(f"{location} {problem}", location=location)
    assert isinstance(value, str)
    return value


class ExportResult(WireModel):
    workflow_id: str
    workflow_path: str


def write_whole(path: str, text: str) -> None:
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, target)


class TurnResult(WireModel):
    """What ``send_message`` returns (KD-LIFE-2)."""

    status: Literal["completed", "aborted", "failed", "cancelled"]
    stop_reason: SessionStopReason | None = None
    text: str | None = None
    tokens_used: TokensUsed
    error: TurnError | None = None
