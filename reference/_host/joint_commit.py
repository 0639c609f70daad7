"""A turn's last resolution in the turn's own commit: one durable transaction where the contract allows it.

With the reference host's default writer (KD-USE-1: the ``SqliteUsageWriter`` its ``SqlitePersister``
supplies over the same ``history.db``), a durable text turn used to commit three times: the attempt's
pending record (before the call: it must be durable then), its resolution, and the turn.  The spec puts
the usage and its coverage durably in the same transaction as the turn it belongs to, so the final
attempt's resolution is held back (:class:`DeferredResolution`) and rides in the turn's commit; the
attempt's ``cost:updated`` is published once that commit returned, before the turn's terminal, so the
events a host sees, and their order, are unchanged.

Every path that does not commit the turn (an abort, a cancel, an observer failure, a failed turn) first
resolves the held-back attempt on its own (:func:`settle_deferred`), as before.  So does a joint commit that
fails: the turn is refused, but the attempt was billed, and its resolution stays in the ledger.

Only the final attempt of a turn is held back: a tool round's resolution precedes its dispatch, and a
writer the host gives explicitly (the kit's, over the adapter) always resolves each attempt on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.stamper import EventStamper
from relavium_reference._host.usage import publish_cost
from relavium_reference._model.budget import UsageResolved, UsageSettled
from relavium_reference._model.llm import Usage
from relavium_reference._model.records import CompletedTurn

__all__ = [
    "DeferredResolution",
    "JointPersister",
    "JointWriter",
    "joint_writer",
    "publish_joint",
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

    def settlement(self, record: UsageResolved) -> tuple[int, bool]:
        """``(cost_microcents, priced)`` the resolution will answer (prices only, no I/O)."""
        ...

    async def resolved_with_turn(self, turn: CompletedTurn, record: UsageResolved) -> UsageSettled: ...


@runtime_checkable
class JointPersister(Protocol):
    """A persister that says which usage writer may commit a turn together with its resolution."""

    def joint_writer(self, writer: UsageWriter | None) -> JointWriter | None: ...


def joint_writer(
    explicit: UsageWriter | None, writer: UsageWriter | None, persister: object
) -> JointWriter | None:
    """The session's writer when the host gave none explicitly and its persister accepts it for joint
    commits (the reference host's ``SqlitePersister`` and the writer it supplied, over one store)."""
    if explicit is None and isinstance(persister, JointPersister):
        return persister.joint_writer(writer)
    return None


async def settle_deferred(
    deferred: DeferredResolution, writer: UsageWriter, stamper: EventStamper, *, node_id: str, publish: bool
) -> UsageSettled | None:
    """Resolve a held-back attempt on its own, then publish its cost (``None``: the write failed)."""
    try:
        settled = await writer.resolved(deferred.record)
    except Exception:
        return None
    if publish:
        await publish_joint(deferred, settled, stamper, node_id=node_id)
    return settled


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
