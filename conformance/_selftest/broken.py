"""Deliberately broken implementations: each breaks one named rule of the specification.

They prove that the kit's cases bite.  Each is the reference engine with one behaviour changed, served
through the same message set; :mod:`relavium_conformance._selftest.proofs` runs every case citing the broken
rule's clauses against it and reports whether at least one of them failed.  A broken implementation no
case catches is a hole in the corpus.

Most change the session (a subclass of ``AgentSession``); the ones the vector suites must catch change
one pure function instead: the engine's own, wrapped, with its input or its output damaged in one place.
"""

from __future__ import annotations

import asyncio
import io
import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import REFERENCE_PURE, PureFunctions, export_workflow
from relavium_conformance._selftest.base import BrokenImplementation, run_command_approved
from relavium_conformance._selftest.broken_auto_compaction import AUTO_COMPACTION_BREAKS
from relavium_conformance._selftest.broken_budget import BUDGET_BREAKS
from relavium_conformance._selftest.broken_budget2 import BUDGET_BREAKS_2
from relavium_conformance._selftest.broken_cases2 import CASE_BREAKS
from relavium_conformance._selftest.broken_compaction import COMPACTION_BREAKS
from relavium_conformance._selftest.broken_compaction2 import COMPACTION_BREAKS_2
from relavium_conformance._selftest.broken_compaction3 import COMPACTION_BREAKS_3
from relavium_conformance._selftest.broken_events import EVENT_BREAKS
from relavium_conformance._selftest.broken_history import HISTORY_BREAKS
from relavium_conformance._selftest.broken_http import HTTP_BREAKS
from relavium_conformance._selftest.broken_memory import MEMORY_BREAKS
from relavium_conformance._selftest.broken_overflow import OVERFLOW_BREAKS, PRESEND_BREAKS, RECOVERY_BREAKS
from relavium_conformance._selftest.broken_ownership import OWNERSHIP_BREAKS
from relavium_conformance._selftest.broken_pure import PURE_BREAKS
from relavium_conformance._selftest.broken_pure2 import PURE_BREAKS_2
from relavium_conformance._selftest.broken_rules2 import SESSION_BREAKS
from relavium_conformance._selftest.broken_sessions import SIDE_BY_SIDE_BREAKS
from relavium_conformance._selftest.broken_store import STORE_BREAKS
from relavium_conformance._selftest.broken_wire import WIRE_BREAKS
from relavium_conformance._selftest.broken_wire2 import WIRE_BREAKS_2
from relavium_reference import (
    AgentSession,
    SessionInput,
    SessionStopReason,
    TurnPolicy,
    TurnResult,
)
from relavium_reference._host.turn import TurnEnd, TurnProgress, TurnSetup
from relavium_reference._model.commands import CommandAllowlist
from relavium_reference._model.events import SessionStarted, SessionTurnCompleted, TokensUsed
from relavium_reference._model.messages import UNKNOWN_TOOL, AgentSessionRecord, SessionMessage
from relavium_reference._model.records import is_terminal_row
from relavium_reference._rules.export_mapping import completed_export_turns, neutralise_interpolation
from relavium_reference._rules.projection import Exchange, HistoryMessage
from relavium_reference._rules.resume import ResumeMessage, SessionResumeState, reconstruct_session_state
from relavium_reference._rules.workflow_yaml import _yaml, dump_yaml

__all__ = ["BROKEN_IMPLEMENTATIONS", "BrokenImplementation", "broken_by_name"]


class _NoHardCap(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_turns = 10**9


class _UnengagedTurnsUseSlot(AgentSession):
    def _count_turn(self, progress: TurnProgress) -> None:
        self._turns_used += 1


class _AbortKeepsTheUser(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        if result.status == "aborted":
            self._exchanges.append(Exchange(user=text, assistant=""))
        return result


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


class _LateAbortDiscards(AgentSession):
    def abort(self) -> None:
        if self._progress is not None:
            self._progress.resolved = False
        super().abort()


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


class _PolicyAppliesMidTurn(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        session = self

        async def live_confirm(request: Any) -> bool:
            return await session._policy.approves(request)

        live = TurnPolicy(advertise=policy.advertise, confirm=live_confirm)
        return super()._turn_setup(text, live)


class _SwallowsObserverFailure(AgentSession):
    """Turns a failing host sink into an ordinary failed turn: the raw error never reaches the caller."""

    async def send_message(self, text: str) -> TurnResult:
        try:
            return await super().send_message(text)
        except Exception:
            return TurnResult(status="failed", tokens_used=TokensUsed(input=0, output=0))


class _GappySequence(AgentSession):
    async def send_message(self, text: str) -> TurnResult:
        result = await super().send_message(text)
        self._stamper._next += 1  # skip a number after every turn
        return result


class _ContextNotEchoed(AgentSession):
    async def start(self) -> None:
        self._enter(SessionInput.START)
        context = self._context.model_copy(update={"variables": None})
        await self._stamper.emit(
            SessionStarted, agent_ref=self.agent_ref, model=self._agent.model, context=context
        )


class _NoToolRoundGuard(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return TurnSetup(**{**setup.__dict__, "max_tool_turns": 10**6})


class _CommandRunsWhenDenied(AgentSession):
    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        return await run_command_approved(self, command, args)


class _AllowlistIgnored(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._allowlist = CommandAllowlist(globs=("*",))


class _CommandThroughShell(AgentSession):
    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        if not self._allowlist.allows(command):
            return await super().run_user_command(command, args)
        kept = self._allowlist
        self._allowlist = CommandAllowlist(names=("sh",))
        try:
            return await super().run_user_command("sh", ["-c", " ".join([command, *args])])
        finally:
            self._allowlist = kept


# --- broken pure functions -----------------------------------------------------------------------------

Document = dict[str, Any]


def _by_sequence(messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    return sorted(messages, key=lambda message: message.sequence_number)


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in sorted(value, reverse=True)}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


def _export_unsorted_keys(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    stream = io.StringIO()
    _yaml().dump(_reversed_keys(document), stream)  # the engine's writer keeps the order it is given
    return document, stream.getvalue()


def _interrupted_users(messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    """The user rows of exchanges that have tool structure but never reached a terminal row."""
    found: list[SessionMessage] = []
    open_user: SessionMessage | None = None
    structured = False
    for row in _by_sequence([m for m in messages if m.role != "system"]):
        if row.role == "user":
            if open_user is not None and structured:
                found.append(open_user)
            open_user, structured = row, False
        elif is_terminal_row(row.role, row.content):
            open_user, structured = None, False
        elif open_user is not None:
            structured = True
    if open_user is not None and structured:
        found.append(open_user)
    return found


def _export_interrupted_as_node(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    workflow = document["workflow"]
    nodes = workflow["nodes"]
    extra = [
        {
            "type": "agent",
            "agent_ref": record.agent_slug,
            "prompt_template": neutralise_interpolation(row.text),
        }
        for row in _interrupted_users(messages)
    ]
    agents = [{**node, "id": f"turn-{index}"} for index, node in enumerate([*nodes[1:-1], *extra], 1)]
    chain = [nodes[0], *agents, nodes[-1]]
    workflow["nodes"] = chain
    workflow["edges"] = [{"from": a["id"], "to": b["id"]} for a, b in itertools.pairwise(chain)]
    return document, dump_yaml(document)


def _export_grants_unknown_tool(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    ordered = _by_sequence(messages)
    agents = document["workflow"]["nodes"][1:-1]
    for node, turn in zip(agents, completed_export_turns(ordered), strict=True):
        inside = [m for m in ordered if turn.user_sequence < m.sequence_number < turn.terminal_sequence]
        if any(call.name == UNKNOWN_TOOL for row in inside for call in row.tool_calls):
            node["tools"] = [*node.get("tools", []), UNKNOWN_TOOL]
    return document, dump_yaml(document)


def _export_drops_empty_finals(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    kept = [m for m in messages if not (is_terminal_row(m.role, m.content) and not m.text)]
    return export_workflow(record, kept)


def _export_leaks_tool_arguments(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> tuple[Document, str]:
    document, _text = export_workflow(record, messages)
    for message in document["workflow"]["metadata"]["relaviumExport"]["messages"]:
        for part in message["content"]:
            if part.get("type") == "tool_call":
                part["arguments"] = {"path": "notes/private.txt"}
    return document, dump_yaml(document)


def _reconstruct_counts_legacy_users(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    state = reconstruct_session_state(record, messages)
    legacy = len(state.turn_boundary_sequences) - len(state.completed_turn_spans)
    return state.model_copy(update={"turn_count": state.turn_count + legacy})


def _reconstruct_keeps_final_bare_user(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    state = reconstruct_session_state(record, messages)
    rows = _by_sequence([m for m in messages if m.role != "system"])
    if not rows or rows[-1].role != "user":
        return state
    last = rows[-1]
    return state.model_copy(
        update={
            "messages": (*state.messages, ResumeMessage(role="user", text=last.text)),
            "message_sequences": (*state.message_sequences, last.sequence_number),
            "turn_boundary_sequences": (*state.turn_boundary_sequences, last.sequence_number),
        }
    )


def _reconstruct_ignores_markers(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    return reconstruct_session_state(record, [m.model_copy(update={"compaction": None}) for m in messages])


def _pure(**functions: Any) -> PureFunctions:
    return replace(REFERENCE_PURE, **functions)


BROKEN_IMPLEMENTATIONS: tuple[BrokenImplementation, ...] = (
    BrokenImplementation(
        "no-hard-cap", "a send past the hard cap still runs", ("AS-CAP-004", "AS-CAP-005"), _NoHardCap
    ),
    BrokenImplementation(
        "unengaged-turns-use-slot",
        "a turn refused before any provider invocation still uses a cap slot",
        ("AS-CAP-009", "AS-CAP-012"),
        _UnengagedTurnsUseSlot,
    ),
    BrokenImplementation(
        "aborted-turn-kept",
        "an aborted turn's user message stays in the transcript",
        ("AS-LIFE-018",),
        _AbortKeepsTheUser,
    ),
    BrokenImplementation(
        "turn-completed-after-cancel",
        "a cancelled turn still publishes session:turn_completed",
        ("AS-LIFE-021", "AS-LIFE-023"),
        _TurnCompletedAfterCancel,
    ),
    BrokenImplementation(
        "late-abort-discards-reply",
        "an abort after the turn resolved discards the reply",
        ("AS-LIFE-022",),
        _LateAbortDiscards,
    ),
    BrokenImplementation(
        "idle-abort-emits",
        "an abort with no turn in flight emits a terminal",
        ("AS-LIFE-020",),
        _AbortWhenIdleEmits,
    ),
    BrokenImplementation(
        "tool-pairs-leak",
        "a tool round's results reach the next turn's request",
        ("AS-LIFE-010", "AS-MSG-009"),
        _ToolPairsLeak,
    ),
    BrokenImplementation(
        "policy-applies-mid-turn",
        "a policy change during a turn takes effect in that same turn",
        ("AS-LIFE-012",),
        _PolicyAppliesMidTurn,
    ),
    BrokenImplementation(
        "gappy-sequence", "sequence numbers skip a value after each turn", ("AS-EVT-002",), _GappySequence
    ),
    BrokenImplementation(
        "context-variables-dropped",
        "session:started does not echo context.variables",
        ("AS-SEC-007",),
        _ContextNotEchoed,
    ),
    BrokenImplementation(
        "no-tool-round-guard",
        "the within-turn tool-round guard never fires",
        ("AS-CAP-006",),
        _NoToolRoundGuard,
    ),
    BrokenImplementation(
        "denied-command-runs",
        "a user command runs although its approval was refused",
        ("AS-LIFE-030",),
        _CommandRunsWhenDenied,
    ),
    BrokenImplementation(
        "allowlist-ignored",
        "a user command off the allowlist still reaches approval",
        ("AS-LIFE-026", "AS-SEC-002"),
        _AllowlistIgnored,
    ),
    BrokenImplementation(
        "command-through-shell",
        "a user command line is run through a shell",
        ("AS-LIFE-027", "AS-LIFE-028"),
        _CommandThroughShell,
    ),
    BrokenImplementation(
        "export-yaml-keys-unsorted",
        "the exported YAML writes mapping keys in reverse order instead of sorted",
        ("AS-EXP-046",),
        pure=_pure(export_workflow=_export_unsorted_keys),
    ),
    BrokenImplementation(
        "export-interrupted-turn-is-a-node",
        "an exchange interrupted after its tool rows becomes an agent node",
        ("AS-EXP-024",),
        pure=_pure(export_workflow=_export_interrupted_as_node),
    ),
    BrokenImplementation(
        "export-grants-unknown-tool",
        "a turn that called the unknown_tool marker is granted unknown_tool",
        ("AS-EXP-028",),
        pure=_pure(export_workflow=_export_grants_unknown_tool),
    ),
    BrokenImplementation(
        "export-drops-empty-final-turn",
        "a turn whose terminal text is empty is not exported as a node",
        ("AS-EXP-003",),
        pure=_pure(export_workflow=_export_drops_empty_finals),
    ),
    BrokenImplementation(
        "export-leaks-tool-arguments",
        "tool-call parts in the export metadata carry the call's arguments",
        ("AS-EXP-006", "AS-EXP-048"),
        pure=_pure(export_workflow=_export_leaks_tool_arguments),
    ),
    BrokenImplementation(
        "reconstruct-counts-legacy-bare-user",
        "a legacy bare user row counts as a turn towards the reconstructed turn counter",
        ("AS-LEG-006",),
        pure=_pure(reconstruct_session_state=_reconstruct_counts_legacy_users),
    ),
    BrokenImplementation(
        "reconstruct-keeps-final-bare-user",
        "a final user row with no terminal stays in the resumed messages instead of rolling back",
        ("AS-LEG-007",),
        pure=_pure(reconstruct_session_state=_reconstruct_keeps_final_bare_user),
    ),
    BrokenImplementation(
        "reconstruct-ignores-boundary-markers",
        "droppedThroughSequence markers are ignored: no boundary, no preamble",
        ("AS-MSG-027",),
        pure=_pure(reconstruct_session_state=_reconstruct_ignores_markers),
    ),
    BrokenImplementation(
        "swallows-observer-failure",
        "a failing host sink ends the turn quietly; its raw error never reaches the caller",
        ("AS-CAP-015",),
        _SwallowsObserverFailure,
    ),
    *HISTORY_BREAKS,
    *BUDGET_BREAKS,
    *BUDGET_BREAKS_2,
    *MEMORY_BREAKS,
    *COMPACTION_BREAKS,
    *AUTO_COMPACTION_BREAKS,
    *COMPACTION_BREAKS_2,
    *COMPACTION_BREAKS_3,
    *STORE_BREAKS,
    *EVENT_BREAKS,
    *PURE_BREAKS,
    *WIRE_BREAKS,
    *HTTP_BREAKS,
    *OVERFLOW_BREAKS,
    *RECOVERY_BREAKS,
    *PRESEND_BREAKS,
    *SESSION_BREAKS,
    *SIDE_BY_SIDE_BREAKS,
    *OWNERSHIP_BREAKS,
    *WIRE_BREAKS_2,
    *PURE_BREAKS_2,
    *CASE_BREAKS,
)


def broken_by_name(name: str) -> BrokenImplementation:
    for broken in BROKEN_IMPLEMENTATIONS:
        if broken.name == name:
            return broken
    raise KeyError(name)
