"""Budget admission and the usage writer: the values that cross the two ports (no I/O).

Admission is the host's cost governor, asked before every provider attempt (main turn, tool round,
retry, summariser pass) with the request it is about to send, that request's input estimate (taken on
the request as built, before any reasoning stripping) and the session's frozen ``maxTokensEstimate``
fallback.  The usage writer is the host's one direct accounting writer (KD-USE-1): a fresh session
opens a complete-zero basis, a resumed or reseated one adopts the existing owner; a pending record is
acknowledged before each invocation and the attempt's actual usage is resolved through it, which answers
the money that public cost completion then publishes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relavium_reference._model.llm import LlmRequest
from relavium_reference._model.vocabulary import ProviderId

__all__ = [
    "DEFAULT_OUTPUT_RESERVATION",
    "AdmissionDecision",
    "AdmissionRequest",
    "Admit",
    "Coverage",
    "Purpose",
    "Refuse",
    "UsageBasis",
    "UsagePending",
    "UsageResolved",
    "UsageSettled",
    "UsageTotals",
]

DEFAULT_OUTPUT_RESERVATION = 4096
"""The output reservation when neither the request's ``maxTokens`` nor the fallback is set (KD-COMP-2)."""

Purpose = Literal["turn", "summary"]
Coverage = Literal["complete", "pending", "unknown"]


@dataclass(frozen=True)
class AdmissionRequest:
    """What admission is asked with, once per provider attempt."""

    request_id: str
    """The identity of this attempt's request: unique within the session."""
    purpose: Purpose
    attempt: int
    """1-based, counting the real attempts of the turn (or of the compaction) so far."""
    round: int
    """0 for a turn's first request, then one more per tool round."""
    provider: ProviderId
    model: str
    request: LlmRequest
    input_estimate: int
    max_tokens_estimate: int | None
    output_reservation: int


@dataclass(frozen=True)
class Admit:
    kind: Literal["admit"] = "admit"


@dataclass(frozen=True)
class Refuse:
    """The governor refused: the attempt must not egress. ``cap_microcents`` is the cap that refused."""

    cap_microcents: int
    kind: Literal["refuse"] = "refuse"


AdmissionDecision = Admit | Refuse


@dataclass(frozen=True)
class UsageTotals:
    """The writer's durable view: amount, missing-price count and coverage, always refreshed together."""

    amount_microcents: int = 0
    missing_price_count: int = 0
    coverage: Coverage = "complete"


UsageBasis = Literal["fresh", "adopt"]


@dataclass(frozen=True)
class UsagePending:
    """Recorded (and acknowledged) before an invocation may egress."""

    attempt: int
    purpose: Purpose
    provider: ProviderId
    model: str


@dataclass(frozen=True)
class UsageResolved:
    """The attempt's actual usage; ``reported`` is false when the provider reported none."""

    attempt: int
    purpose: Purpose
    model: str
    input_tokens: int
    output_tokens: int
    reported: bool = True


@dataclass(frozen=True)
class UsageSettled:
    """The writer's answer to a resolved record: the attempt's money and the refreshed totals."""

    cost_microcents: int
    priced: bool
    totals: UsageTotals
