"""Generated cases, area ``overflow``: a context-window overflow with and without its one recovery.

The model (the kit's own reading of AS-OVF and AS-CAP):

- an official overflow answer before any content settles the turn ``context_overflow``, unless a recovery
  may run: the memory policy permits automatic work (``summary``, the default when unset), the model has an
  authoritative window, and the working transcript holds at least two exchanges (the latest is kept
  verbatim: with one there is nothing to fold);
- a recovery is one summary pass: a failed pass installs nothing and the original overflow stands; a pass
  that succeeds leaves the kept exchange alone in the working transcript and makes exactly one fresh retry,
  whose overflow is final;
- the turn uses one slot of the cap however it ends (it reached the provider); the summary pass uses none.

Strategies mix completed turns and overflows so the working transcript crosses the two-exchange edge in both
directions (a recovery shrinks it back to one), with the memory unset or ``window`` (no permission), the
window known or unknown (no authority), and caps of 3 to 5 turns (4 most often) or none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case

__all__ = ["OVERFLOW_CLAUSES", "build_overflow_case", "overflow_cases"]

OVERFLOW_CLAUSES = (
    "AS-OVF-001",  # an unrecovered overflow settles context_overflow
    "AS-OVF-005",  # one recovery before content: compaction and one fresh retry
    "AS-OVF-006",  # recovery needs automatic permission and an authoritative window
    "AS-OVF-009",  # nothing to fold or a failed pass keeps the original overflow
    "AS-OVF-013",  # the retry's overflow is final
    "AS-CAP-009",  # engaged turns use slots; the summariser none
)

OVERFLOW = [{"provider_error": "openai-context-length-exceeded"}]
SENDS = ("ok", "ok", "overflow")
_USAGE = {"inputTokens": 10, "outputTokens": 2}

Send = tuple[str, bool, bool]  # (what the first attempt does, the summary pass succeeds, the retry succeeds)


@dataclass
class _Overflow:
    permitted: bool
    window: bool
    max_turns: int | None
    exchanges: int = 0
    used: int = 0
    sends: int = 0
    provider: list[list[dict[str, Any]]] = field(default_factory=list)
    summaries: list[list[dict[str, Any]]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)

    def answer(self) -> dict[str, Any]:
        text = f"a{self.sends}"
        self.provider.append([{"type": "text_delta", "text": text}, _stop()])
        self.exchanges += 1
        return {"status": "completed", "text": text}

    def send(self, kind: str, summary_ok: bool, retry_ok: bool) -> None:
        self.sends += 1
        step: dict[str, Any] = {"op": "send", "text": f"q{self.sends}"}
        if self.max_turns is not None and self.used >= self.max_turns:
            self.steps.append({**step, "expect": {"status": "failed", "error": {"code": "turn_limit"}}})
            return
        self.used += 1
        if kind == "ok":
            self.steps.append({**step, "expect": self.answer()})
            return
        self.provider.append(list(OVERFLOW))
        overflowed = {"status": "failed", "error": {"code": "context_overflow"}}
        if not (self.permitted and self.window and self.exchanges >= 2):
            self.steps.append({**step, "expect": overflowed})
            return
        if not summary_ok:  # the pass fails: nothing installed, the original overflow stands
            self.summaries.append([{"type": "error", "error": {"kind": "overloaded", "message": "busy"}}])
            self.steps.append({**step, "expect": overflowed})
            return
        self.summaries.append([{"type": "text_delta", "text": f"S{len(self.summaries) + 1}"}, _stop()])
        self.exchanges = 1  # the kept latest exchange, after the summary
        if retry_ok:
            self.steps.append({**step, "expect": self.answer()})
        else:
            self.provider.append(list(OVERFLOW))
            self.steps.append({**step, "expect": overflowed})


def _stop() -> dict[str, Any]:
    return {"type": "stop", "stopReason": "stop", "usage": dict(_USAGE)}


def build_overflow_case(
    sends: list[Send],
    window_policy: bool,
    known_window: bool,
    max_turns: int | None,
    *,
    name: str = "overflow",
) -> Case:
    """The case for ``sends`` under the memory unset (or a window policy), a known (or unknown) window and
    a cap (None: unset), with every expectation the model predicts."""
    model = _Overflow(permitted=not window_policy, window=known_window, max_turns=max_turns)
    for kind, summary_ok, retry_ok in sends:
        model.send(kind, summary_ok, retry_ok)
    deps: dict[str, Any] = {
        **({"models": {"model-a": {"contextWindow": 8000}}} if known_window else {}),
        **({"maxTurns": max_turns} if max_turns is not None else {}),
    }
    setup: dict[str, Any] = {"deps": deps}
    if window_policy:
        setup["agent"] = {"memory": {"type": "window", "window_size": 4}}
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": "generated: overflows with and without their one recovery, against the model",
            "clauses": list(OVERFLOW_CLAUSES),
            "capabilities": ["core", "overflow", *(["memory-policy"] if window_policy else [])],
            "setup": setup,
            "provider": model.provider,
            "summaries": model.summaries,
            "steps": [{"op": "start"}, *model.steps],
            "expect": {
                "provider_request_count": len(model.provider),
                "summary_request_count": len(model.summaries),
            },
        }
    )


def overflow_cases() -> st.SearchStrategy[Case]:
    """Cases of the overflow area."""
    send = st.tuples(st.sampled_from(SENDS), st.booleans(), st.booleans())
    return st.builds(
        build_overflow_case,
        st.lists(send, min_size=3, max_size=9),
        st.sampled_from((False, False, True)),
        st.sampled_from((True, True, False)),
        st.sampled_from((None, 3, 4, 4, 5)),  # caps a recovering turn can meet: 2 exchanges, 1 recovery
    )
