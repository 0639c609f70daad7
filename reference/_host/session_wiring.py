"""How a session wires its parts: the ports of its collaborators and the inputs of one turn or compaction.

:class:`~relavium_reference._host.session.AgentSession` owns its state and its sequencing; what it hands
out is built here, from the session as it is at that moment:

* :func:`compaction_ports`, :func:`auto_compaction_ports` and :func:`books_ports`, the narrow faces its
  collaborators use (:class:`~relavium_reference._host.session_compaction.SessionCompactions`,
  :class:`~relavium_reference._host.auto_compaction.AutoCompaction`,
  :class:`~relavium_reference._host.turn_books.TurnBooks`).  Every member reads the session
  when it is called, and every step the session decides itself is reached through the session's own
  method, so a session that refines a step (the selftest's broken sessions do) is honoured everywhere;
* :func:`turn_setup`, everything one turn reads (``_host/turn.py``);
* :func:`compaction_job`, everything one compaction reads (``_host/compaction_runner.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relavium_reference._host.auto_compaction import AutoCompactionPorts
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._host.overflow_recovery import recover_overflow
from relavium_reference._host.session_compaction import CompactionPorts
from relavium_reference._host.turn import TurnSetup
from relavium_reference._host.turn_books import BooksPorts
from relavium_reference._model.events import CompactionReason
from relavium_reference._model.records import CostEntry
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._rules.lifecycle import SessionState
from relavium_reference._rules.memory import automatic_compaction_allowed

if TYPE_CHECKING:
    from relavium_reference._host.session import AgentSession

__all__ = ["auto_compaction_ports", "books_ports", "compaction_job", "compaction_ports", "turn_setup"]


def _latch(session: AgentSession) -> None:
    session._latched = True


def compaction_ports(session: AgentSession) -> CompactionPorts:
    return CompactionPorts(
        state=lambda: session.state,
        enter=lambda event: session._enter(event),
        memory=lambda: session._memory,
        exchanges=lambda: session._exchanges,
        usage=lambda: session._usage,
        latch=lambda: _latch(session),
        stamper=lambda: session._stamper,
        job=lambda reason, manual, pending_user: session._compaction_job(
            reason, manual=manual, pending_user=pending_user
        ),
        run=lambda reason, manual: session.run_compaction(reason, manual=manual),
    )


def auto_compaction_ports(session: AgentSession) -> AutoCompactionPorts:
    return AutoCompactionPorts(
        agent=lambda: session._agent,
        deps=lambda: session._deps,
        plan=lambda: session._plan,
        exchanges=lambda: session._exchanges,
        history=lambda: session._history(),
        memory=lambda: session._memory,
        max_tokens_estimate=lambda: session._max_tokens_estimate,
        state=lambda: session.state,
        enter=lambda event: session._enter(event),
        advertised=lambda policy: session._advertised(policy),
        turn_setup=lambda text, policy: session._turn_setup(text, policy),
        run_compaction=lambda reason, pending_user: session.run_compaction(reason, pending_user=pending_user),
        trim=lambda limit, reason: session._trim(limit, reason),
        allowed=lambda: session._automatic_allowed(),
        entry_windows=lambda: session._entry_windows(),
        measurement=lambda user, progress, policy: session._automatic_measurement(user, progress, policy),
        irreducible=lambda user, policy: session._irreducible(user, policy),
        presend=lambda text, policy, progress: session._presend(text, policy, progress),
    )


def books_ports(session: AgentSession) -> BooksPorts:
    def raw_failure(failure: BaseException | None) -> None:
        session._raw_commit_failure = failure

    return BooksPorts(
        session_id=lambda: session.session_id,
        node_id=lambda: session.agent_ref,
        persister=lambda: session._deps.persister,
        given_writer=lambda: session._deps.usage_writer,
        writer=lambda: session._usage.writer,
        interrupt=lambda: session._interrupt,
        stamper=lambda: session._stamper,
        latch=lambda: _latch(session),
        costs=lambda progress: session._costs(progress),
        raw_failure=raw_failure,
    )


def turn_setup(session: AgentSession, text: str, policy: TurnPolicy) -> TurnSetup:
    deps = session._deps
    return TurnSetup(
        agent=session._agent,
        node_id=session.agent_ref,
        history=session._history(),
        pending_user=text,
        advertised=session._advertised(policy),
        policy=policy,
        registry=deps.tools,
        max_tool_turns=deps.max_tool_turns,
        plan=session._plan,
        resolve_provider=session._resolve_provider,
        sleep=deps.sleep,
        stamper=session._stamper,
        latched=lambda: session._latched,
        admission=deps.admission,
        models=deps.models,
        usage=session._usage.writer,
        max_tokens_estimate=session._max_tokens_estimate,
        next_request_id=session._request_ids.__next__,
        latch=lambda: _latch(session),
        automatic_compaction=automatic_compaction_allowed(session._memory),
        recover=lambda current: recover_overflow(session, current),
        defer_final=session._joint() is not None,
    )


def compaction_job(
    session: AgentSession, reason: CompactionReason, *, manual: bool, pending_user: str | None
) -> CompactionJob:
    deps = session._deps

    def cancelled() -> bool:
        if session.state is SessionState.CANCELLED:
            return True
        return not manual and session._interrupt is not None

    def install(folded_slots: int, summary: str) -> None:
        session._exchanges = session._exchanges[folded_slots:]
        session._preamble = summary

    async def record_cost(entry: CostEntry) -> None:
        if deps.persister is not None:
            await deps.persister.record_cost(session.session_id, entry)

    return CompactionJob(
        reason=reason,
        manual=manual,
        exchanges=tuple(session._exchanges),
        summary=session._preamble,
        pending_user=pending_user,
        system=session._agent.system_prompt,
        memory=session._memory,
        plan=session._plan,
        resolve_provider=session._resolve_provider,
        models=deps.models,
        admission=deps.admission,
        stamper=session._stamper,
        node_id=session.agent_ref,
        on_compaction_start=deps.on_compaction_start,
        append_boundary=lambda kept, text: session._append_boundary(kept, text),
        install=install,
        cancelled=cancelled,
        record_cost=record_cost,
        next_request_id=session._request_ids.__next__,
        max_tokens_estimate=session._max_tokens_estimate,
        prepare_provider=deps.prepare_provider,
        usage=session._usage.writer,
        latch=lambda: _latch(session),
    )
