"""A turn's last resolution in the turn's own commit: one durable transaction where the contract allows it.

With the reference host's default writer (KD-USE-1: the ``SqliteUsageWriter`` its ``SqlitePersister``
supplies over the same ``history.db``), a durable text turn used to commit three times: the attempt's
pending record (before the call: it must be durable then), its resolution, and the turn.  The spec puts
the usage and its coverage durably in the same transaction as the turn it belongs to, so the final
attempt's resolution is held back (:class:`DeferredResolution`) and rides in the turn's commit; the
attempt's ``cost:updated`` is published once that commit returned, before the turn's terminal, so the
events a host sees, and their order, are unchanged, with one exception: a ``cancel`` that arrives while the
joint commit is in flight emits ``session:cancelled`` at once (it waits for no write), so that attempt's
money is durable but its ``cost:updated`` is never published (a separate writer published it before the
commit began; KD-USE-1 says so).  A sink that fails on that ``cost:updated`` ends the turn as a sink failing
inside the turn does: the INTERNAL terminal (and the cost row, when the turn was refused), then its error.

Every path that does not commit the turn (an abort, a cancel, an observer failure, a failed turn) first
resolves the held-back attempt on its own (:func:`settle_deferred`), as before.  So does a joint commit that
fails: the turn is refused, but the attempt was billed, and its resolution stays in the ledger.  A caller
cancelled before the commit leaves it to :func:`resolve_abandoned`, which publishes nothing.

Only the final attempt of a turn is held back: a tool round's resolution runs alongside the round's tools
(``round_resolution``) and is finished before the next provider call, and a writer the host gives
explicitly (the kit's, over the adapter) always resolves each attempt on its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.usage import publish_cost
from relavium_reference._model.llm import Usage
from relavium_reference._model.records import CompletedTurn
from relavium_reference._model.usage_writer import UsageResolved, UsageSettled

__all__ = [
    "DeferredResolution",
    "JointPersister",
    "JointWriter",
    "joint_writer",
    "publish_committed",
    "publish_joint",
    "resolve_abandoned",
    "settle_deferred",
]


@dataclass(frozen=True)
class DeferredResolution:
    """The final attempt's resolution, held back for the turn's commit."""

    record: UsageResolved
    usage: Usage
    attempt_number: int


@runtime_checkable
class JointWriter(Protocol):
    """A usage writer that can resolve an attempt inside the turn's commit, in one transaction."""

    def _settlement(self, record: UsageResolved) -> tuple[int, bool]:
        """``(cost_microcents, priced)`` the resolution will answer (prices only, no I/O)."""
        ...

    async def _resolved_with_turn(self, turn: CompletedTurn, record: UsageResolved) -> UsageSettled: ...


@runtime_checkable
class JointPersister(Protocol):
    """A persister that says which usage writer may commit a turn together with its resolution."""

    def _joint_writer(self, writer: UsageWriter | None) -> JointWriter | None: ...


def joint_writer(
    explicit: UsageWriter | None, writer: UsageWriter | None, persister: object
) -> JointWriter | None:
    """The session's writer when the host gave none explicitly and its persister accepts it for joint
    commits (the reference host's ``SqlitePersister`` and the writer it supplied, over one store)."""
    if explicit is None and isinstance(persister, JointPersister):
        return persister._joint_writer(writer)
    return None


async def settle_deferred(
    deferred: DeferredResolution, writer: UsageWriter, stamper: EventStamper, *, node_id: str, publish: bool
) -> tuple[UsageSettled | None, Exception | None]:
    """Resolve a held-back attempt on its own, then publish its cost.

    Answers the settlement (``None``: the write failed, nothing is published) and the failure of the
    event sink on that ``cost:updated``, if any: the caller records the cost row and the turn's terminal
    before it raises that failure, as it does for a sink that fails inside the turn."""
    try:
        settled = await writer.resolved(deferred.record)
    except Exception:
        return None, None
    if publish:
        try:
            await publish_joint(deferred, settled, stamper, node_id=node_id)
        except Exception as failure:
            return settled, failure
    return settled, None


_BACKGROUND: set[asyncio.Task[UsageSettled]] = set()


async def resolve_abandoned(deferred: DeferredResolution, writer: UsageWriter) -> bool:
    """Resolve a held-back attempt whose caller was cancelled before the turn's commit; nothing is
    published (the caller is gone).  The write runs as a referenced task behind a shield, so a second
    cancellation cannot drop it.  ``False``: the write failed."""
    task = asyncio.get_running_loop().create_task(writer.resolved(deferred.record))
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:  # cancelled again: the referenced task still lands the write
        return True
    except Exception:
        return False
    return True


async def publish_committed(
    committed: tuple[DeferredResolution, UsageSettled] | None, stamper: EventStamper, node_id: str
) -> Exception | None:
    """Publish a joint commit's ``cost:updated`` (the turn is durable); answer the sink's failure."""
    if committed is None:
        return None
    try:
        await publish_joint(*committed, stamper, node_id=node_id)
    except Exception as failure:
        return failure
    return None


async def publish_joint(
    deferred: DeferredResolution, settled: UsageSettled, stamper: EventStamper, *, node_id: str
) -> None:
    await publish_cost(
        stamper,
        node_id=node_id,
        model=deferred.record.model,
        usage=deferred.usage,
        settled=settled,
        attempt_number=deferred.attempt_number,
    )
