"""Generated cases, area ``usage``: the usage writer's answers, the money each turn carries, a failed write.

The model (the kit's own reading of AS-USE and KD-USE-1, never the engine's code):

- every provider call of a turn is resolved once by the host's writer, which answers the money: a cost
  and whether it priced the call;
- a completed turn's commit carries one cost entry: the sum the writer answered for the turn's calls, the
  number of calls, and how many the writer did not price; a failed turn that still billed records the same
  through the cost record instead;
- a write that fails latches the session at once: the turn fails ``internal`` and nothing of it is
  committed (the case ends there: what a latched session answers next is another case's).

Strategies draw text turns (one call), tool rounds (two calls) and billed failures, each call priced or
not, with a cost of 0 (the edge between free and unpriced) or more, and sometimes a failed write last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case

__all__ = ["USAGE_CLAUSES", "build_usage_case", "usage_cases"]

USAGE_CLAUSES = (
    "AS-USE-006",  # the commit and the cost record carry the writer's money
    "AS-USE-009",  # a failed write latches the session
)
USAGE_KIT_DEFINED = ("KD-USE-1",)

KINDS = ("text", "tool", "billed-error")
Answer = tuple[bool, int]  # (priced, cost in microcents)


@dataclass
class _Usage:
    resolved: list[dict[str, Any]] = field(default_factory=list)
    provider: list[list[dict[str, Any]]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    costs: list[dict[str, Any]] = field(default_factory=list)
    latched: bool = False

    def send(self, kind: str, answers: list[Answer]) -> None:
        number = len(self.steps) + 1
        calls = 2 if kind == "tool" else 1
        money = [answers[n] if n < len(answers) else (True, 1) for n in range(calls)]
        for priced, cost in money:
            self.resolved.append({"cost_microcents": cost if priced else 0, "priced": priced})
        entry = {
            "costMicrocents": sum(cost if priced else 0 for priced, cost in money),
            "callCount": calls,
            "unpricedCalls": sum(1 for priced, _ in money if not priced),
        }
        if kind == "tool":
            call = f"call-{number}"
            self.provider.append(
                [
                    {"type": "tool_call_start", "id": call, "name": "echo"},
                    {"type": "tool_call_end", "id": call},
                    _stop("tool_use"),
                ]
            )
        if kind == "billed-error":
            error = {"kind": "bad_request", "status": 400, "message": "refused"}
            self.provider.append(
                [{"type": "error", "error": error, "usage": {"inputTokens": 2, "outputTokens": 0}}]
            )
            self.steps.append({"op": "send", "text": f"q{number}", "expect": {"status": "failed"}})
            self.costs.append(entry)
            return
        self.provider.append([{"type": "text_delta", "text": f"a{number}"}, _stop("stop")])
        self.steps.append(
            {"op": "send", "text": f"q{number}", "expect": {"status": "completed", "text": f"a{number}"}}
        )
        self.commits.append({"costs": [entry]})

    def failed_write(self) -> None:
        """A text turn whose one resolution fails: the session latches, the turn fails internal."""
        number = len(self.steps) + 1
        self.resolved.append({"fail": True})
        self.provider.append([{"type": "text_delta", "text": f"a{number}"}, _stop("stop")])
        expect = {"status": "failed", "error": {"code": "internal", "retryable": False}}
        self.steps.append({"op": "send", "text": f"q{number}", "expect": expect})
        self.latched = True


def _stop(reason: str) -> dict[str, Any]:
    return {"type": "stop", "stopReason": reason, "usage": {"inputTokens": 3, "outputTokens": 1}}


def build_usage_case(sends: list[tuple[str, list[Answer]]], fail_last: bool, *, name: str = "usage") -> Case:
    """The case for ``sends`` (each its kind and its calls' answers), with a failed write after them when
    ``fail_last``; every expectation the model predicts."""
    model = _Usage()
    for kind, answers in sends:
        model.send(kind, answers)
    if fail_last:
        model.failed_write()
    marks = {"commits": list(USAGE_KIT_DEFINED)}
    expect: dict[str, Any] = {"provider_request_count": len(model.provider), "commits": model.commits}
    if not model.latched:  # a latched turn's own cost record is not the model's to predict
        expect["costs"] = model.costs
        marks["costs"] = list(USAGE_KIT_DEFINED)
    expect["kit_defined"] = marks
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": "generated: the usage writer's money in each commit and cost record, against the model",
            "clauses": list(USAGE_CLAUSES),
            "capabilities": ["core", "usage", "persistence"],
            "setup": {"deps": {"usageWriter": True}},
            "usage": {"resolved": model.resolved},
            "provider": model.provider,
            "steps": [{"op": "start"}, *model.steps],
            "expect": expect,
        }
    )


def usage_cases() -> st.SearchStrategy[Case]:
    """Cases of the usage area."""
    answer = st.tuples(st.booleans(), st.sampled_from((0, 1, 7, 40)))
    send = st.tuples(st.sampled_from(KINDS), st.lists(answer, min_size=2, max_size=2))
    return st.builds(
        build_usage_case, st.lists(send, min_size=1, max_size=5), st.sampled_from((False, False, True))
    )
