"""The host's cost governor and usage writer, played by the kit: ``host.admit``, ``host.releaseAdmission``
and ``host.usage`` (KD-FIN-2, KD-USE-1).

A session created with ``deps.admission`` asks the kit before every provider attempt; one created with
``deps.usageWriter`` keeps the kit's writer.  Without them the reference uses its always-admit default
and its own unpriced counters, and calls neither.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._wire.budget_messages import HostAdmitResult, HostUsageResult
from relavium_conformance._wire.model import kit_parse
from relavium_conformance._wire.protocol import Callback
from relavium_reference._model.invocation import AdmissionRefused, AdmissionRequest, Admitted
from relavium_reference._model.usage_writer import (
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)
from relavium_reference._rules.budget import budget_message

__all__ = ["KitAdmission", "KitUsageWriter", "poke_estimate"]


class KitAdmission:
    def __init__(self, callback: Callback, handle: str) -> None:
        self._callback = callback
        self._handle = handle

    async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
        answer = await self._callback(
            "host.admit",
            {
                "handle": self._handle,
                "requestId": request.request_id,
                "purpose": request.purpose,
                "attempt": request.attempt,
                "round": request.round,
                "provider": request.provider,
                "model": request.model,
                "request": None if request.request is None else request.request.to_wire(),
                "inputEstimate": request.input_tokens,
                "maxTokensEstimate": request.max_tokens_estimate,
                "outputReservation": request.output_reservation,
            },
        )
        decision = kit_parse(HostAdmitResult, answer)
        if decision.decision == "refuse":
            return AdmissionRefused(message=budget_message(decision.cap_microcents or 0))
        return Admitted()

    async def release(self, request: AdmissionRequest) -> None:
        await self._callback(
            "host.releaseAdmission", {"handle": self._handle, "requestId": request.request_id}
        )


def _totals(answer: HostUsageResult) -> UsageTotals:
    return UsageTotals(
        amount_microcents=answer.amount_microcents or 0,
        missing_price_count=answer.missing_price_count or 0,
        coverage=answer.coverage or "complete",
    )


class KitUsageWriter:
    def __init__(self, callback: Callback, handle: str) -> None:
        self._callback = callback
        self._handle = handle

    async def _call(self, params: dict[str, Any]) -> HostUsageResult:
        answer = await self._callback("host.usage", {"handle": self._handle, **params})
        return kit_parse(HostUsageResult, answer or {})

    async def open(self, basis: UsageBasis) -> UsageTotals:
        return _totals(await self._call({"phase": "open", "basis": basis}))

    async def pending(self, record: UsagePending) -> None:
        await self._call(
            {
                "phase": "pending",
                "attempt": record.attempt,
                "purpose": record.purpose,
                "provider": record.provider.value,
                "model": record.model,
            }
        )

    async def resolved(self, record: UsageResolved) -> UsageSettled:
        answer = await self._call(
            {
                "phase": "resolved",
                "attempt": record.attempt,
                "purpose": record.purpose,
                "model": record.model,
                "inputTokens": record.input_tokens,
                "outputTokens": record.output_tokens,
                "reported": record.reported,
            }
        )
        return UsageSettled(
            cost_microcents=answer.cost_microcents or 0,
            priced=bool(answer.priced),
            totals=_totals(answer),
        )


def poke_estimate(deps: object) -> None:
    """Change, as a careless host would, the ``maxTokensEstimate`` it handed over after construction.

    A session that copied the value at construction (AS-FIN-001) never sees this; one that reads the
    host's value live forwards the changed number to admission, which the budget cases then see.
    """
    value = getattr(deps, "max_tokens_estimate", None)
    if isinstance(value, int):
        object.__setattr__(deps, "max_tokens_estimate", value + 1000)
