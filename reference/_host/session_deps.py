"""The session's dependencies and its plain results: ``SessionDeps``, ``TurnResult``, ``ExportResult``.

Split from :mod:`relavium_reference._host.session` so that module stays one concept (the session's
sequencing); everything here is re-exported there.
"""

from __future__ import annotations

import asyncio
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
from relavium_reference._model.events import EventSink, TokensUsed, TurnError
from relavium_reference._model.history_results import CompactionStartHook
from relavium_reference._model.invocation import ALWAYS_ADMIT, Admission, ModelInfo
from relavium_reference._model.shapes import WireModel
from relavium_reference._model.tools import ToolRegistry
from relavium_reference._model.usage_writer import ModelPrice
from relavium_reference._model.vocabulary import ProviderId, SessionStopReason
from relavium_reference._rules.compaction_measure import DEFAULT_COMPACT_THRESHOLD
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
    "resolve_max_turns",
    "write_whole",
]


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class SessionDeps:
    """Everything a session needs from its host. Copied at construction."""

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
