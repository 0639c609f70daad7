"""Generated cases: Hypothesis builds random cases from the kit's model of the rules; any adapter runs them.

The hand-written corpus pins each rule in one scenario; generated cases mix the rules in sequences no one
wrote down and seek their boundaries.  One module per area of the agent-session profile, each a small
model of the specification that predicts every result, refusal and event, so that each generated case
carries its own normative assertions and runs through the ordinary case executor (and the ordinary judge)
against any adapter.  A shrunk counterexample is an ordinary case: :func:`case_to_yaml` writes it as a
golden transcript.

Areas (``fuzz --area``): see :data:`AREAS`.  Needs Hypothesis (the kit's ``strategies`` extra).

Lives here: one module per area (``chain.py``, ``compaction.py``, ``history.py``, ``lifecycle.py``,
``overflow.py``, ``presend.py``, ``usage.py``) and, in this module, what they share (the case writer, the
common strategies).

Must not live here: running or judging a generated case (the ordinary ``_run/`` and ``_judge/`` do), the
store profile's generated programs (``_store/generation.py``), and any engine import: the model here is
the kit's own reading of the rules.

May import: ``_errors``, ``_data``, ``_version``, ``_wire`` and its own room ``_corpus`` (as the room
does; tests/test_layering.py holds the order).
"""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO

from hypothesis import strategies as st
from ruamel.yaml import YAML

from relavium_conformance._corpus.boundary_breaks import BOUNDARY_BREAKS, PROOF_EXAMPLES, PROOF_SEED
from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.generated.chain import chain_cases, dialect_cases
from relavium_conformance._corpus.generated.compaction import compaction_cases
from relavium_conformance._corpus.generated.history import history_cases
from relavium_conformance._corpus.generated.lifecycle import (
    COMPACTION_CLAUSES,
    GENERATED_CLAUSES,
    build_case,
    lifecycle_cases,
    scenario_actions,
)
from relavium_conformance._corpus.generated.overflow import overflow_cases
from relavium_conformance._corpus.generated.presend import presend_cases
from relavium_conformance._corpus.generated.usage import usage_cases
from relavium_conformance._errors import KitUsageError

__all__ = [
    "AREAS",
    "BOUNDARY_BREAKS",
    "COMPACTION_CLAUSES",
    "GENERATED_CLAUSES",
    "PROOF_EXAMPLES",
    "PROOF_SEED",
    "build_case",
    "case_to_yaml",
    "generated_cases",
    "scenario_actions",
]

AREAS: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "lifecycle": lifecycle_cases,
    "history": history_cases,
    "chain": chain_cases,
    "presend": presend_cases,
    "overflow": overflow_cases,
    "dialects": dialect_cases,
    "usage": usage_cases,
    "compaction": compaction_cases,
}
"""Each area's strategy: ``lifecycle`` (start, sends, abort, cancel, the hard cap, tool rounds, resume, user
commands, manual compaction), ``history`` (memory policies and getters, projection, trimHistory bounds),
``chain`` (the fallback walk, budget admission of each attempt, the hard cap), ``presend`` (the automatic
compaction trigger at its threshold and reservation bounds, the estimate, nothing to fold), ``overflow`` (a
context overflow with and without its one recovery: permission, authority, nothing to fold, a failed pass,
a final retry), ``dialects`` (the chain model's cases over loopback HTTP, each provider of the walk one of
the vendor dialects: capability ``wire``), ``usage`` (the usage writer's money in each commit and cost
record, priced or not, and a failed write that latches), ``compaction`` (the after-turn trigger at its
threshold and reservation bounds, set or at their defaults, ``afterTurnCompaction`` unset, true or false;
a pass that succeeds, fails into the ``maxMessages`` trim or keeps the history, or is refused at its first
admission; pre-send passes within every known window less 4096, four at most, no soft bound, a failing or
refused pass anywhere in the walk; an irreducible history skipped)."""


def generated_cases(area: str | None = None) -> st.SearchStrategy[Case]:
    """Hypothesis strategy of generated cases: one area's, or every area's (use with any adapter: see
    ``docs/transcripts.md``).  An unknown area is a :class:`KitUsageError`."""
    if area is None:
        return st.one_of(*(strategy() for strategy in AREAS.values()))
    if area not in AREAS:
        raise KitUsageError(f"no generated area {area!r}: choose one of {', '.join(AREAS)}")
    return AREAS[area]()


def case_to_yaml(case: Case) -> str:
    """A case as golden-transcript YAML (for writing a shrunk counterexample into the corpus)."""
    data = case.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("source", None)
    out = StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = None
    yaml.width = 110
    yaml.dump(data, out)
    return out.getvalue()
