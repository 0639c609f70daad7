"""The admission seam and the usage writer: the two accounting ports every provider attempt goes through.

:class:`AdmissionPort` is the host's cost governor.  The default, :data:`ALWAYS_ADMIT`, admits every
attempt (a session without a governor); a host with a cap answers :class:`Refuse` naming it.  An attempt
whose admission is granted but never used (a cancel while admission was pending or before the stream
opened) is released.

:class:`UsageWriter` is the persisted host's one direct accounting writer (KD-USE-1).  A session without
one keeps the engine's own unpriced counters; with one, every invocation is preceded by an acknowledged
pending record and its actual usage is resolved through it, and the writer's answer is the money that
``cost:updated`` publishes, only after that answer arrived.

:func:`ask_admission` is the one place a request is measured and admission asked: a turn's attempts,
its tool rounds and retries, and (later) summariser passes all go through it.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from relavium_reference._model.budget import (
    DEFAULT_OUTPUT_RESERVATION,
    AdmissionDecision,
    AdmissionRequest,
    Admit,
    Purpose,
    UsageBasis,
    UsagePending,
    UsageResolved,
    UsageSettled,
    UsageTotals,
)
from relavium_reference._model.llm import LlmRequest
from relavium_reference._model.vocabulary import ProviderId
from relavium_reference._rules.projection import ProjectedRequest, estimate_tokens

__all__ = [
    "ALWAYS_ADMIT",
    "AdmissionPort",
    "AlwaysAdmit",
    "UsageWriter",
    "ask_admission",
    "output_reservation",
    "release_quietly",
]


@runtime_checkable
class AdmissionPort(Protocol):
    async def admit(self, request: AdmissionRequest) -> AdmissionDecision: ...

    async def release(self, request_id: str) -> None: ...


class AlwaysAdmit:
    """The governor of a session that has none: every attempt is admitted, nothing to release."""

    async def admit(self, request: AdmissionRequest) -> AdmissionDecision:
        return Admit()

    async def release(self, request_id: str) -> None:
        return None


ALWAYS_ADMIT = AlwaysAdmit()


@runtime_checkable
class UsageWriter(Protocol):
    async def open(self, basis: UsageBasis) -> UsageTotals:
        """Establish the basis (``fresh``: complete zero) or adopt the owner's durable totals."""
        ...

    async def pending(self, record: UsagePending) -> None: ...

    async def resolved(self, record: UsageResolved) -> UsageSettled: ...


def output_reservation(max_tokens: int | None, fallback: int | None) -> int:
    """KD-COMP-2: the request's ``maxTokens``, else the frozen ``maxTokensEstimate``, else 4096."""
    if max_tokens is not None:
        return max_tokens
    if fallback is not None:
        return fallback
    return DEFAULT_OUTPUT_RESERVATION


async def ask_admission(
    port: AdmissionPort,
    *,
    request_id: str,
    purpose: Purpose,
    attempt: int,
    round_number: int,
    provider: ProviderId,
    built: LlmRequest,
    sent: LlmRequest,
    max_tokens_estimate: int | None,
) -> AdmissionDecision:
    """Measure ``built`` (the request as built, before any reasoning stripping) and ask admission for
    ``sent`` (what will go out).

    A cancellation while the answer is pending releases the admission, then propagates.
    """
    estimate = estimate_tokens(
        ProjectedRequest(system=built.system or "", messages=built.messages, tools=built.tools)
    )
    asked = AdmissionRequest(
        request_id=request_id,
        purpose=purpose,
        attempt=attempt,
        round=round_number,
        provider=provider,
        model=sent.model,
        request=sent,
        input_estimate=estimate,
        max_tokens_estimate=max_tokens_estimate,
        output_reservation=output_reservation(sent.max_tokens, max_tokens_estimate),
    )
    try:
        return await port.admit(asked)
    except asyncio.CancelledError:
        await release_quietly(port, request_id)
        raise


async def release_quietly(port: AdmissionPort, request_id: str) -> None:
    """Release an unused admission; a failing release changes nothing of the outcome."""
    try:
        await port.release(request_id)
    except Exception:  # the host's failure to take the release back is its own
        return
