"""Hypothesis strategies of generated conformance cases (needs Hypothesis: the kit's ``strategies`` extra,
``pip install 'relavium-conformance[strategies]'``).

A Python port can run the kit's generated scenarios against its own adapter::

    from hypothesis import given
    from relavium_conformance import run_cases_sync
    from relavium_conformance.strategies import case_to_yaml, generated_cases

    @given(case=generated_cases())
    def test_my_engine_meets_the_model(case):
        [result] = run_cases_sync(my_adapter(), [case], snapshots=False).run.cases
        assert result.status.value == "passed", case_to_yaml(case)

``generated_cases(area)`` narrows to one area of the model (``AREAS``: lifecycle, history, ...); with no
area it draws from every area.  A shrunk failure prints as a golden transcript, ready for
``fixtures/transcripts/``.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401  (only to say clearly what is missing)
except ImportError:
    raise ModuleNotFoundError(
        "relavium_conformance.strategies needs Hypothesis, which is not installed: "
        "pip install 'relavium-conformance[strategies]'",
        name="hypothesis",
    ) from None

from relavium_conformance._corpus.generated import (
    AREAS,
    GENERATED_CLAUSES,
    build_case,
    case_to_yaml,
    generated_cases,
    scenario_actions,
)

__all__ = ["AREAS", "GENERATED_CLAUSES", "build_case", "case_to_yaml", "generated_cases", "scenario_actions"]
