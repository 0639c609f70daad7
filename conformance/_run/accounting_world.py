"""The kit's cost governor and usage writer: ``host.admit``, ``host.releaseAdmission``, ``host.usage``.

:class:`AccountingWorld` plays them, a collaborator of the case world.  It answers from the case's
``admissions`` and ``usage`` scripts (admit, refuse naming a cap, fail, hold; acknowledge, fail, hold),
keeps the durable ledger a host would keep across the instances of one case (amount, missing prices,
coverage), and records what reached it (``expect.admissions``, ``expect.usage``).

It also runs three generic checks, booked on their own clauses whenever the case's host has the governor
or the writer, so every case with one checks them:

* a provider request goes out only after admission granted exactly that request (AS-FIN-003);
* a provider request goes out only after the writer acknowledged a pending record for it (AS-USE-005);
* ``cost:updated`` is published only after the writer acknowledged that attempt's resolution (AS-USE-009).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from relavium_conformance._corpus.cases import AdmitAnswer, Case, OpStep, UsageAnswer, as_ops
from relavium_conformance._judge.matching import jsonable
from relavium_conformance._report.results import Difference, DifferenceForm
from relavium_conformance._run.signals import Signals
from relavium_conformance._wire.budget_messages import (
    HostAdmitParams,
    HostReleaseAdmissionParams,
    HostUsageParams,
)
from relavium_conformance._wire.jsonrpc import RpcError

if TYPE_CHECKING:
    from relavium_conformance._judge.observation import Observation

__all__ = ["AccountingPort", "AccountingWorld"]


class AccountingPort(Protocol):
    """What the accounting collaborator needs of the case world, and nothing more."""

    @property
    def observed(self) -> Observation:
        """What was observed of the session the current callback belongs to."""
        ...

    @property
    def create_params(self) -> dict[str, Any]:
        """The current session's create params (its ``deps`` say which host parts it has)."""
        ...

    async def hold(self) -> None:
        """Never answer (a script's ``hold``)."""
        ...

    async def perform_together(self, ops: list[OpStep]) -> None:
        """Issue a script's ``do`` operations at once."""
        ...


class AccountingWorld:
    """The governor and the usage writer of one case, and their generic checks; it reaches the case world
    only through its :class:`AccountingPort`, and orders its answers with the case's :class:`Signals`."""

    def __init__(self, case: Case, world: AccountingPort, signals: Signals) -> None:
        self._world = world
        self._signals = signals
        self._admit_answers: Iterator[AdmitAnswer] = iter(case.admissions)
        script = case.usage
        self._usage_answers: dict[str, Iterator[UsageAnswer]] = {
            "open": iter(script.open),
            "pending": iter(script.pending),
            "resolved": iter(script.resolved),
        }
        self._granted: dict[str, dict[str, Any]] = {}  # request id -> the admitted request, unused
        self._acked: dict[str, int] = {"open": 0, "pending": 0, "resolved": 0}
        self._egressed = 0
        self._published = 0
        self._amount = 0
        self._missing = 0
        self._coverage = "complete"

    def _has(self, dep: str) -> bool:
        deps = self._world.create_params.get("deps") or {}
        return bool(deps.get(dep))

    # -- the governor ---------------------------------------------------------------------------

    async def on_host_admit(self, params: HostAdmitParams) -> dict[str, Any]:
        answer = next(self._admit_answers, None) or AdmitAnswer()
        entry: dict[str, Any] = {
            "requestId": params.request_id,
            "purpose": params.purpose,
            "attempt": params.attempt,
            "round": params.round,
            "provider": params.provider,
            "model": params.model,
            "inputEstimate": params.input_estimate,
            "maxTokensEstimate": params.max_tokens_estimate,
            "outputReservation": params.output_reservation,
            "released": False,
        }
        self._world.observed.admissions.append(entry)
        if answer.do is not None:
            await self._world.perform_together(as_ops(answer.do))
        if answer.hold:
            entry["decision"] = "held"
            await self._world.hold()
        if answer.fail:
            entry["decision"] = "failed"
            raise RpcError(-32000, "kit: the cost governor failed (scripted)")
        if answer.refuse is not None:
            entry["decision"] = "refused"
            return {"decision": "refuse", "capMicrocents": answer.refuse}
        entry["decision"] = "admitted"
        self._granted[params.request_id] = params.request
        return {"decision": "admit"}

    async def on_host_release_admission(self, params: HostReleaseAdmissionParams) -> dict[str, Any]:
        self._granted.pop(params.request_id, None)
        for entry in self._world.observed.admissions:
            if entry["requestId"] == params.request_id:
                entry["released"] = True
        return {}

    # -- the writer -----------------------------------------------------------------------------

    async def on_host_usage(self, params: HostUsageParams) -> dict[str, Any]:
        record = params.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"handle"})
        self._world.observed.usage.append(record)
        answer = next(self._usage_answers[params.phase], None) or UsageAnswer()
        self._signals.raise_signal(answer.signal)
        if answer.do is not None:
            await self._world.perform_together(as_ops(answer.do))
        if answer.hold:
            await self._world.hold()
        await self._signals.wait_signal(answer.after)
        self._signals.raise_signal(answer.then)
        if answer.fail:
            raise RpcError(-32000, f"kit: the usage writer failed its {params.phase} write (scripted)")
        out: dict[str, Any] = {}
        if params.phase == "open":
            if params.basis == "fresh":
                self._amount, self._missing, self._coverage = 0, 0, "complete"
            if answer.amount_microcents is not None:
                self._amount = answer.amount_microcents
        elif params.phase == "resolved":
            cost = answer.cost_microcents or 0
            priced = answer.priced if answer.priced is not None else answer.cost_microcents is not None
            self._amount += cost
            self._missing += 0 if priced else 1
            if params.reported is False:
                self._coverage = "unknown"
            out = {"costMicrocents": cost, "priced": priced}
        self._acked[params.phase] += 1
        return {
            **out,
            "amountMicrocents": self._amount,
            "missingPriceCount": self._missing,
            "coverage": self._coverage,
        }

    # -- the generic checks ---------------------------------------------------------------------

    def check_egress(self, request: dict[str, Any]) -> None:
        """Called for each ``provider.open``: admitted and pending-acknowledged first."""
        self._egressed += 1
        where = f"provider_requests[{self._egressed - 1}]"
        if self._has("admission"):
            match = next((rid for rid, sent in self._granted.items() if sent == request), None)
            if match is None:
                self._world.observed.violations.append(
                    Difference(
                        path=where,
                        message="a provider request went out that admission had not granted as sent",
                        actual=jsonable(request),
                        form=DifferenceForm.NOTE,
                        clauses=("AS-FIN-003",),
                    )
                )
            else:
                del self._granted[match]
        if self._has("usageWriter") and self._acked["pending"] < self._egressed:
            self._world.observed.violations.append(
                Difference(
                    path=where,
                    message="a provider request went out before the usage writer acknowledged its pending",
                    clauses=("AS-USE-005",),
                )
            )

    def check_publication(self, event: dict[str, Any]) -> None:
        """Called for each emitted event: cost completion only after the writer's acknowledgement."""
        if event.get("type") != "cost:updated" or not self._has("usageWriter"):
            return
        self._published += 1
        if self._acked["resolved"] < self._published:
            self._world.observed.violations.append(
                Difference(
                    path=f"events[cost:updated][{self._published - 1}]",
                    message="cost:updated was published before the usage writer acknowledged the attempt",
                    actual=jsonable(event),
                    clauses=("AS-USE-009",),
                )
            )
