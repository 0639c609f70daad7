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

A port of the session-store contract runs the kit's generated store programs (rounds of concurrent
operations, restarts and crashes, judged as a history) against its own store adapter::

    from hypothesis import given, settings
    from relavium_conformance.strategies import check_store_program, store_programs

    CAPABILITIES = ("session-store", "store:durable", "store:forget", ...)  # what the store's hello declares

    @settings(max_examples=100, deadline=None)
    @given(program=store_programs(CAPABILITIES))
    def test_my_store_meets_the_store_model(program):
        result = check_store_program(my_store_adapter, CAPABILITIES, program)
        assert result.passed, result.case_yaml

``store_programs(capabilities, area=None)`` narrows to one of ``STORE_AREAS``; ``my_store_adapter`` is a
callable that opens a new connection to the store (an :class:`~relavium_conformance.InProcessAdapter` or a
:class:`~relavium_conformance.StdioAdapter`; every connection of one program opens the same storage
location).  ``check_store_program`` answers a :class:`StoreProgramResult`; its ``case_yaml`` is the
program as a store case (its first line says why it failed), ready for a directory that
``run --profile session-store --cases DIR`` replays.
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
from relavium_conformance._store.generation import AREAS as STORE_AREAS
from relavium_conformance._store.generation import (
    StoreProgramResult,
    check_store_program,
    store_programs,
)

__all__ = [
    "AREAS",
    "GENERATED_CLAUSES",
    "STORE_AREAS",
    "StoreProgramResult",
    "build_case",
    "case_to_yaml",
    "check_store_program",
    "generated_cases",
    "scenario_actions",
    "store_programs",
]
