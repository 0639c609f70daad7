"""Judging a recorded store history: is there one order of its operations that the contract explains?

A history is what the kit saw while it played a generated program (``_store/history_run.py``): one
:class:`Call` per operation, with the connection it went over, its parameters, and two positions on the
kit's one real-time counter, where it was sent (``invoke``) and where its outcome came back
(``complete``).  Its outcome is ``ok`` (an answer), ``fail`` (a refusal, with its code) or ``info``
(no outcome: the connection broke or its process was killed, so it may have taken effect or not).

The model (:class:`State`) is the contract reduced to what every store with the same declaration must
agree on: which ids are sessions, each with its committed entries, its placement tuple, the session it
was forked from, its last recorded run and its incarnation (bound when first seen, never reused by
another row); and the ownership rows, none, anonymous or owned.  Where the contract leaves a store a
choice the model branches: an ordinary ``release`` may keep the history or delete it, a deleted
session's ownership row may outlive it (and a row with no session may go with a ``release`` of its
id); a fork of an unowned source with an explicit ``null`` owner may mint an anonymous row or none;
on a store whose list is its cache (process-local), a recorded run may not land, or go with the view.

:func:`check_history` is a Wing-Gong search with memoisation (as Knossos does it): take, as the next
operation of the order, any one that was invoked before every unplaced completed operation completed;
apply it to the model; go on until every completed operation is placed.  Operations without an outcome
may be placed anywhere after their invocation, or never.  The histories the kit generates are small
(tens of operations), so the search is exhaustive.  No verdict rests on wall-clock time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = ["Call", "Contract", "HistoryVerdict", "State", "check_history"]

Outcome = Literal["ok", "fail", "info"]


@dataclass(frozen=True)
class Call:
    """One operation of a history (``op`` is a store method, ``read``/``write``, ``restart`` or ``crash``)."""

    index: int
    process: str
    op: str
    params: Mapping[str, Any]
    invoke: int
    complete: int | None
    outcome: Outcome
    answer: Any = None

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        what = {"ok": f"answered {self.answer!r}", "fail": f"refused {self.answer}", "info": "no outcome"}
        return f"#{self.index} {self.op}({shown}) via {self.process}: {what[self.outcome]}"


@dataclass(frozen=True)
class Contract:
    """What the store declared, as far as the model needs it."""

    durable: bool
    placements: Literal["durable", "process-local"] | None
    shared: bool
    """Every connection opens one storage (a durable store's location): ``list`` shows every session."""
    forgets: bool = True
    """The store declares ``forget``: the ``read`` and ``write`` composites forget the cached view first."""
    rejects_option: bool = False
    """The store declares ``store:rejects-requireExisting``: every acquire with the option is refused
    (SS-LIFE-007) and changes nothing, whether the id exists or not."""


@dataclass(frozen=True)
class Session:
    entries: tuple[str, ...] = ()
    placed: tuple[str | None, str | None] | None = None
    forked_from: str | None = None
    run: tuple[str, str | None] | None = None
    incarnation: str | None = None


@dataclass(frozen=True)
class State:
    sessions: tuple[tuple[str, Session], ...] = ()
    owners: tuple[tuple[str, str | None], ...] = ()
    used: frozenset[str] = frozenset()
    """Every incarnation and fork id the store has answered so far: a new row never reuses one."""
    unnamed_forks: tuple[str, ...] = ()
    """Sources of forks that may exist under an id the kit never learnt (their call has no outcome)."""

    def session(self, sid: str) -> Session | None:
        return dict(self.sessions).get(sid)

    def owner_row(self, sid: str) -> tuple[str | None] | None:
        rows = dict(self.owners)
        return (rows[sid],) if sid in rows else None

    def with_session(self, sid: str, session: Session | None) -> State:
        rows = dict(self.sessions)
        if session is None:
            rows.pop(sid, None)
        else:
            rows[sid] = session
        return replace(self, sessions=tuple(sorted(rows.items())))

    def with_owner(self, sid: str, row: tuple[str | None] | None) -> State:
        rows = dict(self.owners)
        if row is None:
            rows.pop(sid, None)
        else:
            rows[sid] = row[0]
        return replace(self, owners=tuple(sorted(rows.items(), key=lambda kv: kv[0])))

    def bind(self, sid: str, incarnation: Any) -> State | str:
        """The session's incarnation as answered: bound the first time, the same ever after."""
        session = self.session(sid)
        assert session is not None
        if not isinstance(incarnation, str):
            return f"{sid} has no incarnation in the answer"
        if session.incarnation is None:
            if incarnation in self.used:
                return f"{sid} answered incarnation {incarnation!r}, already another row's"
            bound = self.with_session(sid, replace(session, incarnation=incarnation))
            return replace(bound, used=self.used | {incarnation})
        if session.incarnation != incarnation:
            return f"{sid} answered incarnation {incarnation!r}, the row's is {session.incarnation!r}"
        return self


Step = tuple[list[State], str]
"""The states an operation can lead to from one state, or none and why its answer cannot be."""


def _refused(call: Call, *codes: str) -> str | None:
    """``None`` when the call was refused with one of ``codes``, else why that is wrong."""
    if call.outcome == "fail" and call.answer in codes:
        return None
    return f"must be refused with {' or '.join(codes)}"


def _answered(call: Call) -> str | None:
    return None if call.outcome == "ok" else "must be answered, not refused"


def _acquire(state: State, call: Call, rules: Contract) -> Step:
    sid = str(call.params["sessionId"])
    existing = state.session(sid)
    require = bool(call.params.get("requireExisting"))
    placement = call.params.get("placement") if rules.placements is not None else None
    unknown = call.outcome == "info"
    if require and rules.rejects_option:  # refused as declared (any refusal), never answered
        if unknown or call.outcome == "fail":
            return [state], ""
        return [], f"{sid}: the store declares store:rejects-requireExisting, yet answered the option"
    if existing is None:
        if require:
            why = None if unknown else _refused(call, "not_found")
            return ([state], "") if why is None else ([], f"{sid} is not a session: {why}")
        tuple_ = (placement.get("scope"), placement.get("handle")) if placement else None
        created = state.with_session(sid, Session(placed=tuple_))
        if unknown:
            return [state, created], ""
        if call.outcome != "ok":
            return [], f"{sid} is created by a claim-form acquire, not refused"
        return _acquired(created, call, sid)
    if existing.placed is not None and not require and placement is None:
        if unknown:
            return [state], ""
        why = _refused(call, "placement_refused")
        return ([state], "") if why is None else ([], f"{sid} is a placed session: {why}")
    if unknown:
        return [state], ""
    if call.outcome != "ok":
        return [], f"{sid} is a session: acquire must answer it"
    return _acquired(state, call, sid)


def _acquired(state: State, call: Call, sid: str) -> Step:
    answer = call.answer or {}
    if answer.get("sessionId") != sid:
        return [], f"answered session id {answer.get('sessionId')!r} for {sid}"
    session = state.session(sid)
    assert session is not None
    if answer.get("forkedFrom") != session.forked_from:
        return [], f"{sid} forkedFrom is {answer.get('forkedFrom')!r}, expected {session.forked_from!r}"
    bound = state.bind(sid, answer.get("incarnation"))
    return ([bound], "") if isinstance(bound, State) else ([], bound)


def _register(state: State, call: Call, rules: Contract) -> Step:
    sid, owner = str(call.params["sessionId"]), call.params.get("owner")
    after = state if state.owner_row(sid) is not None else state.with_owner(sid, (owner,))
    if call.outcome == "info":
        return [state, after], ""
    why = _answered(call)
    return ([after], "") if why is None else ([], why)


def _owner_of(state: State, call: Call, rules: Contract) -> Step:
    if call.outcome == "info":
        return [state], ""
    if call.outcome != "ok":
        return [], "ownerOf must answer"
    sid = str(call.params["sessionId"])
    row = state.owner_row(sid)
    answer = call.answer or {}
    expected = "no row" if row is None else f"owner {row[0]!r}"
    got = "no row" if "owner" not in answer else f"owner {answer['owner']!r}"
    return ([state], "") if got == expected else ([], f"{sid} reads {got}, the model has {expected}")


def _fork(state: State, call: Call, rules: Contract) -> Step:
    source = str(call.params["sourceId"])
    found = state.session(source)
    if call.outcome == "info":
        if found is None:
            return [state], ""
        return [state, replace(state, unnamed_forks=(*state.unnamed_forks, source))], ""
    if call.outcome != "ok":
        return [], "fork must answer (an id, or null for a missing source)"
    new_id = call.answer
    if found is None:
        return ([state], "") if new_id is None else ([], f"fork of missing {source} answered {new_id!r}")
    if not isinstance(new_id, str):
        return [], f"fork of the session {source} answered {new_id!r}"
    if state.session(new_id) is not None or new_id in state.used:
        return [], f"fork answered {new_id!r}, an id already in use"
    made = state.with_session(new_id, Session(entries=found.entries, forked_from=source))
    made = replace(made, used=made.used | {new_id})
    return _fork_owners(made, new_id, state.owner_row(source), call.params), ""


def _fork_owners(
    state: State, new_id: str, source_row: tuple[str | None] | None, params: Mapping[str, Any]
) -> list[State]:
    """A fork is never owned more weakly than its source (SS-FORK-011..013)."""
    owner = params.get("owner")
    if isinstance(owner, str):
        return [state.with_owner(new_id, (owner,))]
    if source_row is not None:
        return [state.with_owner(new_id, source_row)]
    if "owner" in params:  # an explicit null over a source with no row: anonymous, or no row
        return [state.with_owner(new_id, (None,)), state]
    return [state]


def _release(state: State, call: Call, rules: Contract) -> Step:
    sid = str(call.params["sessionId"])
    session = state.session(sid)
    if call.outcome == "fail":
        return [], "release must not be refused"
    if session is None:  # an ownership row with no session: the contract ties no lifetime to it
        outcomes = [state, state.with_owner(sid, None)]
    else:
        gone = state.with_session(sid, None)
        outcomes = [gone, gone.with_owner(sid, None)]
        if session.placed is None:  # an ordinary session's history may be retained (SS-LIFE-011)
            outcomes.insert(0, state)
    if call.outcome == "info":
        outcomes.insert(0, state)
    return outcomes, ""


def _same(state: State, call: Call, rules: Contract) -> Step:
    """forget, pin, unpin, touch: nothing the model sees changes, and none of them is refused."""
    if call.outcome == "fail":
        return [], f"{call.op} must not be refused"
    return [state], ""


def _forgotten(states: list[State], sid: str, rules: Contract) -> list[State]:
    """``states``, and each with the session's recorded run gone: on a store whose list is its cache
    (process-local) the run lives in the cached view, and a forget of the view may take it along."""
    out = list(states)
    if rules.durable:
        return out
    for state in states:
        session = state.session(sid)
        if session is not None and session.run is not None:
            out.append(state.with_session(sid, replace(session, run=None)))
    return out


def _forget(state: State, call: Call, rules: Contract) -> Step:
    """forget keeps history (and may take a process-local store's recorded run, :func:`_forgotten`)."""
    kept, why = _same(state, call, rules)
    return _forgotten(kept, str(call.params.get("sessionId")), rules), why


def _composite(judge: Callable[[State, Call, Contract], Step]) -> Callable[[State, Call, Contract], Step]:
    """``read`` and ``write`` forget the view first where the store declares ``forget``."""

    def step(state: State, call: Call, rules: Contract) -> Step:
        states, why = judge(state, call, rules)
        if not rules.forgets:
            return states, why
        return _forgotten(states, str(call.params["sessionId"]), rules), why

    return step


def _note_task_run(state: State, call: Call, rules: Contract) -> Step:
    sid = str(call.params["sessionId"])
    if call.outcome == "fail":
        return [], "noteTaskRun never throws"
    session = state.session(sid)
    if session is None:
        return [state], ""
    run = (str(call.params["taskId"]), call.params.get("runId"))
    after = state.with_session(sid, replace(session, run=run))
    if call.outcome == "info" or not rules.durable:  # best effort where the record lives in a cache
        return [state, after], ""
    return [after], ""


def _list(state: State, call: Call, rules: Contract) -> Step:
    if call.outcome == "info":
        return [state], ""
    if call.outcome != "ok":
        return [], "list must answer"
    rows: Sequence[Mapping[str, Any]] = call.answer
    ordinary = {sid: s for sid, s in state.sessions if s.placed is None}
    problems = []
    listed = [str(r.get("sessionId")) for r in rows]
    if len(set(listed)) != len(listed):
        problems.append("a session is listed twice")
    stamps = [r.get("lastActiveAt", 0) for r in rows]
    if stamps != sorted(stamps, reverse=True):
        problems.append("not newest first")
    placed = {sid for sid, s in state.sessions if s.placed is not None}
    for row in rows:
        sid = str(row.get("sessionId"))
        session = ordinary.get(sid)
        if sid in placed:
            problems.append(f"the placed session {sid} is listed")
        elif session is None:
            if row.get("forkedFrom") not in state.unnamed_forks:
                problems.append(f"{sid} is listed, and is no session")
        else:
            run = (row.get("lastTaskId"), row.get("lastTaskRunId"))
            if run != (session.run or (None, None)):
                problems.append(f"{sid} lists run {run}, the model has {session.run}")
            if row.get("forkedFrom") != session.forked_from:
                problems.append(f"{sid} lists forkedFrom {row.get('forkedFrom')!r}")
    if rules.shared:
        missing = sorted(set(ordinary) - set(listed))
        if missing:
            problems.append(f"the sessions {missing} are not listed")
    return ([state], "") if not problems else ([], "; ".join(problems))


def _list_placed(state: State, call: Call, rules: Contract) -> Step:
    if call.outcome == "info":
        return [state], ""
    if call.outcome != "ok":
        return [], "listPlaced must answer"
    scope = call.params.get("scope")
    wanted: dict[str, dict[str, Any]] = {}
    for sid, session in state.sessions:
        if session.placed is None or (scope is not None and session.placed[0] != scope):
            continue
        row_scope, handle = session.placed
        wanted[sid] = (
            {"scope": row_scope, "handle": handle}
            if row_scope is not None and handle is not None
            else {"tupleIncomplete": True}
        )
    got = {
        str(r.get("sessionId")): {
            k: r[k] for k in ("scope", "handle", "tupleIncomplete") if r.get(k) is not None
        }
        for r in call.answer
    }
    if got == wanted:
        return [state], ""
    return [], f"listPlaced answered {got}, the model has {wanted}"


def _incarnation_of(state: State, call: Call, rules: Contract) -> Step:
    if call.outcome == "info":
        return [state], ""
    if call.outcome != "ok":
        return [], "incarnationOf must answer"
    sid = str(call.params["sessionId"])
    answer = call.answer or {}
    if state.session(sid) is None:
        if "incarnation" in answer:
            return [], f"{sid} is no session and reads incarnation {answer['incarnation']!r}"
        return [state], ""
    if "incarnation" not in answer:
        return [], f"{sid} is a session and reads no incarnation"
    bound = state.bind(sid, answer["incarnation"])
    return ([bound], "") if isinstance(bound, State) else ([], bound)


def _read(state: State, call: Call, rules: Contract) -> Step:
    sid = str(call.params["sessionId"])
    session = state.session(sid)
    if call.outcome == "info":
        return [state], ""
    if session is None:
        why = _refused(call, "not_found")
        return ([state], "") if why is None else ([], f"{sid} is no session: {why}")
    if call.outcome != "ok":
        return [], f"{sid} is a session: reading it must answer"
    if tuple(call.answer) != session.entries:
        return [], f"{sid} reads entries {list(call.answer)}, the model has {list(session.entries)}"
    return [state], ""


def _write(state: State, call: Call, rules: Contract) -> Step:
    sid, entry = str(call.params["sessionId"]), str(call.params["entry"])
    session = state.session(sid)
    if call.outcome == "info":
        if session is None:
            return [state], ""
        return [state, state.with_session(sid, replace(session, entries=(*session.entries, entry)))], ""
    if session is None:
        why = _refused(call, "not_found")
        return ([state], "") if why is None else ([], f"{sid} is no session: {why}")
    if call.outcome == "fail":
        if call.answer == "conflict":  # judged on the history (see ``_conflicts_explained``)
            return [state], ""
        return [], f"writing {sid} was refused with {call.answer}"
    seen = tuple(call.answer)
    if seen != session.entries:
        return [], f"{sid} was written after entries {list(seen)}, the model has {list(session.entries)}"
    return [state.with_session(sid, replace(session, entries=(*seen, entry)))], ""


def _restart(state: State, call: Call, rules: Contract) -> Step:
    """Everything a process-local store holds is gone; a durable store keeps what it acknowledged."""
    kept = []
    for sid, session in state.sessions:
        durability = rules.placements if session.placed is not None else None
        if (durability or ("durable" if rules.durable else "process-local")) == "durable":
            kept.append((sid, session))
    owners = state.owners if rules.durable else ()
    forks = state.unnamed_forks if rules.durable else ()
    return [replace(state, sessions=tuple(kept), owners=owners, unnamed_forks=forks)], ""


MODEL: dict[str, Callable[[State, Call, Contract], Step]] = {
    "acquire": _acquire,
    "register": _register,
    "ownerOf": _owner_of,
    "fork": _fork,
    "release": _release,
    "forget": _forget,
    "pin": _same,
    "unpin": _same,
    "touch": _same,
    "noteTaskRun": _note_task_run,
    "list": _list,
    "listPlaced": _list_placed,
    "incarnationOf": _incarnation_of,
    "read": _composite(_read),
    "write": _composite(_write),
    "restart": _restart,
    "crash": _restart,
}
"""The model's step for each operation of a history."""


@dataclass
class HistoryVerdict:
    ok: bool
    explained: int
    """How many operations the furthest order found explains before it is stuck."""
    stuck: list[str] = field(default_factory=list)
    """At that point, each operation that could come next and why the model cannot take its answer."""
    searched: int = 0

    def message(self, total: int) -> str:
        if self.ok:
            return f"linearizable ({total} operations)"
        head = (
            f"no order of the {total} operations consistent with real time explains every answer; "
            f"the furthest order explains {self.explained}, then"
        )
        return head + ": " + " | ".join(self.stuck[:4])


def _conflicts_explained(calls: Sequence[Call]) -> list[str]:
    """A ``conflict`` refusal of a write is explained only by another write of the same session that
    overlaps it in real time (the view is read fresh at the start of each write)."""
    problems = []
    for call in calls:
        if call.op != "write" or call.outcome != "fail" or call.answer != "conflict":
            continue
        rivals = [
            other
            for other in calls
            if other is not call
            and other.op == "write"
            and other.params.get("sessionId") == call.params.get("sessionId")
            and other.invoke < (call.complete or 1 << 60)
            and (other.complete is None or other.complete > call.invoke)
        ]
        if not rivals:
            problems.append(f"{call.describe()}: a conflict with no write racing it")
    return problems


def _span(call: Call) -> tuple[int, int]:
    return call.invoke, call.complete if call.complete is not None else 1 << 60


def _one_live_session(calls: Sequence[Call]) -> list[str]:
    """Acquires of one id over one connection that overlap in real time answer one live session (the
    same ``ref``, SS-LIFE-004, KD-SS-4), unless something that drops the view overlaps them."""
    droppers = ("forget", "release", "read", "write")
    acquired = [c for c in calls if c.op == "acquire" and c.outcome == "ok"]
    problems = []
    for i, first in enumerate(acquired):
        (a0, a1), key = _span(first), (first.process, first.params["sessionId"])
        for second in acquired[i + 1 :]:
            b0, b1 = _span(second)
            if (second.process, second.params["sessionId"]) != key or not (a0 < b1 and b0 < a1):
                continue
            start, end = min(a0, b0), max(a1, b1)
            dropped = any(
                (
                    c.op in ("restart", "crash")
                    or (c.op in droppers and (c.process, c.params.get("sessionId")) == key)
                )
                and _span(c)[0] < end
                and _span(c)[1] > start
                for c in calls
            )
            refs = (first.answer or {}).get("ref"), (second.answer or {}).get("ref")
            if not dropped and refs[0] != refs[1]:
                problems.append(f"{first.describe()} and {second.describe()}: two live sessions at once")
    return problems


def check_history(calls: Sequence[Call], rules: Contract, *, budget: int = 200_000) -> HistoryVerdict:
    """Whether one order of ``calls`` consistent with real time explains every answer (module doc).
    ``budget`` bounds the states visited; a search that runs out of it passes no judgement it cannot
    make and says so in ``stuck``, failing."""
    problems = _conflicts_explained(calls) + _one_live_session(calls)
    if problems:
        return HistoryVerdict(ok=False, explained=0, stuck=problems)
    ordered = sorted(calls, key=lambda c: c.invoke)
    completed = [c for c in ordered if c.complete is not None]
    memo: set[tuple[frozenset[int], State]] = set()
    best = HistoryVerdict(ok=False, explained=-1)

    def note_stuck(depth: int, reason: str) -> None:
        if depth > best.explained:
            best.explained, best.stuck = depth, []
        if depth == best.explained and reason not in best.stuck:
            best.stuck.append(reason)

    def search(done: frozenset[int], state: State) -> bool:
        pending = [c for c in completed if c.index not in done]
        if not pending:
            return True
        if (done, state) in memo:
            return False
        if len(memo) >= budget:
            note_stuck(len(done), f"the search gave up after {budget} states")
            return False
        memo.add((done, state))
        horizon = min(c.complete for c in pending if c.complete is not None)
        for call in ordered:
            if call.invoke > horizon:
                break
            if call.index in done:
                continue
            successors, why = MODEL[call.op](state, call, rules)
            if not successors:
                note_stuck(len(done), f"{call.describe()}: {why}")
            for successor in _unique(successors):
                if search(done | {call.index}, successor):
                    return True
        return False

    ok = search(frozenset(), State())
    return HistoryVerdict(ok=ok, explained=max(best.explained, 0), stuck=best.stuck, searched=len(memo))


def _unique(states: Iterable[State]) -> list[State]:
    out: list[State] = []
    for state in states:
        if state not in out:
            out.append(state)
    return out
