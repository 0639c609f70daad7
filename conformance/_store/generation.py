"""Generated cases for the session-store profile: programs of concurrent operations, judged as histories.

:func:`programs` is a Hypothesis strategy of store programs (the ``history`` scenario,
``_store/history_run.py``) for the faces a store declares: rounds of operations sent at once over one
to three connections (one for a store whose storage lives in its instance), with restarts and crashes
between rounds, and, where every connection is a process of its own, a SIGKILL while a round is in
flight.  Ids come from small pools, so operations collide: two ordinary ids, one id meant for a
placement (claim-form acquires of it are generated too), and the ids the forks of earlier rounds
answered.  Swarm choices per program: about half the kinds of operation, a subset of the ids, an opening
round that acquires them, and whether operations follow each other (``_Ids``: a fork of the session just
touched, then operations on the fork), so that rules meeting on one session are drawn often.

:func:`fuzz_store` runs up to ``examples`` programs against an implementation (a fixed seed
gives the same programs), judges each history (``_store/history_check.py``), and
shrinks the first failure to the smallest program Hypothesis finds; :func:`program_case` writes it as a
store case that ``run --profile session-store --cases DIR`` replays.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st
from ruamel.yaml import YAML

from relavium_conformance._errors import AdapterError, KitUsageError
from relavium_conformance._store.execute import AdapterFactory, CaseFailure, ConnectionPool, StoreWorld
from relavium_conformance._store.history_run import contract_of, judge_program, play_program
from relavium_conformance._store.protocol import StoreDeclaration, declaration_of

__all__ = [
    "AREAS",
    "CLAUSE_AREAS",
    "DEFAULT_EXAMPLES",
    "SELFTEST_SEED",
    "GeneratedCatch",
    "StoreFuzzOutcome",
    "StoreProgramResult",
    "case_yaml_for",
    "catch_by_generation",
    "check_store_program",
    "fuzz_store",
    "needs_of",
    "program_case",
    "program_sequence",
    "programs",
    "run_program",
    "store_programs",
]

DEFAULT_EXAMPLES = 100
BATCH = 25
"""The progress line is printed every ``BATCH`` examples."""

AREAS: dict[str, tuple[str, ...]] = {
    "lifecycle": ("acquire", "release", "touch", "forget", "pin", "unpin", "read", "write", "register"),
    "ownership": ("acquire", "register", "ownerOf", "fork", "release", "forget"),
    "forks": ("acquire", "fork", "read", "write", "ownerOf", "register", "incarnationOf"),
    "placement": ("acquire", "place", "listPlaced", "list", "release", "ownerOf"),
    "runs": ("acquire", "noteTaskRun", "list", "release", "fork"),
    "incarnation": ("acquire", "incarnationOf", "release", "fork", "place"),
}
"""``fuzz --area``: the operations a narrowed run generates (``place``: an acquire with a placement)."""

CLAUSE_AREAS = {
    "SS-LIFE": "lifecycle",
    "SS-GEN": "lifecycle",
    "SS-REG": "ownership",
    "SS-OWN": "ownership",
    "SS-FORK": "forks",
    "SS-PLACE": "placement",
    "SS-TYPE": "placement",
    "SS-RUN": "runs",
    "SS-INC": "incarnation",
}
"""The generation area of a clause's area (the selftest generates where a break's first clause is)."""

_FACE_OF = {
    "forget": "forget",
    "read": "forget",
    "write": "forget",
    "pin": "pin",
    "unpin": "pin",
    "noteTaskRun": "noteTaskRun",
    "list": "list",
    "listPlaced": "listPlaced",
    "fork": "fork",
    "register": "ownership",
    "ownerOf": "ownership",
    "incarnationOf": "incarnationOf",
}

CLAUSES: dict[str, tuple[str, ...]] = {
    "acquire": ("SS-LIFE-004", "SS-LIFE-005", "SS-LIFE-006"),
    "place": ("SS-PLACE-015", "SS-PLACE-016", "SS-PLACE-017"),
    "register": ("SS-REG-001", "SS-REG-003"),
    "ownerOf": ("SS-OWN-002", "SS-OWN-003", "SS-OWN-004", "SS-OWN-005"),
    "fork": ("SS-FORK-004", "SS-FORK-005", "SS-FORK-012"),
    "release": ("SS-LIFE-010", "SS-LIFE-011", "SS-REG-005", "SS-PLACE-014"),
    "forget": ("SS-LIFE-012",),
    "read": ("SS-LIFE-012", "SS-LIFE-003"),
    "write": ("SS-LIFE-003", "SS-FORK-006"),
    "noteTaskRun": ("SS-RUN-020", "SS-RUN-022", "SS-RUN-024"),
    "list": ("SS-RUN-002", "SS-RUN-026", "SS-RUN-027", "SS-PLACE-012"),
    "listPlaced": ("SS-PLACE-005", "SS-PLACE-018"),
    "incarnationOf": ("SS-INC-001", "SS-INC-002", "SS-INC-004"),
    "restart": ("SS-GEN-007", "SS-LIFE-003", "SS-PLACE-011"),
    "crash": ("SS-GEN-007",),
}
"""The clauses a program's operations are judged by (a written case cites those of its operations)."""

_IDS = ("s1", "s1", "s2")
"""Ordinary ids, ``s1`` drawn twice as often: most operations meet on one session."""
_PLACED_ID = "p1"


def _available(declaration: StoreDeclaration, area: str | None) -> list[str]:
    wanted = AREAS[area] if area is not None else {op for ops in AREAS.values() for op in ops}
    out = []
    for op in sorted(wanted):
        face = _FACE_OF.get(op)
        if face is not None and face not in declaration.faces:
            continue
        if op in ("place", "listPlaced") and declaration.placements is None:
            continue
        if op in ("read", "write") and declaration.rejects_require_existing:
            continue  # (they reopen with requireExisting, which such a store refuses, as declared)
        out.append(op)
    return out


@dataclass
class _Ids:
    """Which session an operation names.  A program that follows (a swarm choice) mostly names the
    session its earlier rounds touched last: a fork takes the newest session as its source (one acquired,
    registered or written before it), and what comes after a fork mostly names the fork, so that a
    register before a fork, a write to a fork or a fork of a fork are drawn often."""

    ids: list[str]
    follow: bool
    recent: list[str] = field(default_factory=list)
    """The ids earlier rounds named, the newest last (a fork as ``"$fN"``, the name it answers under:
    only a fork of an earlier round is named, one of the same round has not answered yet)."""
    forks: int = 0

    def pick(self, kind: str, data: st.DataObject) -> str:
        made = [f"$f{n}" for n in range(max(1, self.forks - 1), self.forks + 1)]  # the newest two forks
        usable = [i for i in [*self.ids, *made] if kind != "fork" or i != _PLACED_ID] or [_IDS[0]]
        newest = [i for i in self.recent if kind != "fork" or i != _PLACED_ID][-1:]
        if self.follow and newest and data.draw(st.sampled_from([False, True, True])):
            return newest[0]
        return data.draw(st.sampled_from(usable))

    def after(self, ops: Sequence[dict[str, Any]]) -> None:
        """Note a round's operations (forks are named in program order, as :func:`_number` names them)."""
        for op in ops:
            if op["op"] == "fork":
                self.forks += 1
                named = f"$f{self.forks}"
            else:
                named = op["params"].get("sessionId")
                if not isinstance(named, str):
                    continue
            self.recent = [*(i for i in self.recent if i != named), named]


def _op(kind: str, via: str, data: st.DataObject, ids: _Ids) -> dict[str, Any]:
    sid = ids.pick(kind, data)
    params: dict[str, Any]
    if kind == "acquire":
        params = {"sessionId": sid}
        if data.draw(st.sampled_from([False, False, True])):
            params["requireExisting"] = True
    elif kind == "place":
        scope = data.draw(st.sampled_from(["t1", "t2", None]))
        handle = data.draw(st.sampled_from(["h1", None]))
        placement = {"kind": "subagent", **({"scope": scope} if scope else {})}
        placement.update({"handle": handle} if handle else {})
        params = {"sessionId": _PLACED_ID, "placement": placement}
        if data.draw(st.booleans()):
            params["requireExisting"] = True
        return {"op": "acquire", "via": via, "params": params}
    elif kind == "register":
        params = {"sessionId": sid, "owner": data.draw(st.sampled_from(["alice", "bob", None]))}
    elif kind == "fork":
        params = {"sourceId": sid}
        owner = data.draw(st.sampled_from(["inherit", None, "carol"]))
        if owner != "inherit":
            params["owner"] = owner
        return {"op": "fork", "via": via, "params": params, "name": "f"}
    elif kind == "noteTaskRun":
        params = {"sessionId": sid, "taskId": data.draw(st.sampled_from(["t1", "t2"]))}
        if data.draw(st.booleans()):
            params["runId"] = data.draw(st.sampled_from(["r1", "r2"]))
    elif kind == "listPlaced":
        params = {"kind": "subagent"}
        scope = data.draw(st.sampled_from([None, "t1"]))
        if scope:
            params["scope"] = scope
    elif kind == "list":
        params = {}
    elif kind == "write":
        params = {"sessionId": sid, "entry": "w"}
    else:
        params = {"sessionId": sid}
    return {"op": kind, "via": via, "params": params}


def _number(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each fork its name and each written entry its id, in program order."""
    forks, entries = 0, 0
    for step in rounds:
        for op in step.get("ops", ()):
            if op["op"] == "fork":
                forks += 1
                op["name"] = f"f{forks}"
            if op["op"] == "write":
                entries += 1
                op["params"]["entry"] = f"w{entries}"
    return rounds


def _race(op: dict[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
    """``op`` sent from every connection; racing registers each carry an owner of their own."""
    out = []
    for i, name in enumerate(names):
        params = dict(op["params"])
        if op["op"] == "register":
            params["owner"] = ("alice", "bob", "carol")[i]
        out.append({**op, "via": name, "params": params})
    return out


def _one_writer(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most one write of a session per connection in a round: two writers over one connection share
    the one live session the store hands out (KD-SS-4), and the optimistic lock is between instances."""
    kept, writers = [], set()
    for op in ops:
        if op["op"] == "write":
            key = (op["via"], op["params"]["sessionId"])
            if key in writers:
                continue
            writers.add(key)
        kept.append(op)
    return kept


def programs(
    declaration: StoreDeclaration, *, area: str | None = None, processes: bool = False
) -> st.SearchStrategy[dict[str, Any]]:
    """Store programs for ``declaration`` (module doc); ``processes``: crashes may land mid-round."""
    kinds = _available(declaration, area)
    if not kinds:
        raise KitUsageError(f"the store declares no face the area {area!r} needs")
    shared = declaration.durability == "durable"

    @st.composite
    def program(draw: Any) -> dict[str, Any]:
        data = draw(st.data())
        count = draw(st.integers(1, 3)) if shared else 1
        names = [chr(ord("a") + i) for i in range(count)]
        # swarm testing: each program uses about half the kinds of operation, so that they meet often
        swarm = [kind for kind in kinds if kind != "acquire" and draw(st.booleans())] + ["acquire"]
        pool = [*dict.fromkeys(_IDS), *([_PLACED_ID] if "place" in swarm else [])]
        # and on ids: a program's operations meet on the few sessions it draws
        ids = [sid for sid in pool if draw(st.booleans())] or pool[-1:]
        # and on order: a program that follows names what its earlier rounds touched (``_Ids``)
        chooser = _Ids(ids, follow=draw(st.booleans()))
        rounds: list[dict[str, Any]] = []
        if draw(st.booleans()):  # an opening: the program's sessions exist before anything else is sent
            opening = [
                {"op": "acquire", "via": "a", "params": {"sessionId": sid}}
                for sid in ids
                if sid != _PLACED_ID
            ]
            rounds.append({"ops": opening})
            chooser.after(opening)
        for _ in range(draw(st.integers(3, 12))):
            what = draw(st.sampled_from(["ops", "ops", "ops", "ops", "race", "race", "restart", "crash"]))
            if what == "restart":
                rounds.append({"restart": True})
                continue
            if what == "race" and count > 1:  # one operation from every connection at once
                raced = _one_writer(_race(_op(draw(st.sampled_from(swarm)), "a", data, chooser), names))
                rounds.append({"ops": raced})
                chooser.after(raced)
                continue
            crash = draw(st.sampled_from(names)) if what == "crash" else None
            if crash is not None and not (processes and draw(st.booleans())):
                rounds.append({"crash": crash})
                continue
            ops = _one_writer(
                [
                    _op(draw(st.sampled_from(swarm)), draw(st.sampled_from(names)), data, chooser)
                    for _ in range(draw(st.integers(1, 4)))
                ]
            )
            rounds.append({"ops": ops, **({"crash": crash} if crash else {})})
            chooser.after(ops)
        return {
            "kind": "history",
            "connections": count,
            "processes": processes,
            "rounds": _number(rounds),
            "observe": pool,
        }

    return program()


def _ops_of(program: Mapping[str, Any]) -> list[str]:
    found = []
    for step in program.get("rounds", ()):
        if step.get("restart"):
            found.append("restart")
        if step.get("crash"):
            found.append("crash")
        for op in step.get("ops", ()):
            found.append("place" if op["op"] == "acquire" and "placement" in op["params"] else op["op"])
    return found


def needs_of(program: Mapping[str, Any], declaration: StoreDeclaration) -> list[str]:
    """The store capability words a program needs to be played as it was generated."""
    needs = {_FACE_OF[op] for op in _ops_of(program) if op in _FACE_OF}
    if "place" in _ops_of(program) and declaration.placements is not None:
        needs.add(f"placements:{declaration.placements}")
    if int(program.get("connections", 1)) > 1 or declaration.durability == "durable":
        needs.add(declaration.durability)  # the model of restarts (and shared storage) is the declared one
    if program.get("processes"):
        needs.add("replicas")
    return sorted(needs)


def program_case(program: Mapping[str, Any], declaration: StoreDeclaration, why: str, title: str) -> str:
    """A failing program as a store case file (YAML), named by a digest of the program."""
    digest = hashlib.sha256(json.dumps(program, sort_keys=True).encode()).hexdigest()[:10]
    judged = _ops_of(program)
    if program.get("observe"):  # the final reads judge through every reading face the store declares
        judged += [
            op
            for op in ("ownerOf", "incarnationOf", "list", "listPlaced")
            if _FACE_OF[op] in declaration.faces
        ]
    clauses = sorted({c for op in judged for c in CLAUSES.get(op, ())}) or ["SS-LIFE-005"]
    document = {
        "id": f"store/generated-{digest}",
        "title": title,
        "clauses": clauses,
        "kit_defined": ["KD-SS-4"],
        "needs": needs_of(program, declaration),
        "scenario": dict(program),
    }
    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = None
    yaml.width = 110
    yaml.dump(document, out)
    return f"# {why}\n" + out.getvalue()


@dataclass
class StoreFuzzOutcome:
    examples: int = 0
    """Examples generated (up to and including the first failing one, when one fails)."""
    seconds: float = 0.0
    """Wall time, shrinking included."""
    failure: dict[str, Any] | None = None
    """The shrunk failing program."""
    message: str = ""
    history: list[str] = field(default_factory=list)
    out_of_time: bool = False


class _Found(Exception):
    """A program whose history the contract does not explain (Hypothesis shrinks it)."""


async def run_program(
    factory: AdapterFactory,
    replicas: AdapterFactory | None,
    declaration: StoreDeclaration,
    program: Mapping[str, Any],
    timeout: float,
) -> tuple[str, list[str]]:
    """Play one program on fresh storage; ``("", history)`` when the history is explained, else why not."""
    pool = ConnectionPool(factory, replicas)
    processes = bool(program.get("processes"))
    with tempfile.TemporaryDirectory(prefix="relavium-store-fuzz-") as location:
        world = StoreWorld(pool, location, declaration, timeout, replicas=processes)
        try:
            calls = await play_program(world, program)
            _verdict, differences = judge_program(calls, contract_of(world))
            return (differences[0].message if differences else ""), [c.describe() for c in calls]
        except CaseFailure as failure:
            return failure.differences[0].message, []
        except AdapterError as exc:
            return f"errored: {exc.reason}", []
        finally:
            await world.close_all(keep_primary=False)
            await pool.drop()


def fuzz_store(
    factory: AdapterFactory,
    declaration: StoreDeclaration,
    *,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = None,
    area: str | None = None,
    replicas: AdapterFactory | None = None,
    timeout: float = 15.0,
    time_budget: float | None = None,
    on_progress: Callable[[int, int, float], None] | None = None,
) -> StoreFuzzOutcome:
    """Run up to ``examples`` generated programs (module doc); the first failure comes back shrunk.
    Past ``time_budget`` seconds no further program is played (and none counts as an example)."""
    strategy = programs(declaration, area=area, processes=replicas is not None)
    outcome = StoreFuzzOutcome()
    started = time.perf_counter()
    runner = asyncio.Runner()
    last: dict[str, Any] = {}

    def attempt(program: dict[str, Any]) -> None:
        if "program" not in last:  # generating: mind the budget, count, say how far it got
            if time_budget is not None and time.perf_counter() - started >= time_budget:
                outcome.out_of_time = True
                return
            outcome.examples += 1
            if on_progress is not None and outcome.examples % BATCH == 0:
                on_progress(outcome.examples, examples, time.perf_counter() - started)
        why, history = runner.run(run_program(factory, replicas, declaration, program, timeout))
        if why:
            last.update(program=program, why=why, history=history)
            raise _Found(why)

    test = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )(given(strategy)(attempt))
    if seed is not None:
        test = fixed_seed(seed)(test)
    try:
        test()
    except _Found:
        outcome.failure = last.get("program")
        outcome.message, outcome.history = str(last.get("why")), list(last.get("history", []))
    finally:
        runner.close()
    outcome.seconds = time.perf_counter() - started
    return outcome


def program_sequence(declaration: StoreDeclaration, seed: int, count: int) -> list[dict[str, Any]]:
    """The first ``count`` programs a fixed seed generates (for the determinism test)."""
    drawn: list[dict[str, Any]] = []
    strategy = programs(declaration)

    def keep(program: dict[str, Any]) -> None:
        drawn.append(program)

    test = settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(keep))
    fixed_seed(seed)(test)()
    return drawn


def case_yaml_for(
    outcome: StoreFuzzOutcome, declaration: StoreDeclaration, seed: int | None, name: str
) -> str:
    assert outcome.failure is not None
    why = f"found by relavium-conformance fuzz --profile session-store against {name}" + (
        f" (seed {seed})" if seed is not None else ""
    )
    rounds = len(outcome.failure.get("rounds", ()))
    title = f"a generated program ({rounds} rounds) whose history no order of its operations explains"
    return program_case(outcome.failure, declaration, why, title)


SELFTEST_SEED = 0
"""The seed the selftest generates with: a break is proven only if this seed finds it."""


@dataclass(frozen=True)
class GeneratedCatch:
    case: Any
    """The shrunk program as a store case (:class:`~relavium_conformance._store.cases.StoreCase`)."""
    examples: int
    message: str


def catch_by_generation(
    factory: AdapterFactory,
    declaration: StoreDeclaration,
    *,
    clause: str | None = None,
    examples: int = DEFAULT_EXAMPLES,
) -> GeneratedCatch | None:
    """Fuzz ``factory`` at :data:`SELFTEST_SEED`, in the area of ``clause`` (as ``fuzz --area`` would);
    the shrunk failure as a store case, or ``None``.  Synchronous (it runs its own event loop): from
    async code call it in a thread."""
    from relavium_conformance._store.cases import StoreCase

    area = CLAUSE_AREAS.get(clause.rpartition("-")[0]) if clause else None
    outcome = fuzz_store(factory, declaration, examples=examples, seed=SELFTEST_SEED, area=area)
    if outcome.failure is None:
        return None
    text = program_case(outcome.failure, declaration, "selftest", "a generated program the break fails")
    case = StoreCase.model_validate(YAML(typ="safe", pure=True).load(text))
    return GeneratedCatch(case=case, examples=outcome.examples, message=outcome.message)


@dataclass(frozen=True)
class StoreProgramResult:
    """One generated program played against a store (:func:`check_store_program`)."""

    passed: bool
    """Whether one order of the recorded operations, consistent with real time, explains every answer."""
    message: str
    """Why no order explains the history (empty when it passed)."""
    history: tuple[str, ...]
    """The recorded operations, one line each, in the order they were sent."""
    case_yaml: str
    """The program as a store case that ``run --profile session-store --cases DIR`` replays (its first
    line, a comment, says why it failed)."""


def _declared(capabilities: Sequence[str]) -> StoreDeclaration:
    if isinstance(capabilities, str):
        raise KitUsageError("capabilities: a sequence of capability words, not one string")
    declaration = declaration_of(tuple(capabilities))
    if not declaration.profile:
        raise KitUsageError("capabilities: a store declares 'session-store' (and its store:... words)")
    return declaration


def store_programs(
    capabilities: Sequence[str], *, area: str | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """Programs for the store whose ``hello`` declares ``capabilities``, as ``fuzz --profile
    session-store`` generates them; ``area`` narrows to one of :data:`AREAS`."""
    if area is not None and area not in AREAS:
        raise KitUsageError(f"area {area!r}: the store areas are {', '.join(AREAS)}")
    return programs(_declared(capabilities), area=area)


def check_store_program(
    factory: AdapterFactory,
    capabilities: Sequence[str],
    program: Mapping[str, Any],
    *,
    timeout: float = 15.0,
) -> StoreProgramResult:
    """Play ``program`` on fresh storage over connections ``factory`` opens, and judge its history.
    Synchronous (it runs its own event loop): from async code call it in a thread."""
    declaration = _declared(capabilities)
    with asyncio.Runner() as runner:
        why, history = runner.run(run_program(factory, None, declaration, program, timeout))
    rounds = len(program.get("rounds", ()))
    why = " ".join(why.split())  # one comment line
    text = program_case(
        program,
        declaration,
        "generated by relavium_conformance.strategies.store_programs" + (f"; failed: {why}" if why else ""),
        f"a generated program ({rounds} rounds), judged as a history of concurrent operations",
    )
    return StoreProgramResult(passed=not why, message=why, history=tuple(history), case_yaml=text)
