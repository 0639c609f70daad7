"""Generated cases, area ``compaction``: automatic compaction after the turn, its passes and its outcomes.

The model (the kit's own reading of AS-COMP and KD-COMP-1/2/6/7/9, KD-TRIM-1, never the engine's code):

- **after-turn** (KD-COMP-9): after a completed turn the next request, without a pending user, is measured
  with the KD-COMP-2 estimate (``presend.estimate``); it fires when the estimate is above
  ``compactThreshold`` (unset: 0.8) x window, or the estimate plus the reservation (``maxTokensEstimate``,
  unset: 4096) above the window (both strict).  ``afterTurnCompaction`` unset is on; ``false`` turns off
  this trigger only.  With one exchange there is nothing to fold: no pass, no event.  Else one moment:
  ``session:compacting`` then ``session:compacted`` (``keptTurnCount`` 1, the summary on a marker row);
  an ordinary failure closes it with ``session:compaction_failed`` and falls back to
  ``trimHistory(maxMessages)`` (reason ``auto-fallback``: the longest suffix of whole exchanges within the
  bound, nothing when they all fit), or keeps the history when ``maxMessages`` is unset; a budget refusal
  of the first pass opens no moment, emits ``session:compaction_refused`` and never trims.  The moment may
  come before or after the turn's terminal (KD-COMP-9: both orders accepted).
- **passes** (KD-COMP-6/7, pre-send): each pass fits every known attemptable entry's window less 4096;
  the older exchanges fold greedily, oldest first, and at most four passes run: the rest stays with the
  kept exchange.  A fallback entry whose window is unknown adds no bound: automatic work never uses the
  16,384-token soft bound nor asks the acknowledgement (AS-COMP-035).  A pass that fails, or an admission
  refused at pass j, ends the moment (``failed``: the original request goes out; refused: the turn fails
  ``budget_exceeded`` naming the cap, with no moment when j is 1).
- **irreducible** (AS-COMP-008): when the system text, the kept exchange, the pending user and the
  largest summary wrapper (4096 tokens) cannot fit the window, pre-send compaction is skipped and the
  original request is sent.

Strategies seek the after-turn bounds (the estimate exactly at the threshold's or the reservation's bound,
one token below, one above; the other settings unset or far), the trim bound at the units of all the
exchanges, one below, and small bounds; the pass limit (one to six older exchanges where two fill a first
pass and one each later pass); messages just above the soft bound; the failing or refused pass anywhere in
the walk; and the irreducible part a few hundred tokens either side of the window (far from the wrapper's
exact length, a KD-COMP-3 shape).  Sizes that depend on the summariser's layout (KD-COMP-11) are asserted
with ``$lte`` / ``$gte`` bounds, never exactly.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.generated.presend import estimate, text_reaching

__all__ = [
    "COMPACTION_AREA_CLAUSES",
    "build_after_turn_case",
    "compaction_cases",
]

COMPACTION_AREA_CLAUSES = (
    "AS-COMP-002",  # the triggers measure the real next request
    "AS-COMP-007",  # strict comparisons with threshold x window and the window less the reservation
    "AS-COMP-013",  # afterTurnCompaction false turns off after-turn work only
)
_MOMENT = ("AS-COMP-036",)  # an opened moment ends exactly once
_SUCCESS = ("AS-COMP-022", *_MOMENT)
_FAILURE = ("AS-COMP-023", "AS-COMP-045", *_MOMENT)
_REFUSAL = ("AS-COMP-042", "AS-COMP-043", "AS-COMP-044")
_KIT = ("KD-COMP-1", "KD-COMP-2", "KD-COMP-6", "KD-COMP-9")

WINDOW = 8000
SYSTEM = "You help."
CAP = 3300  # the cap a refused admission names
_FILLER = "the note about the garden, the shed and the roses. "
_USAGE = {"inputTokens": 10, "outputTokens": 1}
_COMPLETED = {"status": "completed"}
_EVENTS_OF_A_MOMENT = (
    "session:compacting",
    "session:compacted",
    "session:compaction_failed",
    "session:compaction_refused",
    "session:trimmed",
)

# -- shared pieces ----------------------------------------------------------------------------------------


def _reply(text: str) -> list[dict[str, Any]]:
    return [{"type": "text_delta", "text": text}, {"type": "stop", "stopReason": "stop", "usage": _USAGE}]


def _summary(text: str) -> list[dict[str, Any]]:
    stop = {"type": "stop", "stopReason": "stop", "usage": {"inputTokens": 20, "outputTokens": 2}}
    return [{"type": "text_delta", "text": text}, stop]


def _failing() -> list[dict[str, Any]]:
    return [{"type": "error", "error": {"kind": "bad_request", "message": "no"}}]


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _fill(chars: int, mark: str) -> str:
    """``chars`` characters of filler opening with ``mark`` (a word searched for in the summary pass)."""
    body = f"{mark} " + _FILLER * (chars // len(_FILLER) + 1)
    return body[:chars]


def _case(name: str, title: str, clauses: list[str], kit: list[str], body: dict[str, Any]) -> Case:
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": f"generated: {title}, checked against the kit's model",
            "clauses": sorted(set(clauses)),
            "kit_defined": sorted(set(kit)),
            **body,
        }
    )


# -- after-turn -------------------------------------------------------------------------------------------


def fallback_trim(exchanges: int, bound: int | None) -> dict[str, int] | None:
    """KD-TRIM-1's fallback trim of ``exchanges`` whole exchanges (2 units each) to ``bound`` units: the
    ``session:trimmed`` payload, or ``None`` when there is no bound or nothing to drop."""
    if bound is None:
        return None
    kept = min(bound // 2, exchanges)
    if kept == exchanges:
        return None
    dropped = exchanges - kept
    return {"keptMessageCount": 2 * kept, "droppedMessageCount": 2 * dropped, "keptTurnCount": kept}


def _after_turn_events(exchanges: int, moment: list[str]) -> dict[str, Any] | list[str]:
    """The session's events: ``exchanges`` turns, the last one's after-turn ``moment`` after its terminal
    or (KD-COMP-9 accepts both) before it."""
    head = ["session:started", *(["session:turn_started", "session:turn_completed"] * (exchanges - 1))]
    after = [*head, "session:turn_started", "session:turn_completed", *moment]
    if not moment:
        return after
    return {"$one_of": [after, [*head, "session:turn_started", *moment, "session:turn_completed"]]}


def build_after_turn_case(
    older: int,
    bound: str,
    threshold: float | None,
    reservation: int | None,
    offset: int,
    *,
    enabled: bool | None = None,
    outcome: str = "ok",
    max_messages: int | None = None,
    name: str = "compaction-after-turn",
) -> Case:
    """``older`` short exchanges, then one whose reply takes the next request's estimate to the ``bound``
    ("threshold" or "reservation") moved by ``offset`` tokens; ``outcome`` of the pass when it runs:
    "ok", "fail" (an ordinary failure) or "refused" (its admission)."""
    limit = threshold if threshold is not None else 0.8
    reserve = reservation if reservation is not None else 4096
    tokens = (int(limit * WINDOW) if bound == "threshold" else WINDOW - reserve) + offset
    before = [text for n in range(1, older + 1) for text in (f"q{n}", f"a{n}")] + [f"q{older + 1}"]
    reply = text_reaching(tokens, SYSTEM, before)
    assert estimate(SYSTEM, [*before, reply]) == tokens
    fires = tokens > limit * WINDOW or tokens + reserve > WINDOW
    runs = fires and enabled is not False and older >= 1
    refused = runs and outcome == "refused"
    total = older + 1
    trim = fallback_trim(older + 1, max_messages) if runs and outcome == "fail" else None
    expect, moment = _after_turn_expect(older, runs, outcome, reply, trim)
    clauses = [*COMPACTION_AREA_CLAUSES]
    kit = [*_KIT]
    if runs:
        clauses += {"ok": _SUCCESS, "fail": _FAILURE, "refused": _REFUSAL}[outcome]
        kit += {"ok": ["KD-COMP-7"], "fail": ["KD-TRIM-1"], "refused": ["KD-FIN-1"]}[outcome]
    deps: dict[str, Any] = {"models": {"model-a": {"contextWindow": WINDOW}}}
    for key, value in (
        ("compactThreshold", threshold),
        ("maxTokensEstimate", reservation),
        ("afterTurnCompaction", enabled),
        ("maxMessages", max_messages),
    ):
        if value is not None:
            deps[key] = value
    body: dict[str, Any] = {
        "capabilities": ["core", "compaction", "persistence", *(["budget"] if refused else [])],
        "setup": {"agent": {"system_prompt": SYSTEM, "tools": []}, "deps": deps},
        "provider": [*(_reply(f"a{n}") for n in range(1, older + 1)), _reply(reply)],
        "summaries": ([_failing()] if outcome == "fail" else [_summary("S1")]) if runs else [],
        "steps": [
            {"op": "start"},
            *({"op": "send", "text": f"q{n}", "expect": _COMPLETED} for n in range(1, total + 1)),
        ],
        "expect": {"session_events": _after_turn_events(older + 1, moment), **expect},
    }
    if refused:
        deps["admission"] = True
        body["admissions"] = [*([{}] * (older + 1)), {"refuse": CAP}]
    title = f"the after-turn trigger at its {bound} bound ({offset:+d}), {outcome if runs else 'no pass'}"
    return _case(name, title, clauses, kit, body)


def _after_turn_expect(
    older: int, runs: bool, outcome: str, reply: str, trim: dict[str, int] | None
) -> tuple[dict[str, Any], list[str]]:
    """The expectations of an after-turn case beside its events, and the after-turn moment's events."""
    rows: list[dict[str, Any]] = [{"role": role} for _ in range(older + 1) for role in ("user", "assistant")]
    expect: dict[str, Any] = {"provider_request_count": older + 1}
    if not runs:
        expect["absent_events"] = list(_EVENTS_OF_A_MOMENT)
        expect["summary_request_count"] = 0
        expect["rows"] = rows
        return expect, []
    reason = {"reason": "auto-threshold"}
    if outcome == "refused":
        expect["events"] = {"session:compaction_refused": [{**reason, "message": {"$contains": str(CAP)}}]}
        expect["absent_events"] = [e for e in _EVENTS_OF_A_MOMENT if e != "session:compaction_refused"]
        expect["summary_request_count"] = 0
        turn = {"purpose": "turn"}
        expect["admissions"] = [*([turn] * (older + 1)), {"purpose": "summary", "decision": "refused"}]
        expect["rows"] = rows
        return expect, ["session:compaction_refused"]
    folded = f"(?s).*\\bq1\\b.*\\ba{older}\\b.*\\bq{older + 1}\\b.*"
    request = {"maxTokens": {"$lte": 4096}, "messages": {"$all": [
        {"$joined_text": {"$matches": folded}}, {"$joined_text": {"$contains": reply}},
    ]}}  # fmt: skip
    expect["summary_request_count"] = 1
    expect["summary_requests"] = [{"estimate": {"$lte": WINDOW - 4096}, "request": request}]
    if outcome == "ok":
        compacted = {**reason, "summary": "S1", "keptTurnCount": 1}
        expect["events"] = {"session:compacting": [reason], "session:compacted": [compacted]}
        marker = {"role": "system", "content": [{"type": "text", "text": "S1"}]}
        expect["rows"] = [*rows, {**marker, "compaction": {"droppedThroughSequence": 2 * older - 1}}]
        return expect, ["session:compacting", "session:compacted"]
    expect["events"] = {"session:compaction_failed": [{**reason, "outcome": "failed"}]}
    absent = ["session:compacted", "session:compaction_refused"]
    moment = ["session:compacting", "session:compaction_failed"]
    if trim is None:
        expect["absent_events"] = [*absent, "session:trimmed"]
        expect["rows"] = rows
        return expect, moment
    expect["absent_events"] = absent
    expect["events"]["session:trimmed"] = [{"reason": "auto-fallback", **trim}]
    through = {"droppedThroughSequence": trim["droppedMessageCount"] - 1}
    expect["rows"] = [*rows, {"role": "system", "content": [], "compaction": through}]
    return expect, [*moment, "session:trimmed"]


@st.composite
def _after_turn(draw: st.DrawFn) -> Case:
    bound = draw(st.sampled_from(("threshold", "reservation")))
    if bound == "threshold":  # 500, 1000, 2000 tokens; the reservation's own bound stays far off
        threshold: float | None = draw(st.sampled_from((0.0625, 0.125, 0.25)))
        reservation: int | None = draw(st.sampled_from((None, 100, 1000)))
    else:  # bounds of 2000, 1000, 500 tokens; the threshold unset (6400) or higher still
        threshold = draw(st.sampled_from((None, 0.99)))
        reservation = draw(st.sampled_from((6000, 7000, 7500)))
    older = draw(st.integers(0, 3))
    total = 2 * (older + 1)
    bounds = st.sampled_from((None, 1, 2, 3, total - 1, total))
    return build_after_turn_case(
        older,
        bound,
        threshold,
        reservation,
        draw(st.sampled_from((-1, 0, 1))),
        enabled=draw(st.sampled_from((None, True, False))),
        outcome=draw(st.sampled_from(("ok", "fail", "refused"))),
        max_messages=draw(bounds),
    )


def compaction_cases() -> st.SearchStrategy[Case]:
    """Cases of the compaction area."""
    return _after_turn()
