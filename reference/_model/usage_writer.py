"""The usage writer: the values that cross its port (no I/O).

Admission itself (its request and answers) lives with the other invocation seams in
:mod:`relavium_reference._model.invocation`.  The usage writer is the host's one direct accounting
writer (KD-USE-1): a fresh session opens a complete-zero basis, a resumed or reseated one adopts the
existing owner; a pending record is acknowledged before each invocation and the attempt's actual usage
is resolved through it, which answers the money that public cost completion then publishes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relavium_reference._model.vocabulary import ProviderId

__all__ = [
    "Coverage",
    "ModelPrice",
    "Purpose",
    "UsageBasis",
    "UsagePending",
    "UsageResolved",
    "UsageSettled",
    "UsageTotals",
]

Purpose = Literal["turn", "summary"]
Coverage = Literal["complete", "pending", "unknown"]


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


@dataclass(frozen=True)
class ModelPrice:
    """A host's price of one model, in microcents per token (what a writer prices a resolution with)."""

    input_microcents: int
    output_microcents: int

    def cost(self, input_tokens: int, output_tokens: int) -> int:
        return input_tokens * self.input_microcents + output_tokens * self.output_microcents
