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

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.vocabulary import ProviderId

__all__ = [
    "MAX_MICROCENTS",
    "Coverage",
    "ModelPrice",
    "Purpose",
    "UsageBasis",
    "UsagePending",
    "UsageResolved",
    "UsageSettled",
    "UsageTotals",
    "check_settled",
    "check_totals",
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


#: The largest amount (or count) a writer may answer: what a signed 64-bit column can hold.
MAX_MICROCENTS = 2**63 - 1
_COVERAGES = frozenset({"complete", "pending", "unknown"})


def _amount(value: object, location: str) -> None:
    if type(value) is not int:  # bool is an int subclass, and never an amount
        raise InvalidInputError("a usage writer's answer must be an integer", location=location)
    if not 0 <= value <= MAX_MICROCENTS:
        raise InvalidInputError("a usage writer's answer must lie between 0 and 2**63 - 1", location=location)


def check_totals(value: object, location: str = "totals") -> UsageTotals:
    """``value`` when it is a well-formed :class:`UsageTotals` (what ``open`` answers, and the totals of
    a settlement); else :class:`InvalidInputError` naming the field.  The engine treats such an answer as
    the writer failing (the session latches), never as money to publish."""
    if not isinstance(value, UsageTotals):
        raise InvalidInputError("a usage writer's totals must be a UsageTotals", location=location)
    _amount(value.amount_microcents, f"{location}.amountMicrocents")
    _amount(value.missing_price_count, f"{location}.missingPriceCount")
    if not isinstance(value.coverage, str) or value.coverage not in _COVERAGES:
        raise InvalidInputError(
            "a usage writer's coverage must be complete, pending or unknown", location=f"{location}.coverage"
        )
    return value


def check_settled(value: object) -> UsageSettled:
    """``value`` when it is a well-formed :class:`UsageSettled` (what ``resolved`` answers); else
    :class:`InvalidInputError` naming the field (the engine then treats the write as failed)."""
    if not isinstance(value, UsageSettled):
        raise InvalidInputError("a usage writer's settlement must be a UsageSettled", location="settled")
    _amount(value.cost_microcents, "settled.costMicrocents")
    if not isinstance(value.priced, bool):
        raise InvalidInputError("a usage writer's priced flag must be a bool", location="settled.priced")
    check_totals(value.totals, "settled.totals")
    return value
