"""The messages of budget admission and of the usage writer (``host.admit``, ``host.releaseAdmission``,
``host.usage``): the kit's own models, like :mod:`relavium_conformance._wire.protocol_messages`.

Admission (KD-FIN-2) is asked once per provider attempt with the request about to go out, its input
estimate (KD-COMP-2, taken before any reasoning stripping), the frozen ``maxTokensEstimate`` fallback and
the output reservation; the kit admits or refuses naming a cap.  The usage writer (KD-USE-1) is opened
(``fresh`` basis or ``adopt`` of the existing owner), told of each invocation before it egresses
(``pending``) and of each attempt's actual usage afterwards (``resolved``), which it answers with the money.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from relavium_conformance._wire.protocol_messages import RequestJson, _Msg

__all__ = [
    "HostAdmitParams",
    "HostAdmitResult",
    "HostReleaseAdmissionParams",
    "HostUsageParams",
    "HostUsageResult",
]

NonNeg = Annotated[int, Field(ge=0)]


class HostAdmitParams(_Msg):
    handle: str
    request_id: Annotated[str, Field(min_length=1)]
    purpose: Literal["turn", "summary"]
    attempt: Annotated[int, Field(ge=1)]
    round: NonNeg
    provider: str
    model: str
    request: RequestJson
    input_estimate: NonNeg
    max_tokens_estimate: Annotated[int, Field(gt=0)] | None = None
    output_reservation: NonNeg


class HostAdmitResult(_Msg):
    decision: Literal["admit", "refuse"]
    cap_microcents: NonNeg | None = None
    """The cap that refused (``refuse`` only)."""


class HostReleaseAdmissionParams(_Msg):
    handle: str
    request_id: Annotated[str, Field(min_length=1)]


class HostUsageParams(_Msg):
    handle: str
    phase: Literal["open", "pending", "resolved"]
    basis: Literal["fresh", "adopt"] | None = None
    """``open`` only."""
    attempt: Annotated[int, Field(ge=1)] | None = None
    purpose: Literal["turn", "summary"] | None = None
    provider: str | None = None
    model: str | None = None
    input_tokens: NonNeg | None = None
    output_tokens: NonNeg | None = None
    reported: bool | None = None
    """``resolved`` only: false when the provider reported no usage for the attempt."""


class HostUsageResult(_Msg):
    """The writer's answer: the attempt's money (``resolved``) and its durable totals, refreshed together."""

    cost_microcents: NonNeg | None = None
    priced: bool | None = None
    amount_microcents: NonNeg | None = None
    missing_price_count: NonNeg | None = None
    coverage: Literal["complete", "pending", "unknown"] | None = None
