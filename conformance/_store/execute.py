"""Carrying out one store case: the kit opens the connections, plays the clock, restarts the store.

Every connection of a case is a fresh connection of the implementation (in-process: another instance
of it; over stdio: another process), opened with ``store.open`` over the same storage location, a
directory the kit creates for the case.  The kit's clock starts at :data:`CLOCK_START` for stores that
take it.  An answer is read with the kit's own models (``_store/protocol.py``) before it is matched:
a malformed one fails the case, a broken connection makes it ``errored``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from relavium_conformance._errors import AdapterError, KitError, KitUsageError
from relavium_conformance._judge.matching import match
from relavium_conformance._report.results import CaseResult, CaseStatus, Difference, one_line
from relavium_conformance._store.cases import AnyStoreCase, StoreCase, StoreStep, StoreVectorCase
from relavium_conformance._store.protocol import METHODS_BY_NAME, StoreDeclaration, declaration_of
from relavium_conformance._wire.adapters import Adapter, Breakage, StdioAdapter
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import OperationError
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = [
    "CLOCK_START",
    "AdapterFactory",
    "CaseFailure",
    "ConnectionPool",
    "StoreWorld",
    "execute_store_case",
    "unsupported_reason",
]

CLOCK_START = 1_700_000_000_000
OPTION_CLAUSE = "SS-LIFE-007"
"""The clause a store that refuses ``requireExisting`` is judged on by the cases that use the option."""
_REF = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)$")

AdapterFactory = Callable[[], Adapter]
"""Makes a new, unopened connection of the implementation under test."""


class CaseFailure(KitError):
    """An expected observation was not met (the case fails, it does not error)."""

    def __init__(self, differences: Sequence[Difference]) -> None:
        super().__init__(differences[0].message if differences else "failed")
        self.differences = list(differences)


async def _no_callbacks(method: str, params: dict[str, Any]) -> Any:
    raise RpcError(-32601, f"the session-store profile plays no callback ({method})")


def _method(op: str) -> str:
    for room in ("store", "pure"):
        if f"{room}.{op}" in METHODS_BY_NAME:
            return f"{room}.{op}"
    raise KitUsageError(f"unknown store operation {op!r}")


class ConnectionPool:
    """The run's long-lived first connection (reused by every case: ``store.open`` gives each case its
    own storage), and the factory of further connections.  A case that restarts the store replaces it."""

    def __init__(self, factory: AdapterFactory, replicas: AdapterFactory | None = None) -> None:
        self.factory = factory
        self.replicas = replicas
        """Connections that each run in a process of their own (the replica cases), if the adapter
        names a way to start one; a stdio adapter is its own."""
        self.primary: Adapter | None = None
        self.hello: HelloResult | None = None
        self.dropped: tuple[Adapter, Breakage] | None = None
        """The primary connection last dropped broken, and why: the runner books a breakage that
        belongs to an earlier case's request on that case (it clears this before each case)."""

    async def take(self) -> tuple[Adapter, bool]:
        """The primary connection, and whether it was opened just now."""
        if self.primary is not None:
            return self.primary, False
        adapter = self.factory()
        if self.replicas is None and isinstance(adapter, StdioAdapter):
            self.replicas = self.factory
        try:
            self.hello = await adapter.open(_no_callbacks)
        except BaseException:
            with contextlib.suppress(Exception):
                await adapter.close()
            raise
        self.primary = adapter
        return adapter, True

    async def drop(self) -> None:
        adapter, self.primary = self.primary, None
        if adapter is not None:
            breakage = adapter.breakage()
            if breakage is not None:
                self.dropped = (adapter, breakage)
            with contextlib.suppress(Exception):
                await adapter.close()


class StoreWorld:
    """The connections of one case, the kit's clock and the saved answers."""

    def __init__(
        self,
        pool: ConnectionPool,
        location: str,
        declaration: StoreDeclaration,
        timeout: float,
        *,
        replicas: bool = False,
    ):
        self.pool = pool
        self.replicas = replicas
        """Every connection is a process of its own (a replica), the pool's primary is not used."""
        self.factory = pool.replicas if replicas and pool.replicas is not None else pool.factory
        self.location = location
        self.declaration = declaration
        self.timeout = timeout
        self.connections: dict[str, Adapter] = {}
        self.clock: int | None = CLOCK_START if declaration.clock else None
        self.saved: dict[str, Any] = {}
        self.stderr: list[str] = []
        self.refuses_option = declaration.rejects_require_existing
        """Every acquire with ``requireExisting`` must be refused, and the case ends there (a case that
        ``needs: [rejects-requireExisting]`` states the refusals itself and clears this)."""

    async def connection(self, name: str) -> Adapter:
        adapter = self.connections.get(name)
        if adapter is None:
            if name == "a" and not self.replicas:
                adapter, _fresh = await self.pool.take()
            else:
                adapter = self.factory()
                await adapter.open(_no_callbacks)
            self.connections[name] = adapter
            await adapter.call(
                "store.open", {"location": self.location, "clockMs": self.clock}, timeout=self.timeout
            )
        return adapter

    async def call(self, name: str, method: str, params: dict[str, Any]) -> Any:
        adapter = await self.connection(name)
        answer = await adapter.call(method, params, timeout=self.timeout)
        row = METHODS_BY_NAME[method]
        try:
            row.result.model_validate(answer)
        except ValidationError as exc:
            raise CaseFailure(
                [
                    Difference(
                        path=method,
                        message=f"malformed answer: {one_line(str(exc))}",
                        actual=_jsonable(answer),
                    )
                ]
            ) from None
        return answer

    async def advance(self, ms: int) -> None:
        if self.clock is None:
            raise KitUsageError("advance needs the store's clock (needs: [clock])")
        self.clock += ms
        for name in list(self.connections):
            await self.call(name, "store.setClock", {"nowMs": self.clock})

    async def close_all(self, *, dispose: bool = True, keep_primary: bool = True) -> None:
        """Dispose every store; stop every connection but the pool's primary (unless told to)."""
        for adapter in self.connections.values():
            if dispose:
                with contextlib.suppress(Exception):
                    await adapter.call("store.dispose", {}, timeout=self.timeout)
            self.stderr += adapter.stderr_tail()
            if adapter is self.pool.primary:
                if not keep_primary:
                    await self.pool.drop()
                continue
            with contextlib.suppress(Exception):
                await adapter.close()
        self.connections.clear()

    async def restart(self) -> None:
        """Stop the implementation (every connection, the primary too) and start it again."""
        await self.close_all(keep_primary=False)
        await self.connection("a")

    def reopen(self, session_id: str) -> dict[str, Any]:
        """``store.acquire`` params that re-open a session the kit knows exists: with ``requireExisting``,
        or in claim form for a store that declares it rejects the option (what the kit then reads of
        the session tells a found one from one created empty in its place)."""
        if self.declaration.rejects_require_existing:
            return {"sessionId": session_id}
        return {"sessionId": session_id, "requireExisting": True}

    # --- saved values ------------------------------------------------------------------------------

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            found = _REF.match(value)
            if found is None:
                return value
            name, path = found.group(1), found.group(2)
            if name not in self.saved:
                raise KitUsageError(f"${name} is used before it is saved")
            current = self.saved[name]
            for part in filter(None, path.split(".")):
                current = current[int(part)] if isinstance(current, list) else current.get(part)
            return current
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.resolve(v) for v in value]
        return value


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return repr(value)


async def _op_step(world: StoreWorld, step: StoreStep, where: str) -> Any:
    assert step.op is not None
    method = _method(step.op)
    params = world.resolve(step.params)
    wanted = step.refusals
    try:
        answer = await world.call(step.via, method, params)
    except OperationError as refusal:
        code = refusal.code if refusal.kind == "session_error" else refusal.kind
        if wanted is not None and ("any" in wanted or code in wanted):
            return None
        raise CaseFailure(
            [
                Difference(
                    path=where,
                    message=f"{method} was refused ({refusal.kind} {code}): {refusal.message}",
                    expected=list(wanted) if wanted else "an answer",
                    actual=code,
                )
            ]
        ) from None
    if wanted is not None:
        raise CaseFailure(
            [
                Difference(
                    path=where, message=f"{method} must be refused", expected=list(wanted), actual=answer
                )
            ]
        )
    if step.expect is not None:
        differences = match(world.resolve(step.expect), answer, where)
        if differences:
            raise CaseFailure(differences)
    return answer


class OptionRefused(KitError):
    """A store that declares it rejects ``requireExisting`` refused it, as declared: the case ends."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


async def _refuses_option(world: StoreWorld, step: StoreStep, where: str) -> None:
    """The store declared ``store:rejects-requireExisting``: this acquire must be refused (any
    ``SessionError``), whatever the case expected of a store that checks existence."""
    try:
        answer = await world.call(step.via, "store.acquire", world.resolve(step.params))
    except OperationError as refusal:
        if refusal.kind == "session_error":
            raise OptionRefused(where) from None
        answer = f"{refusal.kind} {refusal.code or ''}: {refusal.message}"
    raise CaseFailure(
        [
            Difference(
                path=where,
                message="the store declares store:rejects-requireExisting, yet did not refuse the option "
                "with a SessionError",
                expected="a SessionError refusal (unsupported)",
                actual=_jsonable(answer),
                clauses=(OPTION_CLAUSE,),
            )
        ]
    )


async def _run_steps(world: StoreWorld, steps: Sequence[StoreStep], prefix: str) -> None:
    for index, step in enumerate(steps):
        where = f"{prefix}[{index}]" + (f" {step.op}" if step.op else "")
        option = _option_step(step) if world.refuses_option else None
        if option is not None:
            await _refuses_option(world, option, where)
        if step.op is not None:
            answer = await _op_step(world, step, where)
            if step.save:
                world.saved[step.save] = answer
        elif step.advance is not None:
            await world.advance(step.advance)
        elif step.restart:
            await world.restart()
        elif step.concurrent is not None:
            await _concurrent(world, step, where)
        elif step.check is not None:
            differences = match(world.resolve(step.expect), world.resolve(step.check), where)
            if differences:
                raise CaseFailure(differences)
        elif step.same is not None:
            items = world.saved.get(step.same.of)
            if not isinstance(items, list) or not items:
                raise KitUsageError(f"{where}: same needs a saved list {step.same.of}")
            values = [world.resolve(f"${step.same.of}.{i}.{step.same.key}") for i in range(len(items))]
            if len({repr(v) for v in values}) != 1:
                raise CaseFailure(
                    [
                        Difference(
                            path=where, message=f"the answers disagree at {step.same.key}", actual=values
                        )
                    ]
                )


def _option_step(step: StoreStep) -> StoreStep | None:
    """The step itself, or the first racer's step, that acquires with ``requireExisting`` and expects
    more than a refusal of any kind (a step written ``error: any`` already accepts the rejection)."""
    if step.op == "acquire" and step.params.get("requireExisting") is True:
        return None if "any" in (step.refusals or ()) else step
    for racer in step.concurrent or ():
        for inner in racer:
            if _option_step(inner) is not None:
                return inner
    return None


async def _concurrent(world: StoreWorld, step: StoreStep, where: str) -> None:
    assert step.concurrent is not None
    racers = list(step.concurrent) * (step.count or 1)
    for racer in racers:  # open every connection first: the race is between calls, not handshakes
        for inner in racer:
            if inner.op is not None:
                await world.connection(inner.via)
    collected: dict[str, list[Any]] = {}

    async def race(index: int, racer: Sequence[StoreStep]) -> dict[str, Any]:
        saved: dict[str, Any] = {}
        for j, inner in enumerate(racer):
            answer = await _op_step(world, inner, f"{where}.racer[{index}][{j}]")
            if inner.save:
                saved[inner.save] = answer
        return saved

    for adapter in world.connections.values():
        adapter.cork()
    tasks = [asyncio.ensure_future(race(i, r)) for i, r in enumerate(racers)]
    await asyncio.sleep(0)
    for adapter in world.connections.values():
        await adapter.uncork()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
        for name, answer in result.items():
            collected.setdefault(name, []).append(answer)
    world.saved.update(collected)


async def _register_race(world: StoreWorld, scenario: dict[str, Any]) -> None:
    """``rounds`` races: ``racers`` callers spread over ``connections`` each register their own owner
    for one fresh id and read it back.  One owner must win, and every caller must read the winner."""
    connections = [chr(ord("a") + i) for i in range(int(scenario.get("connections", 2)))]
    racers = int(scenario.get("racers", 2))
    rounds = int(scenario.get("rounds", 1))
    for name in connections:
        await world.connection(name)
    failures: list[Difference] = []
    for round_no in range(rounds):
        session_id = f"race-{round_no}"
        owners = [f"owner-{i}" for i in range(racers)]

        async def racer(i: int, sid: str = session_id, names: list[str] = owners) -> Any:
            conn = connections[i % len(connections)]
            await world.call(conn, "store.register", {"sessionId": sid, "owner": names[i]})
            return (await world.call(conn, "store.ownerOf", {"sessionId": sid})).get("owner")

        for adapter in world.connections.values():
            adapter.cork()
        tasks = [asyncio.ensure_future(racer(i)) for i in range(racers)]
        await asyncio.sleep(0)
        for adapter in world.connections.values():
            await adapter.uncork()
        read_back = await asyncio.gather(*tasks)
        after = [
            (await world.call(c, "store.ownerOf", {"sessionId": session_id})).get("owner")
            for c in connections
        ]
        seen = set(read_back) | set(after)
        if len(seen) != 1 or next(iter(seen)) not in owners:
            failures.append(
                Difference(
                    path=f"round {round_no}",
                    message="the racers did not all read back one winner",
                    expected="one of the registered owners, the same for every caller",
                    actual={"readBack": list(read_back), "afterwards": after},
                )
            )
    world.saved["rounds"] = rounds
    if failures:
        raise CaseFailure(failures)


async def _declaration(world: StoreWorld, scenario: dict[str, Any]) -> None:
    """The declaration must be readable as one promise; absent durability reads as process-local, so
    a store that declared none is never judged on surviving a restart."""
    del scenario
    problems = world.declaration.problems()
    if problems:
        raise CaseFailure([Difference(path="hello.capabilities", message="; ".join(problems))])
    await world.connection("a")


async def _release_owned(world: StoreWorld, scenario: dict[str, Any]) -> None:
    """An owned session is released, then ``ownerOf`` read: a store may keep or delete the history on
    release, but while the history is there the ownership row is too (it never expires first).  Run for
    an ordinary session and, where placements are declared, a placed one (whose release deletes)."""
    del scenario
    placement = {"kind": "subagent", "scope": "t1", "handle": "a1"}
    kinds: list[tuple[str, dict[str, Any]]] = [("ordinary", {})]
    if world.declaration.placements is not None:
        kinds.append(("placed", {"placement": placement}))
    failures: list[Difference] = []
    for kind, extra in kinds:
        sid = f"{kind}-owned"
        made = await world.call("a", "store.acquire", {"sessionId": sid, **extra})
        entry = {"id": "e1", "parentId": None, "type": "message"}
        await world.call("a", "store.append", {"ref": made["ref"], "entries": [entry]})
        await world.call("a", "store.register", {"sessionId": sid, "owner": "alice"})
        await world.call("a", "store.release", {"sessionId": sid})
        after = (await world.call("a", "store.ownerOf", {"sessionId": sid})).get("owner", "(no row)")
        again = await world.call("a", "store.acquire", {"sessionId": sid, **extra})
        kept = [
            e.get("id") for e in (await world.call("a", "store.entries", {"ref": again["ref"]}))["entries"]
        ]
        reread = (await world.call("a", "store.ownerOf", {"sessionId": sid})).get("owner", "(no row)")
        if kept not in (["e1"], []):
            failures.append(
                Difference(
                    path=f"{kind}: entries after release",
                    message="release left part of the history",
                    expected="the whole history or none",
                    actual=kept,
                )
            )
        elif kept == ["e1"] and (after, reread) != ("alice", "alice"):
            failures.append(
                Difference(
                    path=f"{kind}: ownerOf after release",
                    message="the history outlived release, its ownership row did not",
                    expected="alice",
                    actual={"afterRelease": after, "afterAcquire": reread},
                )
            )
    if failures:
        raise CaseFailure(failures)


SCENARIOS = {
    "register-race": _register_race,
    "declaration": _declaration,
    "release-owned": _release_owned,
}


async def _vector_case(world: StoreWorld, case: StoreVectorCase) -> None:
    differences: list[Difference] = []
    method = f"pure.{case.function}"
    for vector in case.vectors:
        params = copy.deepcopy(vector.input)
        pristine = copy.deepcopy(params)
        answer = await world.call("a", method, params)
        differences += match(vector.expected, answer, vector.name, exact=True)
        if params != pristine:  # in-process the implementation holds the kit's very object
            differences.append(Difference(path=vector.name, message="the input was modified", actual=params))
    if differences:
        raise CaseFailure(differences)


def _result(case: AnyStoreCase, status: CaseStatus, started: float, **fields: Any) -> CaseResult:
    fields.setdefault("clauses", case.clauses)
    return CaseResult(
        id=case.id,
        title=case.title,
        area=case.area,
        status=status,
        duration_ms=(time.perf_counter() - started) * 1000,
        **fields,
    )


def unsupported_reason(case: AnyStoreCase, declaration: StoreDeclaration) -> str | None:
    if not declaration.profile:
        return "needs undeclared capability session-store"
    if "requireExisting" in case.needs and declaration.rejects_require_existing:
        return (
            "judges the requireExisting check, which the store declares it rejects "
            "(store:rejects-requireExisting)"
        )
    missing = sorted(set(case.needs) - declaration.needs())
    if missing:
        return "needs undeclared store capability " + ", ".join(f"store:{m}" for m in missing)
    scenario = isinstance(case, StoreCase) and case.scenario is not None
    if scenario and case.uses_require_existing and declaration.rejects_require_existing:
        return (
            "its scenario reopens sessions with requireExisting, which the store declares it "
            "rejects (store:rejects-requireExisting)"
        )
    return None


def _no_replicas(case: AnyStoreCase, pool: ConnectionPool) -> str | None:
    if case.in_processes and pool.replicas is None:
        return (
            "a replica case runs the implementation in processes of its own, and this adapter names no "
            "way to start one (use a stdio: adapter, or the -stdio twin of a reference adapter)"
        )
    return None


async def execute_store_case(
    case: AnyStoreCase,
    pool: ConnectionPool,
    hello: HelloResult,
    *,
    timeout: float = 15.0,
    scenarios: Mapping[str, Callable[[StoreWorld, dict[str, Any]], Awaitable[None]]] | None = None,
) -> CaseResult:
    """Run one store case over the pool's connections and fresh storage; never raises for a case.
    ``scenarios`` adds kit-driven scenarios to this module's own (the runner adds the replica ones)."""
    started = time.perf_counter()
    declaration = declaration_of(tuple(hello.capabilities))
    reason = unsupported_reason(case, declaration) or _no_replicas(case, pool)
    if reason is not None:
        return _result(case, CaseStatus.UNSUPPORTED, started, reason=reason)
    with tempfile.TemporaryDirectory(prefix="relavium-store-") as location:
        world = StoreWorld(pool, location, declaration, timeout, replicas=case.in_processes)
        world.refuses_option &= "rejects-requireExisting" not in case.needs
        try:
            if isinstance(case, StoreVectorCase):
                await _vector_case(world, case)
            elif case.scenario is not None:
                kind = str(case.scenario.get("kind"))
                scenario = {**SCENARIOS, **(scenarios or {})}.get(kind)
                if scenario is None:
                    raise KitUsageError(f"{case.id}: unknown scenario {kind!r}")
                await scenario(world, case.scenario)
            else:
                assert isinstance(case, StoreCase)
                await _run_steps(world, case.steps, "steps")
        except OptionRefused as refused:
            await world.close_all()
            return _result(
                case,
                CaseStatus.PASSED,
                started,
                clauses=(OPTION_CLAUSE,),
                warnings=(
                    f"the store declares store:rejects-requireExisting and refused the option at "
                    f"{refused.where}, as declared; the case ends there, and its clauses "
                    f"({', '.join(case.clauses)}) are judged by the cases that do without the option",
                ),
            )
        except CaseFailure as failure:
            await world.close_all()
            if isinstance(case, StoreVectorCase) and case.kit_defined:  # the vectors rest on the choice
                failure.differences = [
                    d.model_copy(update={"kit_defined": case.kit_defined}) for d in failure.differences
                ]
            first = failure.differences[0]
            return _result(
                case,
                CaseStatus.FAILED,
                started,
                reason=one_line(f"{first.path}: {first.message}"),
                differences=tuple(failure.differences[:20]),
            )
        except OperationError as refusal:  # outside an op step: a setup call or a pure helper refused
            await world.close_all()
            message = f"refused ({refusal.kind} {refusal.code or ''}): {refusal.message}"
            return _result(
                case,
                CaseStatus.FAILED,
                started,
                reason=one_line(message),
                differences=(Difference(path=case.id, message=message),),
            )
        except asyncio.CancelledError:  # (Ctrl-C, SIGTERM): every connection of the case is stopped
            await world.close_all(dispose=False, keep_primary=False)
            raise
        except AdapterError as exc:
            await world.close_all(dispose=False, keep_primary=False)
            tail = "\n".join(world.stderr[-20:]) or None
            return _result(case, CaseStatus.ERRORED, started, reason=one_line(exc.reason), stderr_tail=tail)
        await world.close_all()
    return _result(case, CaseStatus.PASSED, started)
