"""The typed results of the history operations (KD-COMP-5) and the memory-policy refusal.

``trimHistory`` returns a :data:`TrimResult`; ``compact`` a :data:`CompactionResult`.  Either may be
the :class:`MemoryPolicyRefusal` the session's getters also expose.  Messages are fixed texts with no
user data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Literal

from pydantic import Field

from relavium_reference._model.messages import Compaction, TextPart
from relavium_reference._model.shapes import WireModel

__all__ = [
    "UNKNOWN_WINDOW_DISCLOSURE",
    "BoundaryMarker",
    "Compacted",
    "CompactionBudgetRefused",
    "CompactionCancelled",
    "CompactionFailed",
    "CompactionResult",
    "CompactionStart",
    "CompactionStartHook",
    "MemoryPolicyRefusal",
    "NothingToCompact",
    "NothingToTrim",
    "TrimResult",
    "Trimmed",
]

_NonNegative = Annotated[int, Field(ge=0)]


class MemoryPolicyRefusal(WireModel):
    """What ``compact`` and ``trimHistory`` return when the memory policy forbids them."""

    kind: Literal["policy_refused"] = "policy_refused"
    memory: Literal["none", "window"]
    message: str


class Trimmed(WireModel):
    kind: Literal["trimmed"] = "trimmed"
    kept_message_count: _NonNegative
    dropped_message_count: _NonNegative
    kept_turn_count: _NonNegative


class NothingToTrim(WireModel):
    kind: Literal["nothing_to_trim"] = "nothing_to_trim"
    message_count: _NonNegative


class NothingToCompact(WireModel):
    kind: Literal["nothing_to_compact"] = "nothing_to_compact"


class CompactionFailed(WireModel):
    kind: Literal["failed"] = "failed"
    message: str


class Compacted(WireModel):
    kind: Literal["compacted"] = "compacted"
    kept_turn_count: _NonNegative


class CompactionCancelled(WireModel):
    kind: Literal["cancelled"] = "cancelled"


class CompactionBudgetRefused(WireModel):
    kind: Literal["budget_refused"] = "budget_refused"
    message: str
    moment_opened: bool


TrimResult = Trimmed | NothingToTrim | MemoryPolicyRefusal
CompactionResult = (
    Compacted
    | NothingToCompact
    | CompactionFailed
    | CompactionCancelled
    | CompactionBudgetRefused
    | MemoryPolicyRefusal
)

UNKNOWN_WINDOW_DISCLOSURE = (
    "The model's context window is unknown, so each summary pass of this compaction is limited to "
    "16,384 input tokens; the summary may leave out more than usual."
)
"""The fixed unknown-window disclosure (KD-COMP-4)."""


class CompactionStart(WireModel):
    """What ``onCompactionStart`` is handed before the first admitted pass of an unknown-window
    manual compaction (KD-COMP-4)."""

    reason: Literal["manual"] = "manual"
    window_known: Literal[False] = False
    soft_input_bound_tokens: int = 16384
    disclosure: str = UNKNOWN_WINDOW_DISCLOSURE


CompactionStartHook = Callable[[CompactionStart], Awaitable[None]]
"""The host's acknowledgement: returning acknowledges; raising refuses (nothing is sent)."""


class BoundaryMarker(WireModel):
    """The durable boundary row a compaction or a trim appends: a ``system`` row whose
    ``compaction.droppedThroughSequence`` names the last dropped row (a trim's has no content)."""

    role: Literal["system"] = "system"
    content: tuple[TextPart, ...] = ()
    compaction: Compaction
