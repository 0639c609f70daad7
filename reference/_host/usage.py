"""The session's side of the usage writer (KD-USE-1): which basis it opens, and when.

A persisted host attaches a writer whether or not it has a cost governor.  A freshly created session opens
the writer with a complete-zero basis when it starts; a resumed or reseated instance never does: it adopts
the existing owner (``adopt``) at its first accounting boundary, the next turn, and from then on the money
it publishes is the writer's durable answer, so the counters the instance was constructed with (the resume
state's cumulative cost) can never overwrite a newer durable sum.

Which writer: the host's explicit one when it gives one (the kit plays its own over the adapter), else the
one its persister supplies when that persister keeps usage durably (the reference host's
``SqlitePersister``: a :class:`~relavium_reference._host.history_usage.SqliteUsageWriter` over the same
``history.db``, priced with the host's configured prices; an empty mapping leaves every call unpriced).
A host without either has no writer and publishes what its attempts report.
"""

from __future__ import annotations

from collections.abc import Mapping

from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.history_usage import SqliteUsageWriter
from relavium_reference._host.persister import KeepsUsage, TurnPersister
from relavium_reference._host.stamper import EventStamper
from relavium_reference._model.events import CostUpdated
from relavium_reference._model.llm import Usage
from relavium_reference._model.usage_writer import (
    ModelPrice,
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
    check_settled,
    check_totals,
)

__all__ = ["CheckedUsageWriter", "SessionUsage", "host_usage_writer", "publish_cost"]


def host_usage_writer(
    explicit: UsageWriter | None,
    persister: TurnPersister | None,
    session_id: str,
    prices: Mapping[str, ModelPrice],
) -> UsageWriter | None:
    """The session's writer: the explicit one, else its persister's when it keeps usage (KD-USE-1)."""
    if explicit is not None:
        return CheckedUsageWriter(explicit)
    if isinstance(persister, KeepsUsage):
        supplied = persister.usage_writer(session_id, prices)
        return supplied if _engine_answers(supplied) else CheckedUsageWriter(supplied)
    return None


def _engine_answers(writer: UsageWriter) -> bool:
    """The engine's own ``SqliteUsageWriter`` answers (its ``open`` and ``resolved`` unchanged): kept
    unwrapped, so a turn's last resolution may still ride in the turn's commit (``joint_commit``)."""
    kind = type(writer)
    return (
        isinstance(writer, SqliteUsageWriter)
        and kind.open is SqliteUsageWriter.open
        and kind.resolved is SqliteUsageWriter.resolved
    )


class CheckedUsageWriter:
    """A host's usage writer whose answers are checked as they arrive (``check_totals``,
    ``check_settled``): an answer of the wrong type or out of range raises :class:`InvalidInputError`
    from the call, which every caller already treats as the writer failing (KD-USE-1: the session
    latches and publishes no money).  The engine's own ``SqliteUsageWriter`` is not wrapped."""

    def __init__(self, writer: UsageWriter) -> None:
        self.host_writer = writer

    async def open(self, basis: UsageBasis) -> UsageTotals:
        return check_totals(await self.host_writer.open(basis))

    async def pending(self, record: UsagePending) -> None:
        await self.host_writer.pending(record)

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        return check_settled(await self.host_writer.resolved(record))


class SessionUsage:
    """One instance's use of the host's writer; inert when the host has none."""

    def __init__(self, writer: UsageWriter | None, *, basis: UsageBasis) -> None:
        self.writer = writer
        self._basis: UsageBasis = basis
        self._opened = False
        self.totals: UsageTotals | None = None
        """The writer's latest durable view (amount, missing prices and coverage, together)."""

    @property
    def basis(self) -> UsageBasis:
        return self._basis

    async def open(self) -> None:
        """Open the writer once per instance (no-op without a writer or once opened); raises its failure."""
        if self.writer is None or self._opened:
            return
        self.totals = await self.writer.open(self._basis)
        self._opened = True

    async def opened(self) -> bool:
        """:meth:`open`, reporting a failed write as ``False`` (the session then latches)."""
        try:
            await self.open()
        except Exception:
            return False
        return True


async def publish_cost(
    stamper: EventStamper,
    *,
    node_id: str,
    model: str,
    usage: Usage,
    settled: UsageSettled | None,
    attempt_number: int,
) -> None:
    """One ``cost:updated`` for an invocation whose usage arrived: the writer's money when it settled
    the record (absent without a writer: zero and unpriced). A turn attempt and a summary pass alike."""
    await stamper.emit(
        CostUpdated,
        node_id=node_id,
        model=model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_microcents=settled.cost_microcents if settled else 0,
        cumulative_cost_microcents=settled.totals.amount_microcents if settled else 0,
        attempt_number=attempt_number,
        priced=settled.priced if settled else False,
    )
