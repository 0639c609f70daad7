"""Playing a store program and recording its history: the ``history`` scenario of a store case.

A program is what ``fuzz --profile session-store`` generates and what a shrunk failure is written as
(``scenario: {kind: history, ...}`` in a store case)::

    scenario:
      kind: history
      connections: 2          # connections a, b, ... over the case's one storage location
      processes: false        # true: every connection a process of its own (needs: [replicas])
      rounds:
        - ops: [{op: register, via: a, params: {sessionId: s1, owner: alice}},
                {op: register, via: b, params: {sessionId: s1, owner: bob}}]
        - {restart: true}      # dispose and stop every connection, start again
        - {crash: b}           # kill b's process (in-process: drop it without dispose)
        - ops: [...]
          crash: a             # kill a's process while the round's operations are in flight
      observe: [s1, s2]       # then read these ids (and every named fork) through every reading face

The operations of one round are sent at once (every connection corked, then uncorked); the rounds run
one after another.  An ``op`` is a ``store.<op>`` method, or one of two kit-defined composites over one
connection: ``read`` (forget the cached view, acquire with ``requireExisting``, read the committed
entries) and ``write`` (the same, then append one entry chained to what was read).  A fork may carry
``name``: a later ``"$name"`` parameter is the id it answered (an operation naming a fork that answered
no id is not played).  Two writes of one session over one connection are never in one round: they would
share the one live session the store hands out (KD-SS-4), whose appends are the caller's to order; the
optimistic lock the model judges is between store instances.

Every operation is recorded with its place on one real-time counter, sent and answered
(:class:`~relavium_conformance._store.history_check.Call`), and the history is judged by
:func:`~relavium_conformance._store.history_check.check_history`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from relavium_conformance._errors import AdapterError, KitUsageError
from relavium_conformance._report.results import Difference
from relavium_conformance._store.execute import CaseFailure, StoreWorld
from relavium_conformance._store.history_check import Call, Contract, HistoryVerdict, check_history
from relavium_conformance._store.replicas import kill
from relavium_conformance._wire.envelope import PeerClosed
from relavium_conformance._wire.protocol import OperationError

__all__ = ["HISTORY_SCENARIOS", "contract_of", "judge_program", "play_program"]

COMPOSITES = ("read", "write")


def contract_of(world: StoreWorld) -> Contract:
    declared = world.declaration
    durable = declared.durability == "durable"
    return Contract(
        durable=durable,
        placements=declared.placements,
        shared=durable,
        forgets="forget" in declared.faces,
        rejects_option=declared.rejects_require_existing,
    )


class _Recorder:
    def __init__(self) -> None:
        self.clock = itertools.count(1)
        self.calls: list[Call] = []
        self.named: dict[str, str | None] = {}
        self.numbers = itertools.count(0)

    def tick(self) -> int:
        return next(self.clock)


def _resolve(params: Mapping[str, Any], named: Mapping[str, str | None]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, str) and value.startswith("$"):
            value = named.get(value[1:])
            if value is None:
                return None
        out[key] = value
    return out


def _shape(op: str, answer: Any) -> Any:
    """The part of an answer the model judges."""
    if op == "acquire":
        metadata = answer.get("metadata") or {}
        return {
            "sessionId": answer.get("sessionId"),
            "ref": answer.get("ref"),
            "incarnation": metadata.get("incarnation"),
            "forkedFrom": metadata.get("forkedFrom"),
        }
    if op == "fork":
        return answer.get("sessionId")
    if op == "list":
        return list(answer.get("sessions", ()))
    if op == "listPlaced":
        return list(answer.get("rows", ()))
    if op in ("ownerOf", "incarnationOf"):
        return dict(answer)
    return None


async def _composite(world: StoreWorld, via: str, op: str, params: Mapping[str, Any]) -> Any:
    sid = params["sessionId"]
    if "forget" in world.declaration.faces:
        await world.call(via, "store.forget", {"sessionId": sid})
    got = await world.call(via, "store.acquire", {"sessionId": sid, "requireExisting": True})
    entries = (await world.call(via, "store.entries", {"ref": got["ref"]}))["entries"]
    seen = [str(e.get("id")) for e in entries]
    if op == "write":
        entry = {"id": params["entry"], "parentId": seen[-1] if seen else None, "type": "message"}
        await world.call(via, "store.append", {"ref": got["ref"], "entries": [entry], "commit": True})
    return seen


async def _perform(world: StoreWorld, rec: _Recorder, op: Mapping[str, Any]) -> None:
    params = _resolve(op.get("params") or {}, rec.named)
    if params is None:
        return  # it names a fork that answered no id
    name, via, kind = op.get("name"), str(op.get("via", "a")), str(op["op"])
    index = next(rec.numbers)
    invoke = rec.tick()
    outcome: Any
    try:
        if kind in COMPOSITES:
            answer = await _composite(world, via, kind, params)
        else:
            answer = _shape(kind, await world.call(via, f"store.{kind}", params))
        outcome = "ok"
    except OperationError as refusal:
        outcome, answer = "fail", refusal.code if refusal.kind == "session_error" else refusal.kind
    except (AdapterError, PeerClosed) as exc:  # the connection broke (or was killed): no outcome
        outcome, answer = "info", str(exc)
        world.connections.pop(via, None)
    complete = None if outcome == "info" else rec.tick()
    if name is not None:
        rec.named[str(name)] = answer if outcome == "ok" and isinstance(answer, str) else None
    rec.calls.append(Call(index, via, kind, params, invoke, complete, outcome, answer))


async def _crash(world: StoreWorld, via: str) -> None:
    """Kill the connection's process; an in-process connection is dropped without ``dispose``."""
    adapter = world.connections.get(via)
    if adapter is None:
        return
    if adapter is world.pool.primary:  # the next use of the name starts a new one
        world.pool.primary = None
    if isinstance(getattr(adapter, "pid", None), int):
        await kill(world, via)
        return
    world.connections.pop(via)
    with contextlib.suppress(Exception):
        await adapter.close()


def _event(rec: _Recorder, kind: str, via: str) -> None:
    invoke = rec.tick()
    rec.calls.append(Call(next(rec.numbers), via, kind, {}, invoke, rec.tick(), "ok"))


async def _round(
    world: StoreWorld, rec: _Recorder, ops: Sequence[Mapping[str, Any]], crash: str | None
) -> None:
    for op in ops:  # the race is between calls, not handshakes
        await world.connection(str(op.get("via", "a")))
    adapters = list(world.connections.values())
    for adapter in adapters:
        adapter.cork()
    tasks = [asyncio.ensure_future(_perform(world, rec, op)) for op in ops]
    await asyncio.sleep(0)
    for adapter in adapters:
        await adapter.uncork()
    if crash is not None:
        await asyncio.sleep(0)
        await _crash(world, crash)
        _event(rec, "crash", crash)
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, BaseException):
            raise result


async def play_program(world: StoreWorld, program: Mapping[str, Any]) -> list[Call]:
    """Play ``program`` over ``world``'s connections and return its recorded history."""
    rec = _Recorder()
    for number, step in enumerate(program.get("rounds") or ()):
        if not isinstance(step, Mapping):
            raise KitUsageError(f"round {number} of the program is not a mapping")
        if step.get("restart"):
            invoke = rec.tick()
            await world.restart()
            rec.calls.append(Call(next(rec.numbers), "a", "restart", {}, invoke, rec.tick(), "ok"))
            continue
        crash = step.get("crash")
        ops = step.get("ops") or ()
        if not ops:
            if crash is not None:
                await _crash(world, str(crash))
                _event(rec, "crash", str(crash))
            continue
        await _round(world, rec, ops, None if crash is None else str(crash))
    if program.get("observe"):
        await _observe(world, rec, program.get("observe"))
    return rec.calls


async def _observe(world: StoreWorld, rec: _Recorder, ids: Any) -> None:
    """The final reads: every id of ``ids`` (and every named fork) through every face that reads."""
    faces = world.declaration.faces
    names = [*(ids if isinstance(ids, list) else []), *(f"${n}" for n in rec.named)]
    reading = (("ownerOf", "ownership"), ("incarnationOf", "incarnationOf"))
    reads = [op for op, face in reading if face in faces]
    # (``read`` reopens with requireExisting: a store that rejects the option is asked the option itself)
    rejects = world.declaration.rejects_require_existing
    reads.append("read" if "forget" in faces and not rejects else "acquire")
    for sid in names:
        for op in reads:
            extra = {"requireExisting": True} if op == "acquire" else {}
            await _perform(world, rec, {"op": op, "via": "a", "params": {"sessionId": sid, **extra}})
    if "list" in faces:
        await _perform(world, rec, {"op": "list", "via": "a", "params": {}})
    if "listPlaced" in faces and world.declaration.placements is not None:
        await _perform(world, rec, {"op": "listPlaced", "via": "a", "params": {"kind": "subagent"}})


def judge_program(calls: Sequence[Call], rules: Contract) -> tuple[HistoryVerdict, list[Difference]]:
    verdict = check_history(calls, rules)
    if verdict.ok:
        return verdict, []
    difference = Difference(
        path="history",
        message=verdict.message(len(calls)),
        expected="one order of the operations, consistent with real time, that the contract explains",
        actual=[call.describe() for call in calls][:40],
    )
    return verdict, [difference]


async def _history(world: StoreWorld, scenario: dict[str, Any]) -> None:
    calls = await play_program(world, scenario)
    _verdict, differences = judge_program(calls, contract_of(world))
    if differences:
        raise CaseFailure(differences)


HISTORY_SCENARIOS = {"history": _history}
