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
    "build_irreducible_case",
    "build_passes_case",
    "compaction_cases",
]

COMPACTION_AREA_CLAUSES = (
    "AS-COMP-002",  # the triggers measure the real next request
    "AS-COMP-003",  # against the first attemptable entry's window, with the shared output reservation
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
    window: int = WINDOW,
    bulk: int = 0,
    name: str = "compaction-after-turn",
) -> Case:
    """``older`` exchanges (users of ``bulk`` tokens, or short), then one whose reply takes the next
    request's estimate to the ``bound`` ("threshold" or "reservation") moved by ``offset`` tokens;
    ``outcome`` of the pass when it runs: "ok", "fail" (an ordinary failure) or "refused" (its
    admission).  With ``bulk`` the fold may take more than one pass (asserted as a property only)."""
    limit = threshold if threshold is not None else 0.8
    reserve = reservation if reservation is not None else 4096
    tokens = (int(limit * window) if bound == "threshold" else window - reserve) + offset
    users = [_fill(4 * bulk, f"q{n}") if bulk else f"q{n}" for n in range(1, older + 1)]
    before = [text for n, user in enumerate(users, 1) for text in (user, f"a{n}")] + [f"q{older + 1}"]
    reply = text_reaching(tokens, SYSTEM, before)
    assert estimate(SYSTEM, [*before, reply]) == tokens
    fires = tokens > limit * window or tokens + reserve > window
    runs = fires and enabled is not False and older >= 1
    refused = runs and outcome == "refused"
    total = older + 1
    trim = fallback_trim(older + 1, max_messages) if runs and outcome == "fail" else None
    expect, moment = _after_turn_expect(older, runs, outcome, reply, trim, window - 4096, bulk > 0)
    clauses = [*COMPACTION_AREA_CLAUSES]
    kit = [*_KIT]
    if runs:
        clauses += {"ok": _SUCCESS, "fail": _FAILURE, "refused": _REFUSAL}[outcome]
        kit += {"ok": ["KD-COMP-7"], "fail": ["KD-TRIM-1"], "refused": ["KD-FIN-1"]}[outcome]
    deps: dict[str, Any] = {"models": {"model-a": {"contextWindow": window}}}
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
        "summaries": ([_failing()] if outcome == "fail" else [_summary("S1"), _summary("S2")])
        if runs
        else [],
        "steps": [
            {"op": "start"},
            *({"op": "send", "text": user, "expect": _COMPLETED} for user in [*users, f"q{total}"]),
        ],
        "expect": {"session_events": _after_turn_events(older + 1, moment), **expect},
    }
    if refused:
        deps["admission"] = True
        body["admissions"] = [*([{}] * (older + 1)), {"refuse": CAP}]
    title = f"the after-turn trigger at its {bound} bound ({offset:+d}), {outcome if runs else 'no pass'}"
    return _case(name, title, clauses, kit, body)


def _after_turn_expect(
    older: int, runs: bool, outcome: str, reply: str, trim: dict[str, int] | None, limit: int, bulk: bool
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
    last = "" if bulk else f"\\ba{older}\\b.*"  # the bulk's first pass holds the first exchange alone
    folded = f"(?s).*\\bq1\\b.*{last}\\bq{older + 1}\\b.*"
    request = {"maxTokens": {"$lte": 4096}, "messages": {"$all": [
        {"$joined_text": {"$matches": folded}}, {"$joined_text": {"$contains": reply}},
    ]}}  # fmt: skip
    if outcome == "fail" or not bulk:  # a failure ends the fold at its first pass
        expect["summary_request_count"] = 1
        expect["summary_requests"] = [{"estimate": {"$lte": limit}, "request": request}]
    if outcome == "ok":
        summary: Any = {"$one_of": ["S1", "S2"]} if bulk else "S1"  # the bulk may take two passes
        compacted = {**reason, "summary": summary, "keptTurnCount": 1}
        expect["events"] = {"session:compacting": [reason], "session:compacted": [compacted]}
        marker = {"role": "system", "content": [{"type": "text", "text": summary}]}
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
    settings: dict[str, Any] = {}
    default = draw(st.integers(0, 3)) == 0  # a quarter of the draws: the bound at its default
    if bound == "threshold" and default:  # 0.8 x 40000; the reservation's bound far off
        threshold: float | None = None
        reservation: int | None = draw(st.sampled_from((None, 100)))
        settings["window"] = 40000
    elif bound == "threshold":  # 500, 1000, 2000 tokens; the reservation's own bound stays far off
        threshold = draw(st.sampled_from((0.0625, 0.125, 0.25)))
        reservation = draw(st.sampled_from((None, 100, 1000)))
    elif default:  # 16000 less 4096, two older exchanges of 5900 tokens (one or two passes)
        threshold, reservation = draw(st.sampled_from((None, 0.99))), None
        settings.update(window=16000, bulk=5900)
    else:  # bounds of 2000, 1000, 500 tokens; the threshold unset (6400) or higher still
        threshold = draw(st.sampled_from((None, 0.99)))
        reservation = draw(st.sampled_from((6000, 7000, 7500)))
    outcomes = draw(st.booleans())  # half the draws: one token over, on, something to fold
    older = 2 if settings.get("bulk") else draw(st.sampled_from((1, 2, 3) if outcomes else (1, 2, 3, 0)))
    total = 2 * (older + 1)
    return build_after_turn_case(
        older,
        bound,
        threshold,
        reservation,
        1 if outcomes else draw(st.sampled_from((1, 0, -1))),  # over, at, under
        enabled=draw(st.sampled_from((None, True) if outcomes else (None, True, False))),
        outcome=draw(st.sampled_from(("fail", "ok", "refused"))),
        max_messages=draw(st.sampled_from((None, 2, 1, 3, total - 1, total))),
        **settings,
    )


# -- passes (pre-send) ------------------------------------------------------------------------------------

BIG_WINDOW = 40000  # the primary's window, which the trigger measures against
SMALL_FALLBACK = 12000  # a fallback whose window bounds every pass at 7904
_PASS_TOKENS = 3000  # an older message: two fill a first pass under 7904, one a later pass (4096 reserved)


def planned_passes(older: int, fallback: int | None) -> int:
    """The passes a pre-send compaction of ``older`` (1 to 5) big exchanges runs (KD-COMP-7): with the
    small fallback the first pass folds two and each later pass one, so five take the four passes a
    compaction may spend; with an unknown fallback window one pass folds them all (no soft bound)."""
    assert 1 <= older <= 5
    return 1 if fallback is None else max(1, older - 1)


def _passes_setup(older: int, fallback: int | None, size: int, refused: bool) -> dict[str, Any]:
    history: list[dict[str, Any]] = []
    for n in range(1, older + 1):
        history += [_text("user", _fill(4 * size, f"Q{n}")), _text("assistant", f"a{n}")]
    history += [_text("user", "qk"), _text("assistant", "ak")]
    models: dict[str, Any] = {"model-a": {"contextWindow": BIG_WINDOW}}
    if fallback is not None:
        models["model-b"] = {"contextWindow": fallback}
    deps: dict[str, Any] = {"models": models, "compactThreshold": 0.0625, "afterTurnCompaction": False}
    if refused:
        deps["admission"] = True
    agent = {
        "system_prompt": SYSTEM,
        "tools": [],
        "fallback_chain": [{"model": "model-b", "provider": "openai", "max_attempts": 1}],
    }
    return {"agent": agent, "deps": deps, "history": {"messages": history}}


def build_passes_case(
    older: int,
    fallback: int | None,
    outcome: str = "ok",
    at: int = 1,
    *,
    size: int = _PASS_TOKENS,
    name: str = "compaction-passes",
) -> Case:
    """A resumed history of ``older`` exchanges of ``size``-token users and a short kept one, then a turn
    whose pre-send compaction runs ``planned_passes``; ``outcome`` "ok", or "fail" / "refused" at pass
    ``at`` (a failure of that pass, a budget refusal of its admission)."""
    passes = planned_passes(older, fallback)
    at = min(at, passes) if outcome != "ok" else passes + 1
    limit = min(BIG_WINDOW, fallback or BIG_WINDOW) - 4096
    history = _passes_setup(older, fallback, size, outcome == "refused")
    sent = passes if outcome == "ok" else (at if outcome == "fail" else at - 1)
    bound: dict[str, Any] = {"$lte": limit}
    if fallback is None:  # the whole fold in one pass, above the manual soft bound (AS-COMP-035)
        bound = {"$all": [{"$gte": older * size}, bound]}
    shown = {"$joined_text": {"$matches": "(?s).*\\bqk\\b.*\\bak\\b.*\\bqn\\b.*"}}
    requests = [{"model": "model-a", "estimate": bound, "request": {"messages": shown}}] * sent
    if requests:
        first = {"$all": [shown, {"$joined_text": {"$matches": "(?s).*\\bQ1\\b.*\\bqk\\b.*"}}]}
        requests[0] = {**requests[0], "request": {"messages": first}}
    expect: dict[str, Any] = {
        "summary_request_count": sent,
        "summary_requests": requests,
        "compaction_starts": [],
        "provider_request_count": 0 if outcome == "refused" else 1,
    }
    clauses = ["AS-COMP-013", "AS-COMP-016", "AS-COMP-017", "AS-COMP-018", *_MOMENT]
    clauses += ["AS-COMP-035"] if fallback is None else []
    kit = [*_KIT, "KD-COMP-7"]
    scripts = [_summary(f"S{n}") for n in range(1, sent + 1)]
    step = _passes_outcome(outcome, at, passes, older, expect, clauses, kit, scripts)
    body: dict[str, Any] = {
        "capabilities": [
            "core",
            "compaction",
            "persistence",
            "resume",
            *(["budget"] if outcome == "refused" else []),
        ],
        "setup": history,
        "provider": [] if outcome == "refused" else [_reply("done")],
        "summaries": scripts,
        "steps": [{"op": "resume"}, step],
        "expect": expect,
    }
    if outcome == "refused":
        body["admissions"] = [*([{}] * (at - 1)), {"refuse": CAP}]
    window = "unknown" if fallback is None else str(fallback)
    title = f"a pre-send compaction of {older} big exchanges, fallback window {window}: {outcome}"
    return _case(name, title, clauses, kit, body)


def _passes_outcome(
    outcome: str,
    at: int,
    passes: int,
    older: int,
    expect: dict[str, Any],
    clauses: list[str],
    kit: list[str],
    scripts: list[Any],
) -> dict[str, Any]:
    """Fill in ``expect`` (and the scripts) for the pass outcome; the turn's step."""
    reason = {"reason": "auto-threshold"}
    step: dict[str, Any] = {"op": "send", "text": "qn", "expect": {"status": "completed", "text": "done"}}
    moment = ["session:compacting", "session:compaction_failed"]
    if outcome == "ok":
        moment = ["session:compacting", "session:compacted"]
        compacted = {**reason, "summary": f"S{passes}", "keptTurnCount": 1}
        expect["events"] = {"session:compacting": [reason], "session:compacted": [compacted]}
        expect["provider_requests"] = [{"request": {"messages": _compacted_request(f"S{passes}")}}]
        clauses.append("AS-COMP-022")
    elif outcome == "fail":
        scripts.append(_failing())  # replaces the pass's summary: the scripts hold the passes before it
        scripts.pop(-2)
        expect["events"] = {"session:compaction_failed": [{**reason, "outcome": "failed"}]}
        expect["provider_requests"] = [{"request": {"messages": {"$len": 2 * older + 3}}}]
        expect["absent_events"] = ["session:compacted", "session:trimmed"]
        clauses += ["AS-COMP-010", "AS-COMP-023"]
    else:
        error = {"code": "budget_exceeded", "message": {"$contains": str(CAP)}, "retryable": False}
        step["expect"] = {"status": "failed", "error": error}
        admitted = {"purpose": "summary", "decision": "admitted"}
        expect["admissions"] = [*([admitted] * (at - 1)), {"purpose": "summary", "decision": "refused"}]
        expect["absent_events"] = ["session:compacted", "session:trimmed", "session:compaction_refused"]
        clauses += ["AS-COMP-011", "AS-COMP-044", "AS-COMP-047", "AS-COMP-037" if at == 1 else "AS-COMP-023"]
        kit.append("KD-FIN-1")
        if at == 1:
            moment = []
            expect["absent_events"] += ["session:compacting", "session:compaction_failed"]
        else:
            failed = {**reason, "outcome": "budget_refused", "message": {"$contains": str(CAP)}}
            expect["events"] = {"session:compaction_failed": [failed]}
    expect["session_events"] = ["session:turn_started", *moment, "session:turn_completed"]
    return step


def _compacted_request(summary: str) -> list[dict[str, Any]]:
    """The turn's request after the fold: the summary as user data before the kept user (one message or
    two parts, KD-PROJ-2), the kept reply, the pending user."""
    first = {"$joined_text": {"$matches": f"(?s).*\\b{summary}\\b.*\\bqk$"}}
    return [{"role": "user", "content": first}, _text("assistant", "ak"), _text("user", "qn")]


@st.composite
def _passes(draw: st.DrawFn) -> Case:
    outcome = draw(st.sampled_from(("ok", "fail", "refused")))
    at = draw(st.integers(1, 4))
    if draw(st.booleans()):  # the small fallback bounds every pass: five exchanges take all four passes
        return build_passes_case(draw(st.integers(1, 5)), SMALL_FALLBACK, outcome, at)
    size = draw(st.sampled_from((16385, 20000, 30000)))  # just above the soft bound, and far above
    older = 2 if size == 16385 and draw(st.booleans()) else 1
    return build_passes_case(older, None, outcome, at, size=size)


# -- irreducible (pre-send) -------------------------------------------------------------------------------


def build_irreducible_case(
    older: int, side: str, margin: int, *, name: str = "compaction-irreducible"
) -> Case:
    """A resumed history of ``older`` short exchanges and a system text that takes the irreducible part
    (system, kept exchange, pending user, the 4096-token wrapper) ``margin`` tokens over the window
    (``side`` "over": skipped, the original request goes out) or under it (compacted when there is
    something to fold)."""
    tokens = WINDOW - 4096 + margin if side == "over" else WINDOW - 4096 - 400 - margin
    system = _fill(4 * tokens, "Rules")
    history = [
        message
        for n in range(1, older + 1)
        for message in (_text("user", f"q{n}"), _text("assistant", f"a{n}"))
    ]
    folds = side == "under" and older >= 2
    deps = {
        "models": {"model-a": {"contextWindow": WINDOW}},
        "compactThreshold": 0.0625,
        "maxTokensEstimate": 100,
        "afterTurnCompaction": False,
    }
    reason = {"reason": "auto-threshold"}
    expect: dict[str, Any] = {"summary_request_count": 1 if folds else 0, "provider_request_count": 1}
    if folds:
        expect["session_events"] = [
            "session:turn_started",
            "session:compacting",
            "session:compacted",
            "session:turn_completed",
        ]
        expect["events"] = {"session:compacted": [{**reason, "keptTurnCount": 1}]}
        first = {"$joined_text": {"$matches": f"(?s).*\\bS1\\b.*\\bq{older}$"}}
        messages: Any = [
            {"role": "user", "content": first},
            _text("assistant", f"a{older}"),
            _text("user", "qn"),
        ]
    else:
        expect["session_events"] = ["session:turn_started", "session:turn_completed"]
        expect["absent_events"] = list(_EVENTS_OF_A_MOMENT)
        messages = [*history, _text("user", "qn")]
    expect["provider_requests"] = [{"request": {"system": {"$contains": "Rules"}, "messages": messages}}]
    clauses = ["AS-COMP-008", "AS-COMP-010", "AS-COMP-002", "AS-COMP-007"]
    body: dict[str, Any] = {
        "capabilities": ["core", "compaction", "persistence", "resume"],
        "setup": {
            "agent": {"system_prompt": system, "tools": []},
            "deps": deps,
            "history": {"messages": history},
        },
        "provider": [_reply("done")],
        "summaries": [_summary("S1")] if folds else [],
        "steps": [
            {"op": "resume"},
            {"op": "send", "text": "qn", "expect": {"status": "completed", "text": "done"}},
        ],
        "expect": expect,
    }
    title = f"the irreducible part {margin} tokens {side} the window after {older} exchanges"
    return _case(name, title, clauses, [*_KIT, "KD-COMP-7"], body)


@st.composite
def _irreducible(draw: st.DrawFn) -> Case:
    return build_irreducible_case(
        draw(st.integers(1, 3)), draw(st.sampled_from(("over", "under"))), draw(st.sampled_from((200, 600)))
    )


@st.composite
def _compaction(draw: st.DrawFn) -> Case:
    family = draw(st.sampled_from(("after-turn", "irreducible", "passes", "after-turn")))
    return draw({"after-turn": _after_turn(), "passes": _passes(), "irreducible": _irreducible()}[family])


def compaction_cases() -> st.SearchStrategy[Case]:
    """Cases of the compaction area: the after-turn trigger (half the draws), the passes, the irreducible
    part."""
    return _compaction()
