"""Wire twins: a seam-level case marked ``wire_twin`` also runs over loopback HTTP as ``<id>-over-http``."""

from __future__ import annotations

from typing import Any

import pytest

from relavium_conformance._corpus.cases import Case, ProviderErrorStep
from relavium_conformance._corpus.discovery import load_transcripts
from relavium_conformance._corpus.twins import TWIN_SUFFIX, wire_twin
from relavium_conformance._errors import KitUsageError
from relavium_conformance._run.dialect_render import render
from relavium_conformance._wire.model import kit_parse

TWINS = [case for case in load_transcripts() if case.id.endswith(TWIN_SUFFIX)]


def test_every_marked_case_has_its_twin_and_only_those() -> None:
    marked = {case.id for case in load_transcripts() if case.wire_twin}
    assert {case.id.removesuffix(TWIN_SUFFIX) for case in TWINS} == marked
    assert len(TWINS) >= 10  # the provider and overflow areas, at both levels


@pytest.mark.parametrize("twin", TWINS, ids=[t.id for t in TWINS])
def test_a_twin_is_its_case_over_http(twin: Case) -> None:
    [case] = [c for c in load_transcripts() if c.id == twin.id.removesuffix(TWIN_SUFFIX)]
    assert twin.clauses == case.clauses
    assert twin.steps == case.steps
    assert twin.expect == case.expect
    assert set(twin.capabilities) == {*case.capabilities, "wire"}
    assert twin.setup.wire
    # every invocation of the script can be written out in each dialect the twin serves
    for dialect in twin.setup.wire:
        for call in twin.provider:
            assert render(dialect, list(call), "m") is not None


def _case(**extra: Any) -> Case:
    data = {"id": "provider/x", "title": "t", "clauses": ["AS-CAP-020"], "steps": [{"op": "start"}]}
    return kit_parse(Case, {**data, "wire_twin": True, **extra})


def test_a_twin_takes_its_endpoints_from_the_agent_and_its_recorded_failures() -> None:
    chain = {"agent": {"provider": "anthropic", "fallback_chain": [{"provider": "deepseek", "model": "d"}]}}
    assert wire_twin(_case(setup=chain)).setup.wire == {"anthropic": "official", "deepseek": "official"}
    assert wire_twin(_case()).setup.wire == {"openai": "official"}  # the default agent's provider
    custom = [[{"provider_error": "openai-context-length-custom-endpoint"}]]
    twin = wire_twin(_case(provider=custom))
    assert twin.setup.wire == {"openai": "custom"}
    assert isinstance(twin.provider[0][0], ProviderErrorStep)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"setup": {"agent": {"provider": "mistral"}}}, "no HTTP dialect"),
        ({"provider": [[{"do": "abort"}, {"type": "text_delta", "text": "x"}]]}, "no do or hold"),
        ({"expect": {"provider_requests": [{"request": {"messages": []}}]}}, "seam-level request"),
        (
            {
                "provider": [
                    [{"provider_error": "openai-context-length-custom-endpoint"}],
                    [{"provider_error": "openai-context-length-exceeded"}],
                ]
            },
            "mixes official and custom",
        ),
    ],
)
def test_a_case_both_levels_cannot_play_is_refused(extra: dict[str, Any], reason: str) -> None:
    with pytest.raises(KitUsageError, match=reason):
        wire_twin(_case(**extra))
