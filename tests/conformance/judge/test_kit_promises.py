"""What docs/kit-defined.md promises a port, held against the cases and the kit's own messages.

* every field KD-WIRE-1 lists is sent in ``deps.providerEndpoints`` (a port never needs a schema default);
* Gemini's ``/v1/`` path is accepted as KD-WIRE-1 says: the reference, sending it, passes the Gemini cases;
* ``toolHistory`` is demanded on a completed turn only (KD-EVT-1);
* KD-COMP-2's lengths are code points; no case text holds a character outside the Basic Multilingual Plane,
  so a port counting UTF-16 units gets every case's verdict unchanged;
* the checks that bite only in-process are marked on their cases.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.dialect_server import KIT_API_KEY, DialectServer
from relavium_conformance._run.runner import run_cases
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance._wire.protocol_messages import ProviderEndpoint


def _cases() -> list[Case]:
    return [c for c in load_cases() if isinstance(c, Case)]


def test_every_listed_endpoint_field_is_sent() -> None:
    server = DialectServer({"gemini": "official", "openai": "custom"}, None, lambda: None)  # type: ignore[arg-type]
    endpoints = server.endpoints()
    fields = {f.alias or name for name, f in ProviderEndpoint.model_fields.items()}
    assert fields == {"provider", "baseUrl", "official", "apiKey"}
    for endpoint in endpoints:
        assert set(endpoint) == fields
        assert endpoint["apiKey"] == KIT_API_KEY
        ProviderEndpoint.model_validate(endpoint)


GEMINI_CASES = ("wire/gemini-tool-round-trip", "wire/gemini-overflow-and-look-alikes")


@pytest.mark.parametrize("version", ["v1beta", "v1"])
def test_either_gemini_path_version_passes_the_gemini_cases(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    from relavium_reference._rules import dialect_gemini

    monkeypatch.setattr(dialect_gemini, "API_VERSION", version)
    assert dialect_gemini.stream_path("m").startswith(f"/{version}/models/")
    cases = [c for c in load_cases() if c.id in GEMINI_CASES]
    assert len(cases) == len(GEMINI_CASES)
    adapter = InProcessAdapter(f"gemini-{version}", ReferenceImplementation)
    run = asyncio.run(run_cases(adapter, cases, timeout=15.0, snapshots=False)).run
    assert [c.status for c in run.cases] == [CaseStatus.PASSED] * len(cases), [
        c.differences for c in run.cases
    ]


def test_another_gemini_path_still_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from relavium_reference._rules import dialect_gemini

    monkeypatch.setattr(dialect_gemini, "API_VERSION", "v2alpha")
    cases = [c for c in load_cases() if c.id == GEMINI_CASES[0]]
    adapter = InProcessAdapter("gemini-v2alpha", ReferenceImplementation)
    run = asyncio.run(run_cases(adapter, cases, timeout=15.0, snapshots=False)).run
    assert [c.status for c in run.cases] != [CaseStatus.PASSED]


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)


def test_tool_history_is_demanded_on_completed_turns_only() -> None:
    problems = []
    for case in _cases():
        for value in _walk(case.expect.model_dump(exclude_none=True)):
            if not (isinstance(value, dict) and "toolHistory" in value and "stopReason" in value):
                continue
            if value["stopReason"] in ("error", "aborted") and "$if_present" not in (
                value["toolHistory"] or {}
            ):
                problems.append(case.id)
    assert problems == []


def test_no_case_text_lies_outside_the_basic_multilingual_plane() -> None:
    """Code points and UTF-16 units then count every text alike (KD-COMP-2)."""
    found = [
        case.id
        for case in _cases()
        for value in _walk(case.model_dump(exclude_none=True))
        if isinstance(value, str) and any(ord(ch) > 0xFFFF for ch in value)
    ]
    assert found == []


def test_checks_that_bite_only_in_process_are_marked() -> None:
    marked = {c.id: c.in_process_only for c in _cases() if c.in_process_only}
    assert marked == {
        "budget/admission-each-tool-round": ("AS-FIN-001",),
        "memory/getters-equal-the-refusals": ("AS-PROJ-008",),
    }
    with pytest.raises(ValueError, match="in_process_only"):
        Case.model_validate(
            {
                "id": "a/b",
                "title": "t",
                "clauses": ["AS-FIN-003"],
                "steps": [{"op": "start"}],
                "in_process_only": ["AS-FIN-001"],
            }
        )
