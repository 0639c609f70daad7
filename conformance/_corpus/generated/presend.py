"""Generated cases, area ``presend``: the pre-send trigger of automatic compaction at its two bounds.

The model (the kit's own reading of AS-COMP-002 to 010 and KD-COMP-2, never the engine's code):

- the estimate of a request is ceil(characters / 4), characters = the system text + for each message 8 +
  its text (the agent here has no tools and short exchanges, so no fold and no part of another kind);
- the reservation is ``maxTokensEstimate`` when set, else 4096;
- before a turn's request the engine measures it; it compacts first when the estimate is above
  ``compactThreshold`` x window, or when the estimate plus the reservation is above the window (both strict:
  exactly at a bound does not fire);
- a compaction folds every exchange but the latest, which it keeps verbatim (``keptTurnCount`` 1, one
  summary pass, ``session:compacting`` then ``session:compacted``), then sends the turn's request: the summary
  and the kept user, the kept reply, the pending user; with at most one exchange there is nothing to fold:
  no pass, no event, the original request.

Strategies put the estimate of the pending request exactly at a bound, one token below and one above
(``contextEstimate`` checks the estimate itself first), for either comparison, with the reservation left
unset or set, after 0 to 3 exchanges.  Parameters keep the irreducible part of the request (the kept
exchange, the pending user, the system text and the 4096-token summary wrapper) far inside the window, so
that its own comparison never decides a case.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case

__all__ = ["PRESEND_CLAUSES", "build_presend_case", "estimate", "presend_cases", "text_reaching"]

PRESEND_CLAUSES = (
    "AS-COMP-002",  # the threshold comparison
    "AS-COMP-003",  # the reservation comparison
    "AS-COMP-004",  # the trigger measures the actual next request
    "AS-COMP-007",  # pre-send compaction before the turn's request
)
PRESEND_KIT_DEFINED = ("KD-COMP-2",)

WINDOW = 8000
SYSTEM = "You help."
SUMMARY = "S1"
THRESHOLDS = (0.0625, 0.125, 0.25)  # 500, 1000 and 2000 tokens of an 8000-token window
RESERVATIONS = (None, 100, 1000, 6000, 7000, 7500)  # None: unset, the 4096 default
_FILLER = "the note about the garden, the shed and the roses. "
_USAGE = {"inputTokens": 10, "outputTokens": 1}


def estimate(system: str, messages: list[str]) -> int:
    """KD-COMP-2's estimate of a request of text-only messages (no tools)."""
    return math.ceil((len(system) + sum(8 + len(text) for text in messages)) / 4)


def text_reaching(tokens: int, system: str, messages: list[str]) -> str:
    """A text whose message, after ``messages``, makes the request (``system``, ``messages``, this text)
    estimate at exactly ``tokens`` (4 x ``tokens`` characters in all, so the ceiling is exact)."""
    base = len(system) + sum(8 + len(text) for text in messages) + 8
    size = 4 * tokens - base
    assert size >= 0, "the bound sits below the rest of the request"
    return (_FILLER * (size // len(_FILLER) + 1))[:size]


def _pending(tokens: int, history: list[str]) -> str:
    """A pending user text whose request (system, ``history``, this text) estimates at ``tokens``."""
    return text_reaching(tokens, SYSTEM, history)


def build_presend_case(
    exchanges: int,
    threshold: float,
    reservation: int | None,
    bound: str,
    offset: int,
    *,
    name: str = "presend",
) -> Case:
    """``exchanges`` short exchanges, then one send whose request estimates at the ``bound`` ("threshold"
    or "reservation") moved by ``offset`` tokens; every expectation the model predicts."""
    reserve = 4096 if reservation is None else reservation
    at = int(threshold * WINDOW) if bound == "threshold" else WINDOW - reserve
    tokens = at + offset
    history = [text for n in range(1, exchanges + 1) for text in (f"q{n}", f"a{n}")]
    long = _pending(tokens, history)
    assert estimate(SYSTEM, [*history, long]) == tokens  # the model's own arithmetic, checked once
    fires = tokens > threshold * WINDOW or tokens + reserve > WINDOW
    folds = fires and exchanges >= 2
    provider = [
        [{"type": "text_delta", "text": f"a{n}"}, {"type": "stop", "stopReason": "stop", "usage": _USAGE}]
        for n in range(1, exchanges + 2)
    ]
    sends = [
        {"op": "send", "text": f"q{n}", "expect": {"status": "completed"}} for n in range(1, exchanges + 1)
    ]
    events = ["session:started", *(["session:turn_started", "session:turn_completed"] * exchanges)]
    events += ["session:turn_started", *(["session:compacting", "session:compacted"] if folds else [])]
    events.append("session:turn_completed")
    if folds:  # the summary and the kept user (one message or two parts), the kept reply, the pending user
        kept = f"q{exchanges}"
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": {"$joined_text": {"$matches": f"(?s).*\\b{SUMMARY}\\b.*{kept}$"}}},
            {"role": "assistant", "content": [{"type": "text", "text": f"a{exchanges}"}]},
        ]
    else:
        messages = [
            {"role": role, "content": [{"type": "text", "text": text}]}
            for role, text in zip(("user", "assistant") * exchanges, history, strict=True)
        ]
    messages.append({"role": "user", "content": {"$joined_text": long}})
    deps: dict[str, Any] = {
        "models": {"model-a": {"contextWindow": WINDOW}},
        "compactThreshold": threshold,
        "afterTurnCompaction": False,
        **({"maxTokensEstimate": reservation} if reservation is not None else {}),
    }
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": "generated: the pre-send trigger at its bounds, checked against the kit's model",
            "clauses": list(PRESEND_CLAUSES),
            "kit_defined": list(PRESEND_KIT_DEFINED),
            "capabilities": ["core", "compaction", "memory-policy"],
            "setup": {"agent": {"system_prompt": SYSTEM, "tools": []}, "deps": deps},
            "provider": provider,
            "summaries": [[{"type": "text_delta", "text": SUMMARY}, _stop()]] if folds else [],
            "steps": [
                {"op": "start"},
                *sends,
                {"op": "contextEstimate", "text": long, "expect": {"inputTokens": tokens}},
                {"op": "send", "text": long, "expect": {"status": "completed", "text": f"a{exchanges + 1}"}},
            ],
            "expect": {
                "session_events": events,
                "summary_request_count": 1 if folds else 0,
                "provider_request_count": exchanges + 1,
                "provider_requests": [*([{}] * exchanges), {"request": {"messages": messages}}],
                **(
                    {"events": {"session:compacted": [{"reason": "auto-threshold", "keptTurnCount": 1}]}}
                    if folds
                    else {"absent_events": ["session:compacting", "session:compacted"]}
                ),
            },
        }
    )


def _stop() -> dict[str, Any]:
    return {"type": "stop", "stopReason": "stop", "usage": {"inputTokens": 20, "outputTokens": 2}}


@st.composite
def _presend(draw: st.DrawFn) -> Case:
    bound = draw(st.sampled_from(("threshold", "reservation")))
    threshold = draw(st.sampled_from(THRESHOLDS))
    if bound == "reservation":  # a reservation that leaves a small request: its bound far below the window
        reservation: int | None = draw(st.sampled_from((6000, 7000, 7500)))
    else:  # any reservation whose own comparison stays far from this threshold's bound
        reservation = draw(st.sampled_from((None, 100, 1000)))
    return build_presend_case(
        draw(st.integers(0, 3)), threshold, reservation, bound, draw(st.sampled_from((-1, 0, 1)))
    )


def presend_cases() -> st.SearchStrategy[Case]:
    """Cases of the presend area."""
    return _presend()
