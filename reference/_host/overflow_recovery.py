"""The compaction of an overflow recovery: fold the older working transcript into the running summary.

:func:`recover_overflow` is the turn's ``recover`` port (:class:`~relavium_reference._host.turn.TurnSetup`):
it runs only when the turn's private recovery facts allow it (``_rules.overflow.may_recover``), once, and
answers what the turn does next:

* nothing older than the latest completed exchange → ``None`` (nothing to fold: the original overflow
  stands); no moment is opened, nothing egresses;
* the admission refuses the summary pass → :class:`RecoveryRefused` with its safe message (the turn
  settles ``budget_exceeded``); a refused first admission opens no moment;
* the summary pass fails or returns empty text → the moment closes with ``session:compaction_failed``
  and ``None``: nothing is installed, the original overflow stands; an abort of the turn during the pass
  closes it the same way before the turn ends as aborted (a cancel of the session closes it itself);
* otherwise one summary and history replacement (the latest completed exchange kept verbatim), one
  durable boundary marker, one ``session:compacted`` (reason ``auto-overflow``) whose ``tokensUsed`` is the
  summariser's own spend, and :class:`Recovered` with the new working history for the one fresh retry.

The summariser's spend never enters the turn's usage and uses no slot of the hard cap.  This is one
pass over every foldable exchange; the measured multi-pass planner of the compaction issue replaces the
pass when it lands, behind the same port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from relavium_reference._host.admission import ask_admission, release_quietly
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.turn import Recovered, RecoveryRefused, TurnSetup
from relavium_reference._model.budget import UsagePending, UsageResolved
from relavium_reference._model.events import (
    SessionCompacted,
    SessionCompacting,
    SessionCompactionFailed,
    TokensUsed,
)
from relavium_reference._model.invocation import (
    UNKNOWN_MODEL,
    AdmissionRefused,
    Invocation,
    open_stream,
)
from relavium_reference._model.llm import (
    LlmMessage,
    LlmRequest,
    LlmTextPart,
    StopChunk,
    StreamErrorChunk,
    TextDelta,
    Usage,
)
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.compaction import SUMMARY_MAX_TOKENS
from relavium_reference._rules.projection import Exchange, HistoryMessage, ProjectedRequest, estimate_tokens

__all__ = ["RECOVERY_SUMMARY_SYSTEM", "recover_overflow"]

RECOVERY_SUMMARY_SYSTEM = (
    "Summarise the conversation below so that it can be continued from the summary alone: keep the facts, "
    "decisions, names and open questions; write plain text."
)
_FAILED = "the conversation could not be summarised"


class _Session(Protocol):
    """The parts of an :class:`~relavium_reference._host.session.AgentSession` a recovery uses."""

    _exchanges: list[Exchange]
    _preamble: str | None
    _stamper: EventStamper
    _deps: Any

    def _history(self) -> list[HistoryMessage]: ...

    async def _append_boundary(self, kept_slots: int) -> None: ...


def _fold_text(summary: str | None, folded: Sequence[Exchange]) -> str:
    blocks = [f"Summary so far:\n{summary}"] if summary else []
    for exchange in folded:
        blocks.append(f"User: {exchange.user}")
        if exchange.assistant:
            blocks.append(f"Assistant: {exchange.assistant}")
    return "\n\n".join(blocks)


def _tokens(setup: TurnSetup, history: Sequence[HistoryMessage]) -> int:
    messages = [LlmMessage(role=m.role, content=[LlmTextPart(text=m.text)]) for m in history]
    messages.append(LlmMessage(role="user", content=[LlmTextPart(text=setup.pending_user)]))
    return estimate_tokens(ProjectedRequest(system=setup.agent.system_prompt, messages=messages, tools=None))


async def recover_overflow(session: _Session, setup: TurnSetup) -> Recovered | RecoveryRefused | None:
    """The one compaction of an overflow recovery (see the module text)."""
    exchanges = list(session._exchanges)
    if len(exchanges) <= 1:
        return None
    folded, kept = exchanges[:-1], exchanges[-1:]
    entry = setup.plan[0]
    text = _fold_text(session._preamble, folded)
    request = LlmRequest(
        model=entry.model,
        system=RECOVERY_SUMMARY_SYSTEM,
        messages=[LlmMessage(role="user", content=[LlmTextPart(text=text)])],
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    asked, verdict = await ask_admission(  # a pass is a request like a turn's: its identity, as sent
        setup.admission,
        request_id=setup.next_request_id(),
        purpose="summary",
        attempt=1,
        round_number=0,
        provider=entry.provider,
        built=request,
        sent=request,
        max_tokens_estimate=setup.max_tokens_estimate,
    )
    if isinstance(verdict, AdmissionRefused):
        return RecoveryRefused(message=verdict.message)
    if not await _pending(setup, entry.provider, entry.model):
        await release_quietly(setup.admission, asked)
        return None  # the failed write latched the session: the original overflow stands
    stamper = session._stamper
    await stamper.emit(SessionCompacting, reason="auto-overflow")
    window = setup.models.get(entry.model, UNKNOWN_MODEL).authoritative_window
    try:
        summary, usage, failed = await _summarise(setup, entry.provider, entry.model, request, window)
        usage_reported = usage != Usage() or not failed
    except asyncio.CancelledError:
        # an abort of the turn closes the open moment once; the session's cancellation closes it itself
        if getattr(session, "_interrupt", None) != "cancel":
            await stamper.emit(
                SessionCompactionFailed, reason="auto-overflow", outcome="failed", message=_FAILED
            )
        raise
    await _resolved(setup, entry.model, usage if usage_reported else None)
    if failed or not summary.strip():
        await stamper.emit(SessionCompactionFailed, reason="auto-overflow", outcome="failed", message=_FAILED)
        return None
    before = _tokens(setup, session._history())
    session._preamble = summary
    session._exchanges[:] = kept
    await session._append_boundary(len(kept))
    history = session._history()
    await stamper.emit(
        SessionCompacted,
        reason="auto-overflow",
        summary=summary,
        kept_message_count=sum(exchange.message_units for exchange in kept),
        tokens_before=before,
        tokens_after=_tokens(setup, history),
        tokens_used=TokensUsed(input=usage.input_tokens, output=usage.output_tokens, model=entry.model),
        kept_turn_count=len(kept),
    )
    return Recovered(history=history)


async def _pending(setup: TurnSetup, provider: ProviderId, model: str) -> bool:
    """The usage writer acknowledges the pass's pending record before it egresses (KD-USE-1)."""
    if setup.usage is None:
        return True
    try:
        await setup.usage.pending(UsagePending(attempt=1, purpose="summary", provider=provider, model=model))
    except Exception:
        setup.latch()
        return False
    return True


async def _resolved(setup: TurnSetup, model: str, usage: Usage | None) -> None:
    """The pass's actual usage resolved through the writer; a failed write latches."""
    if setup.usage is None:
        return
    record = UsageResolved(
        attempt=1,
        purpose="summary",
        model=model,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        reported=usage is not None,
    )
    try:
        await setup.usage.resolved(record)
    except Exception:
        setup.latch()


async def _summarise(
    setup: TurnSetup, provider_id: Any, model: str, request: LlmRequest, window: int | None
) -> tuple[str, Usage, bool]:
    """The summary pass: its text, its usage, and whether it failed (an error, a raise, no stop)."""
    text, usage = "", Usage()
    try:
        provider = setup.resolve_provider(provider_id, model)
        async for chunk in open_stream(provider, request, Invocation("summary", window)):
            if isinstance(chunk, TextDelta):
                text += chunk.text
            elif isinstance(chunk, StopChunk):
                return text, usage + chunk.usage, False
            elif isinstance(chunk, StreamErrorChunk):
                return text, usage + (chunk.usage or Usage()), True
    except Exception:
        return text, usage, True
    return text, usage, True
