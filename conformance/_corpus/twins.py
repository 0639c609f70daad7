"""The wire-level twin of a seam-level case: the same script and expectations, served over loopback HTTP.

A case that says ``wire_twin: true`` runs at both levels: as written (the kit plays the provider through
``provider.open``/``provider.next``), and as ``<id>-over-http``, where the kit's loopback server plays the
same script in the dialect of each provider the agent names (capability ``wire``, KD-WIRE-1, KD-WIRE-2).
Its recorded failures (``{provider_error: name}``) are served as recorded; an endpoint is ``custom`` when a
recorded failure of the script is a downgraded one (it came from a custom base URL), ``official`` otherwise.

Only a case both levels can play may have a twin: providers with an HTTP dialect (Anthropic, OpenAI, Gemini,
DeepSeek), no ``do``/``hold`` steps (a wire stream is written as fast as it is read), no expectation on the
seam-level request shape (``provider_requests[].request``: over HTTP the request is the vendor's body), and
not one mixing official and custom recorded failures.  Anything else is refused when the corpus loads.
"""

from __future__ import annotations

from typing import Any

from relavium_conformance._corpus.cases import Case, DoStep, HoldStep, ProviderErrorStep
from relavium_conformance._corpus.provider_errors import provider_error
from relavium_conformance._errors import KitUsageError

__all__ = ["TWIN_DIALECTS", "TWIN_SUFFIX", "wire_twin"]

TWIN_SUFFIX = "-over-http"
TWIN_DIALECTS = ("anthropic", "openai", "deepseek", "gemini")
_DEFAULT_PROVIDER = "openai"  # the default agent's (docs/transcripts.md)


def _providers(case: Case) -> list[str]:
    agent = case.setup.agent or {}
    names = [str(agent.get("provider", _DEFAULT_PROVIDER))]
    names += [str(entry.get("provider", _DEFAULT_PROVIDER)) for entry in agent.get("fallback_chain") or ()]
    return list(dict.fromkeys(names))


def _endpoint_kind(case: Case) -> str:
    kinds = set()
    for call in case.provider:
        for step in call:
            if isinstance(step, ProviderErrorStep):
                downgraded = provider_error(step.provider_error).evidence == "downgraded"
                kinds.add("custom" if downgraded else "official")
    if len(kinds) > 1:
        raise KitUsageError(f"{case.id}: wire_twin mixes official and custom recorded failures")
    return kinds.pop() if kinds else "official"


def wire_twin(case: Case) -> Case:
    """The ``-over-http`` twin of ``case`` (which says ``wire_twin: true``)."""
    where = f"{case.id}: wire_twin"
    if case.setup.wire is not None:
        raise KitUsageError(f"{where} on a case that is wire-level already")
    providers = _providers(case)
    unknown = [name for name in providers if name not in TWIN_DIALECTS]
    if unknown:
        raise KitUsageError(f"{where}: no HTTP dialect for {', '.join(unknown)}")
    if any(isinstance(step, DoStep | HoldStep) for call in case.provider for step in call):
        raise KitUsageError(f"{where}: a wire stream has no do or hold steps")
    if any("request" in expected for expected in case.expect.provider_requests or ()):
        raise KitUsageError(f"{where}: provider_requests[].request is the seam-level request shape")
    kind = _endpoint_kind(case)
    data: dict[str, Any] = case.model_dump(mode="python", by_alias=True, exclude={"source"})
    data.update(
        id=case.id + TWIN_SUFFIX,
        title=f"{case.title} (over HTTP)",
        capabilities=[*case.capabilities, "wire"],
        wire_twin=False,
        setup={**data["setup"], "wire": dict.fromkeys(providers, kind)},
        provider=[list(call) for call in case.provider],
    )
    twin = Case.model_validate({**data, "source": case.source})
    return twin
