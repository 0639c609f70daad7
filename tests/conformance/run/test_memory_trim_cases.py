"""The memory and trim cases: they pass on the reference, and a port declaring neither capability gets
``unsupported`` for every one of them, never a failure."""

from __future__ import annotations

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases_sync
from relavium_conformance._wire.adapters import InProcessAdapter

_OTHERS = ("core", "user-commands", "resume", "export", "persistence")


def _memory_and_trim_cases():  # type: ignore[no-untyped-def]
    cases = select_cases(load_cases(), ["memory/*", "trim/*"])
    assert len(cases) >= 20
    return cases


def test_a_port_declaring_neither_capability_gets_unsupported() -> None:
    adapter = InProcessAdapter(
        "no-memory", lambda callback: ReferenceImplementation(callback, capabilities=_OTHERS)
    )
    results = run_cases_sync(adapter, _memory_and_trim_cases()).run.cases
    assert {r.status for r in results} == {CaseStatus.UNSUPPORTED}
    assert all("memory-policy" in (r.reason or "") or "trim" in (r.reason or "") for r in results)


def test_the_reference_passes_every_memory_and_trim_case() -> None:
    adapter = InProcessAdapter("reference", lambda callback: ReferenceImplementation(callback))
    results = run_cases_sync(adapter, _memory_and_trim_cases()).run.cases
    assert [r.id for r in results if r.status is not CaseStatus.PASSED] == []
