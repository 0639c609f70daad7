"""A session's turn books: the completed turn's commit and the recording of what every turn spent.

:class:`TurnBooks` is a collaborator of :class:`relavium_reference._host.session.AgentSession`, built with
the narrow face of its session it needs (:class:`BooksPorts`).  It hands a completed turn to the host's
persister (with the final attempt's resolution in the same transaction when the writer can: see
``joint_commit``), resolves a held-back final attempt alone when it cannot, finishes a tool round's usage
write left in flight, and records the cost row of a turn that commits no transcript.  Any failure to
persist latches the session; a raw (unclassified) commit failure is handed back to the session, which
rejects with it after the turn's fixed terminal (KD-MSG-6).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.joint_commit import JointWriter, joint_writer, settle_deferred
from relavium_reference._host.persister import PersistError, TurnPersister, completed_turn
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.turn import TurnEnd, TurnProgress
from relavium_reference._model.records import CostEntry
from relavium_reference._model.vocabulary import TERMINAL_FINISH_REASONS

__all__ = ["BooksPorts", "TurnBooks"]


@dataclass(frozen=True)
class BooksPorts:
    """What the turn books read and move of their session; each member is read when used."""

    session_id: Callable[[], str]
    node_id: Callable[[], str]
    persister: Callable[[], TurnPersister | None]
    given_writer: Callable[[], UsageWriter | None]
    """The host's explicit usage writer (``SessionDeps.usage_writer``)."""
    writer: Callable[[], UsageWriter | None]
    """The writer the session uses now (the host's, or its persister's)."""
    interrupt: Callable[[], Literal["abort", "cancel"] | None]
    stamper: Callable[[], EventStamper]
    latch: Callable[[], None]
    costs: Callable[[TurnProgress], tuple[CostEntry, ...]]
    """The turn's cost rows (the session's ``_costs``)."""
    raw_failure: Callable[[BaseException | None], None]
    """Hand the session the raw failure it rejects with after the terminal (``None``: none)."""


class TurnBooks:
    def __init__(self, ports: BooksPorts) -> None:
        self._ports = ports
        self._joint_of: tuple[UsageWriter | None, JointWriter | None] | None = None

    def joint(self) -> JointWriter | None:
        """The writer when it may commit a turn with its last resolution (asked once per writer)."""
        ports = self._ports
        writer = ports.writer()
        if self._joint_of is None or self._joint_of[0] is not writer:
            self._joint_of = (writer, joint_writer(ports.given_writer(), writer, ports.persister()))
        return self._joint_of[1]

    async def commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        """Hand the completed turn to the host's persister; a failure latches the session."""
        ports = self._ports
        persister = ports.persister()
        if persister is None:
            return True
        names = {entry.tool_call_id: entry.name for entry in progress.tool_history}
        stop = end.stop_reason.value
        joint = self.joint() if progress.deferred else None
        if progress.deferred and not joint and (failure := await self.settle_deferred(progress)):
            await self.record_costs(progress)  # the writer changed: the attempt was resolved on its own
            ports.raw_failure(failure)
            return False
        deferred, progress.deferred = progress.deferred, None
        before = progress.cost_microcents, progress.priced_calls
        try:
            if deferred is not None and joint is not None:  # the turn's cost row carries the attempt's money
                cost, priced = joint._settlement(deferred.record)
                progress.cost_microcents += cost
                progress.priced_calls += int(priced)
            turn = completed_turn(
                user_text=text,
                final_text=end.text or "",
                round_messages=progress.round_messages,
                structural_names=names,
                model=progress.model,
                finish_reason=stop if stop in TERMINAL_FINISH_REASONS else "stop",
                costs=ports.costs(progress),
            )
            if deferred is not None and joint is not None:
                settled = await joint._resolved_with_turn(turn, deferred.record)  # one transaction
            else:
                await persister.commit_turn(ports.session_id(), turn)
        except Exception as failure:  # a PersistError is classified; anything else is raw (KD-MSG-6)
            ports.latch()
            ports.raw_failure(None if isinstance(failure, PersistError) else failure)
            progress.cost_microcents, progress.priced_calls = before
            progress.deferred = deferred
            if (raised := await self.settle_deferred(progress)) is not None:  # the attempt was billed
                await self.record_costs(progress)  # what a sink failing inside the turn records
                ports.raw_failure(raised)
            return False
        if deferred is not None and joint is not None:
            progress.committed = deferred, settled
        return True

    async def finish_round(self, progress: TurnProgress) -> Exception | None:
        """A turn task that ended inside a tool round (abort, an observer's failure) may leave that round's
        usage write in flight: an abort waits for it and publishes its cost; a cancel waits for it too (its
        money belongs in the cost row) but publishes nothing.  Answers the sink's failure on that cost, which
        the caller raises after the terminal (or drops when the sink had already ended the turn)."""
        pending, progress.accounting = progress.accounting, None
        if pending is None:
            return None
        try:
            await pending.finish(publish=self._ports.interrupt() != "cancel")
        except Exception as failure:  # the cost row still follows
            return failure
        return None

    async def settle_deferred(self, progress: TurnProgress) -> Exception | None:
        """Resolve a held-back final attempt alone (a failure latches; answers a sink error on its cost)."""
        ports = self._ports
        deferred, progress.deferred = progress.deferred, None
        writer = ports.writer()
        if deferred is None or writer is None:
            return None
        publish = ports.interrupt() != "cancel"
        settled, failure = await settle_deferred(
            deferred, writer, ports.stamper(), node_id=ports.node_id(), publish=publish
        )
        if settled is None:
            ports.latch()
            return None
        progress.cost_microcents += settled.cost_microcents
        progress.priced_calls += int(settled.priced)
        return failure

    async def record_uncommitted(self, progress: TurnProgress) -> Exception | None:
        """Errors and aborts commit no transcript, but what they spent is recorded (answers a sink error)."""
        failure = await self.settle_deferred(progress)
        await self.record_costs(progress)
        return failure

    async def record_costs(self, progress: TurnProgress) -> None:
        persister = self._ports.persister()
        if persister is None:
            return
        for entry in self._ports.costs(progress):
            try:
                await persister.record_cost(self._ports.session_id(), entry)
            except Exception:
                self._ports.latch()
