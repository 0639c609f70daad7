"""The selftest's breaks that no hand-written case catches, and the generated area that finds each.

Kept apart from :mod:`relavium_conformance._corpus.generated` so that the selftest can name them without
Hypothesis installed (it then reports them missed, saying why).  ``docs/proofs.md`` lists them.
"""

from __future__ import annotations

__all__ = ["BOUNDARY_BREAKS", "PROOF_EXAMPLES", "PROOF_SEED"]

BOUNDARY_BREAKS: dict[str, str] = {
    "window-of-message-units": "history",
    "declared-summary-read-as-none": "history",
    "trim-counts-its-marker": "history",
    "budget-refusal-after-failover-frees-the-slot": "chain",
    "failed-recovery-latches": "overflow",
    "after-turn-reservation-ignores-estimate": "compaction",
    "fallback-trim-keeps-the-new-reply": "compaction",
}
"""Break name -> the area whose generated cases find it (within :data:`PROOF_EXAMPLES` examples at
:data:`PROOF_SEED`): the selftest runs those cases for it when every hand-written case passes."""
PROOF_SEED = 0
PROOF_EXAMPLES = 100
