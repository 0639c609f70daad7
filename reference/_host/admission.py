"""Asking admission, and the usage writer: the accounting every provider attempt goes through.

The admission port itself is :class:`relavium_reference._model.invocation.Admission` (default
:data:`ALWAYS_ADMIT`); a host with a cost cap answers :class:`AdmissionRefused` with the fixed message
naming the cap (KD-FIN-1).  :func:`ask_admission` is the one place a turn attempt is measured and
admission asked: a turn's first request, its tool rounds, retries and fallback attempts.  It measures the
request as built, before any reasoning stripping, and gives an admission that will never be used back
when a cancel or abort arrives while the answer is pending.

:class:`UsageWriter` is the persisted host's one direct accounting writer (KD-USE-1).  A session without
one keeps the engine's own unpriced counters; with one, every invocation is preceded by an acknowledged
pending record and its actual usage is resolved through it, and the writer's answer is the money that
``cost:updated`` publishes, only after that answer arrived.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from relavium_reference._model.invocation import (
    Admission,
    AdmissionRefused,
    AdmissionRequest,
    Admitted,
    check_admission_answer,
)
from relavium_reference._model.llm import LlmRequest
from relavium_reference._model.usage_writer import (
    Purpose,
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.compaction_measure import output_reservation
from relavium_reference._rules.projection import ProjectedRequest, estimate_tokens

__all__ = ["UsageWriter", "ask_admission", "release_quietly"]


@runtime_checkable
class UsageWriter(Protocol):
    async def open(self, basis: UsageBasis) -> UsageTotals:
        """Establish the basis (``fresh``: complete zero) or adopt the owner's durable totals."""
        ...

    async def pending(self, record: UsagePending) -> None: ...

    async def resolved(self, record: UsageResolved) -> UsageSettled: ...


async def ask_admission(
    port: Admission,
    *,
    request_id: str,
    purpose: Purpose,
    attempt: int,
    round_number: int,
    provider: ProviderId,
    built: ProjectedRequest,
    sent: LlmRequest,
    max_tokens_estimate: int | None,
) -> tuple[AdmissionRequest, Admitted | AdmissionRefused]:
    """Measure ``built`` (the projection the request was built from: the same system, messages and tools,
    before any reasoning stripping) and ask admission for ``sent`` (what will go out).

    A cancellation while the answer is pending releases the admission, then propagates.  An answer that is
    neither ``Admitted`` nor ``AdmissionRefused`` (with a string message) raises ``InvalidInputError``.
    """
    estimate = estimate_tokens(built)
    asked = AdmissionRequest(
        purpose=purpose,
        provider=provider.value,
        model=sent.model,
        input_tokens=estimate,
        output_reservation=output_reservation(sent.max_tokens, max_tokens_estimate),
        attempt=attempt,
        request_id=request_id,
        round=round_number,
        request=sent,
        max_tokens_estimate=max_tokens_estimate,
    )
    try:
        return asked, check_admission_answer(await port.admit(asked))
    except asyncio.CancelledError:
        await release_quietly(port, asked)
        raise


async def release_quietly(port: Admission, request: AdmissionRequest) -> None:
    """Release an unused admission; a failing release changes nothing of the outcome."""
    try:
        await port.release(request)
    except Exception:  # the host's failure to take the release back is its own
        return
