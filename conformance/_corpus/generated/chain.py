"""Generated cases, area ``chain``: the fallback walk, budget admission of every attempt, and the hard cap.

The model (the kit's own reading of AS-SESS-005, AS-FIN-003, AS-CAP and KD-PROV-1 / KD-FIN-1):

- a turn tries the primary once, then each fallback entry up to its ``max_attempts`` (1 when unset);
- before each attempt the host's governor is asked (``admissions``): a refusal settles the turn
  ``budget_exceeded`` and sends nothing more; the turn used a slot of the cap only if an earlier attempt of
  it reached the provider;
- a retryable error kind (``overloaded``, ``timeout``, ``transport``: ``provider_unavailable``) retries or
  advances; a fatal kind (``auth``: ``provider_auth``; ``bad_request``: ``validation``) ends the turn at
  once; an error after streamed content ends it without failing over; a walk that runs out fails with the
  last error's code;
- past ``maxTurns`` a turn fails ``turn_limit`` before any admission or request.

Strategies seek the edges: chains of 1 or 2 entries with ``max_attempts`` unset, 1, 2 or 3; outcomes that
exhaust an entry exactly, fail one attempt short, or succeed on the last attempt; a refusal at the first
attempt (no slot) and at a later one (a slot); caps of 1 to 3 turns and the cap unset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.twins import TWIN_DIALECTS, wire_twin

__all__ = ["CHAIN_CLAUSES", "build_chain_case", "chain_cases", "dialect_cases"]

CHAIN_CLAUSES = (
    "AS-SESS-005",  # retryable errors walk the fallback chain
    "AS-CAP-020",  # a fatal error ends the turn
    "AS-FIN-003",  # every attempt asks admission before it egresses
    "AS-OBS-013",  # a refusal settles budget_exceeded
    "AS-CAP-004",  # past the cap: turn_limit
    "AS-CAP-005",  # past the cap: no provider request
    "AS-CAP-009",  # engaged turns use slots
    "AS-CAP-018",  # a refusal after engagement keeps the slot
)
CHAIN_KIT_DEFINED = ("KD-PROV-1",)

RETRYABLE = ("overloaded", "timeout", "transport")
FATAL = {"auth": "provider_auth", "bad_request": "validation"}
MODELS = ("model-b", "model-c")
_USAGE = {"inputTokens": 5, "outputTokens": 2}


@dataclass
class _Chain:
    entries: list[tuple[str, int]]  # (model, attempts) after the primary
    max_turns: int | None
    used: int = 0
    sends: int = 0
    provider: list[list[dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    admissions: list[dict[str, Any]] = field(default_factory=list)
    admitted: list[dict[str, Any]] = field(default_factory=list)  # the expected admission records
    steps: list[dict[str, Any]] = field(default_factory=list)

    def plan(self) -> list[str]:
        return ["model-a", *(model for model, attempts in self.entries for _ in range(attempts))]

    def send(self, outcomes: list[str]) -> None:
        self.sends += 1
        step: dict[str, Any] = {"op": "send", "text": f"q{self.sends}"}
        if self.max_turns is not None and self.used >= self.max_turns:
            self.steps.append({**step, "expect": {"status": "failed", "error": {"code": "turn_limit"}}})
            return
        expect: dict[str, Any] = {}
        engaged = False
        drawn = iter(outcomes)
        for attempt, model in enumerate(self.plan(), start=1):
            outcome = next(drawn, "ok")
            record = {"attempt": attempt, "round": 0, "model": model}
            if outcome == "refused":
                self.admissions.append({"refuse": 1000 + attempt})
                self.admitted.append({**record, "decision": "refused"})
                expect = {"status": "failed", "error": {"code": "budget_exceeded", "retryable": False}}
                break
            self.admissions.append({})
            self.admitted.append({**record, "decision": "admitted"})
            self.requests.append({"model": model})
            engaged = True
            if outcome == "ok":
                text = f"a{self.sends}"
                self.provider.append([{"type": "text_delta", "text": text}, _stop()])
                expect = {"status": "completed", "text": text}
                break
            if outcome in FATAL:
                self.provider.append([_error(outcome)])
                expect = {"status": "failed", "error": {"code": FATAL[outcome], "retryable": False}}
                break
            if outcome == "content-then-overloaded":
                self.provider.append([{"type": "text_delta", "text": "half"}, _error("overloaded")])
                expect = {"status": "failed", "error": {"code": "provider_unavailable"}}
                break
            self.provider.append([_error(outcome)])  # retryable: the walk goes on, or ends with this code
            expect = {"status": "failed", "error": {"code": "provider_unavailable", "retryable": True}}
        self.used += 1 if engaged else 0
        self.steps.append({**step, "expect": expect})


def _stop() -> dict[str, Any]:
    return {"type": "stop", "stopReason": "stop", "usage": dict(_USAGE)}


def _error(kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"kind": kind, "message": f"{kind} here"}}


def build_chain_case(
    entries: list[int | None],
    max_turns: int | None,
    sends: list[list[str]],
    *,
    name: str = "chain",
    providers: tuple[str, ...] = (),
) -> Case:
    """The case for a chain of fallback entries (each its ``max_attempts``, None: unset), a cap (None:
    unset) and each send's drawn attempt outcomes, with every expectation the model predicts.
    ``providers`` names the primary's provider and each entry's (default openai for all)."""
    model = _Chain(entries=[(MODELS[n], a or 1) for n, a in enumerate(entries)], max_turns=max_turns)
    for outcomes in sends:
        model.send(outcomes)
    named = [*providers, *(["openai"] * (len(entries) + 1 - len(providers)))]
    chain = [
        {"model": MODELS[n], "provider": named[n + 1], **({"max_attempts": a} if a is not None else {})}
        for n, a in enumerate(entries)
    ]
    agent: dict[str, Any] = {"fallback_chain": chain} if chain else {}
    if providers:
        agent["provider"] = named[0]
    deps: dict[str, Any] = {"admission": True, **({"maxTurns": max_turns} if max_turns is not None else {})}
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": "generated: fallback walk, admission of each attempt and the cap, against the model",
            "clauses": list(CHAIN_CLAUSES),
            "kit_defined": list(CHAIN_KIT_DEFINED),
            "capabilities": ["core", "budget"],
            "setup": {"deps": deps, "agent": agent},
            "admissions": model.admissions,
            "provider": model.provider,
            "steps": [{"op": "start"}, *model.steps],
            "expect": {
                "provider_request_count": len(model.requests),
                "provider_requests": model.requests,
                "admissions": model.admitted,
            },
        }
    )


def chain_cases(dialects: bool = False) -> st.SearchStrategy[Case]:
    """Cases of the chain area; with ``dialects``, each provider of the walk is one of the HTTP dialects and
    the case is its ``-over-http`` twin (area ``dialects``: the same model, over loopback HTTP)."""
    attempts = st.sampled_from((None, 1, 2, 3))
    # each send: 0 to 3 retryable failures (the walk's edge: an entry exhausted exactly, one short, one
    # over), then how the attempt after them ends; a refusal after a failover is the slot's edge
    endings = ("ok", *FATAL, "content-then-overloaded", "refused")
    outcomes = st.tuples(st.lists(st.sampled_from(RETRYABLE), max_size=3), st.sampled_from(endings)).map(
        lambda parts: [*parts[0], parts[1]]
    )
    cases = st.builds(
        build_chain_case,
        st.lists(attempts, min_size=1, max_size=2),
        st.sampled_from((None, 1, 2, 3)),
        st.lists(outcomes, min_size=1, max_size=4),
        providers=st.lists(st.sampled_from(TWIN_DIALECTS), min_size=3, max_size=3).map(tuple)
        if dialects
        else st.just(()),
    )
    return cases.map(wire_twin) if dialects else cases


def dialect_cases() -> st.SearchStrategy[Case]:
    """Cases of the dialects area: the chain model over loopback HTTP, every provider a dialect."""
    return chain_cases(dialects=True)
