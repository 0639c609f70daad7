"""The replica cases' kit-driven scenarios: several processes of one store over one location, racing,
and one of them killed with SIGKILL in the middle of a write.

A case that ``needs: [replicas]`` runs every connection as a process of its own (``StoreWorld`` takes
them from the pool's replica factory: a stdio adapter is its own, an in-process reference adapter names
its ``-stdio`` twin).  The scenarios here judge what the store left in its storage, read back through a
process that has never seen the session (a fresh replica after the others stopped), never a cached view:

* ``append-race``: every replica holds a view of one session at the same leaf and appends its own
  chained batch at once.  Exactly one is answered; the others are refused with ``conflict``; the stored
  history is the root and the winner's batch, one chain.
* ``kill-append``: a replica is killed while it appends a large chained batch (at growing fractions of
  the time one such append took, answered, just before); the batch is stored whole or not at all, the
  history stays a chain, and the other replica (and the restarted one) go on writing.
* ``kill-fork``: a replica is killed while it forks a large session, as soon as the fork's row shows in
  another replica's ``list``; a fork that exists has the source's whole history and its ownership row.

Where the kill lands is left to the race (the verdict accepts every landing point that a correct store
can produce), and so is which replica wins: no verdict rests on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from relavium_conformance._errors import AdapterError
from relavium_conformance._report.results import Difference
from relavium_conformance._store.execute import CaseFailure, StoreWorld
from relavium_conformance._wire.protocol import OperationError

__all__ = ["REPLICA_SCENARIOS", "chain_problems"]

_POLL_LIMIT = 2000
"""How many list calls the kill-fork scenario makes at most while it waits for the fork to show."""


def chain_problems(entries: Sequence[Any]) -> list[str]:
    """Why ``entries`` is not one root-to-leaf chain (each entry's parent is the entry before it)."""
    problems: list[str] = []
    seen: set[str] = set()
    previous: str | None = None
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            return [f"entry {index} is not an object"]
        ident, parent = entry.get("id"), entry.get("parentId")
        if parent != previous:
            problems.append(
                f"entry {index} ({ident}) has parent {parent!r}, the entry before it is {previous!r}"
            )
        if ident in seen:
            problems.append(f"entry {index} repeats id {ident!r}")
        seen.add(str(ident))
        previous = str(ident)
    return problems


def _batch(prefix: str, parent: str | None, size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(size):
        ident = f"{prefix}-{i}"
        out.append({"id": ident, "parentId": parent, "type": "message", "n": i})
        parent = ident
    return out


def _names(count: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(count)]


async def kill(world: StoreWorld, name: str) -> None:
    """SIGKILL the process behind connection ``name`` (its whole process group); the next use of the
    name starts a new process, which opens the same location."""
    adapter = world.connections.pop(name, None)
    if adapter is None:
        return
    pid = getattr(adapter, "pid", None)
    if not isinstance(pid, int):
        raise AdapterError(f"connection {name} is not a process the kit can kill")
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            os.kill(pid, signal.SIGKILL)
    world.stderr += adapter.stderr_tail()
    with contextlib.suppress(Exception):
        await adapter.close()


async def _stored(world: StoreWorld, session_id: str, reader: str) -> list[Any]:
    """The session's history as stored, read by ``reader``: a process that holds no view of it."""
    got = await world.call(reader, "store.acquire", world.reopen(session_id))
    answer = await world.call(reader, "store.entries", {"ref": got["ref"]})
    entries: list[Any] = answer["entries"]
    return entries


async def _at_once(world: StoreWorld, calls: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """Start ``calls`` together (every connection corked, then uncorked); exceptions come back as values."""
    for adapter in world.connections.values():
        adapter.cork()
    tasks = [asyncio.ensure_future(call()) for call in calls]
    await asyncio.sleep(0)
    for adapter in world.connections.values():
        await adapter.uncork()
    return list(await asyncio.gather(*tasks, return_exceptions=True))


def _raise_broken(results: Sequence[Any]) -> None:
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, OperationError):
            raise result


async def _append_race(world: StoreWorld, scenario: dict[str, Any]) -> None:
    names = _names(int(scenario.get("replicas", 3)))
    rounds = int(scenario.get("rounds", 4))
    size = int(scenario.get("batch", 3))
    failures: list[Difference] = []
    outcomes: dict[str, dict[str, Any]] = {}
    for round_no in range(rounds):
        sid = f"race-{round_no}"
        made = await world.call(names[0], "store.acquire", {"sessionId": sid})
        root = [{"id": "root", "parentId": None, "type": "message"}]
        await world.call(names[0], "store.append", {"ref": made["ref"], "entries": root, "commit": True})
        refs = {}
        for name in names:  # every replica's view: the root, nothing else
            got = await world.call(name, "store.acquire", world.reopen(sid))
            refs[name] = got["ref"]

        def racer(name: str, sid: str = sid, refs: dict[str, Any] = refs) -> Callable[[], Awaitable[Any]]:
            entries = _batch(f"{name}{sid}", "root", size)
            return lambda: world.call(
                name, "store.append", {"ref": refs[name], "entries": entries, "commit": True}
            )

        results = await _at_once(world, [racer(n) for n in names])
        _raise_broken(results)
        outcomes[sid] = dict(zip(names, results, strict=True))
    await world.close_all(keep_primary=False)  # the judge: a fresh process that never held a view
    for sid, answers in outcomes.items():
        stored = await _stored(world, sid, "z")
        winners = [n for n, r in answers.items() if not isinstance(r, BaseException)]
        refused = {
            n: r.code if r.kind == "session_error" else r.kind
            for n, r in answers.items()
            if isinstance(r, OperationError)
        }
        wrong = {n: c for n, c in refused.items() if c != "conflict"}
        expected = ["root", *(e["id"] for n in winners for e in _batch(f"{n}{sid}", "root", size))]
        problems = chain_problems(stored)
        if len(winners) != 1:
            problems.append(
                f"{len(winners)} appends were answered ({', '.join(winners) or 'none'}); exactly one can be"
            )
        if wrong:
            problems.append(f"refused with another code than conflict: {wrong}")
        if [e.get("id") for e in stored if isinstance(e, dict)] != expected:
            problems.append("the stored history is not the root and the answered batch")
        if problems:
            failures.append(
                Difference(
                    path=sid,
                    message="; ".join(problems[:4]),
                    expected={"answered": "one replica", "refused": "conflict", "stored": "root + its batch"},
                    actual={"answered": winners, "refused": refused, "stored": [e.get("id") for e in stored]},
                )
            )
    if failures:
        raise CaseFailure(failures)


async def _fresh_view(world: StoreWorld, name: str, sid: str) -> Any:
    await world.call(name, "store.forget", {"sessionId": sid})
    return await world.call(name, "store.acquire", world.reopen(sid))


async def _kill_append(world: StoreWorld, scenario: dict[str, Any]) -> None:
    rounds = int(scenario.get("rounds", 3))
    size = int(scenario.get("batch", 400))
    sid = "killed"
    made = await world.call("a", "store.acquire", {"sessionId": sid})
    stored: list[Any] = [{"id": "root", "parentId": None, "type": "message"}]
    await world.call("a", "store.append", {"ref": made["ref"], "entries": stored, "commit": True})
    # one append of the same size, answered, tells how long one takes here: the kills then land at
    # growing fractions of it (where they land is the race's; every landing has one right outcome)
    view = await world.call("b", "store.acquire", world.reopen(sid))
    batch = _batch("whole", str(stored[-1]["id"]), size)
    started = time.perf_counter()
    await world.call("b", "store.append", {"ref": view["ref"], "entries": batch, "commit": True})
    took = time.perf_counter() - started
    stored = [*stored, *batch]
    failures: list[Difference] = []
    for round_no in range(rounds):
        view = await world.call("b", "store.acquire", world.reopen(sid))
        batch = _batch(f"k{round_no}", str(stored[-1]["id"]), size)
        sent = asyncio.ensure_future(
            world.call("b", "store.append", {"ref": view["ref"], "entries": batch, "commit": True})
        )
        await asyncio.sleep(took * (0.4 + 0.3 * round_no))  # 0.4, 0.7, 1.0, 1.3, ... of one append
        await kill(world, "b")
        answered = False
        with contextlib.suppress(Exception):  # killed: whatever the transport says, no answer
            await sent
            answered = True
        now = await _stored(world, sid, "b")  # b again: a new process over the same location
        whole = [*stored, *batch]
        if chain_problems(now) or now not in (stored, whole) or (answered and now != whole):
            failures.append(
                Difference(
                    path=f"round {round_no}",
                    message="after the kill the history is not the one before the append, or it with the "
                    "whole batch" + (" (the append was answered)" if answered else ""),
                    expected={"entries": f"{len(stored)} or {len(whole)}", "chain": True},
                    actual={"entries": len(now), "problems": chain_problems(now)[:3]},
                )
            )
            break
        stored = now
        survivor = await _fresh_view(world, "a", sid)  # the replica that was not killed writes on
        step = _batch(f"a{round_no}", str(stored[-1]["id"]), 1)
        await world.call("a", "store.append", {"ref": survivor["ref"], "entries": step, "commit": True})
        stored = [*stored, *step]
    if not failures:
        final = await _stored(world, sid, "c")
        if final != stored:
            failures.append(
                Difference(path="end", message="a third replica reads another history", actual=len(final))
            )
    if failures:
        raise CaseFailure(failures)


async def _kill_fork(world: StoreWorld, scenario: dict[str, Any]) -> None:
    size = int(scenario.get("size", 1500))
    sid = "forked"
    made = await world.call("a", "store.acquire", {"sessionId": sid})
    history = _batch("f", None, size)
    await world.call("a", "store.append", {"ref": made["ref"], "entries": history, "commit": True})
    await world.call("a", "store.register", {"sessionId": sid, "owner": "alice"})
    await world.connection("b")
    sent = asyncio.ensure_future(world.call("b", "store.fork", {"sourceId": sid}))
    for _ in range(_POLL_LIMIT):  # kill the forking replica the moment its fork shows anywhere
        listed = await world.call("a", "store.list", {})
        if sent.done() or any(s.get("forkedFrom") == sid for s in listed["sessions"]):
            break
    await kill(world, "b")
    answered: str | None = None
    with contextlib.suppress(Exception):  # killed: whatever the transport says, no answer
        answered = (await sent)["sessionId"]
    forks = [
        s["sessionId"]
        for s in (await world.call("c", "store.list", {}))["sessions"]
        if s.get("forkedFrom") == sid
    ]
    failures: list[Difference] = []
    if answered is not None and answered not in forks:
        failures.append(Difference(path="fork", message="the answered fork is not listed", actual=forks))
    for fork_id in forks:
        copy = await _stored(world, fork_id, "c")
        owner = (await world.call("c", "store.ownerOf", {"sessionId": fork_id})).get("owner")
        if copy != history or owner != "alice":
            failures.append(
                Difference(
                    path=f"fork {fork_id}",
                    message="a fork left by the killed replica is not a whole copy of its source",
                    expected={"entries": size, "owner": "alice"},
                    actual={"entries": len(copy), "owner": owner},
                )
            )
    if failures:
        raise CaseFailure(failures)


async def _kill_restart(world: StoreWorld, scenario: dict[str, Any]) -> None:
    """A durable store's one process is killed (SIGKILL: no dispose, no goodbye) after its appends were
    answered, ``rounds`` times; each new process over the location must read every answered write,
    and a session minted before the kill keeps its history while the next mint names a new one."""
    rounds = int(scenario.get("rounds", 3))
    size = int(scenario.get("batch", 50))
    sid = "kept"
    made = await world.call("a", "store.acquire", {"sessionId": sid})
    stored: list[Any] = []
    minted: dict[str, list[Any]] = {}
    failures: list[Difference] = []
    ref = made["ref"]
    for round_no in range(rounds):
        batch = _batch(f"r{round_no}", str(stored[-1]["id"]) if stored else None, size)
        await world.call("a", "store.append", {"ref": ref, "entries": batch, "commit": True})
        stored = [*stored, *batch]
        fresh = await world.call("a", "store.acquire", {})
        if fresh["sessionId"] in minted or fresh["sessionId"] == sid:
            failures.append(
                Difference(
                    path=f"round {round_no}: mint",
                    message="a minted id names a session that already exists",
                    actual=fresh["sessionId"],
                )
            )
            break
        own = _batch(f"m{round_no}", None, 1)
        await world.call("a", "store.append", {"ref": fresh["ref"], "entries": own, "commit": True})
        minted[fresh["sessionId"]] = own
        await kill(world, "a")
        now = await _stored(world, sid, "a")  # a new process over the same location
        if now != stored:
            failures.append(
                Difference(
                    path=f"round {round_no}: {sid}",
                    message="after a SIGKILL the new process does not read every answered append",
                    expected={"entries": len(stored)},
                    actual={"entries": len(now), "problems": chain_problems(now)[:3]},
                )
            )
            break
        for other, entries in minted.items():
            if await _stored(world, other, "a") != entries:
                failures.append(
                    Difference(path=f"round {round_no}: {other}", message="a minted session lost its history")
                )
        ref = (await world.call("a", "store.acquire", world.reopen(sid)))["ref"]
    if failures:
        raise CaseFailure(failures)


REPLICA_SCENARIOS: dict[str, Callable[[StoreWorld, dict[str, Any]], Awaitable[None]]] = {
    "kill-restart": _kill_restart,
    "append-race": _append_race,
    "kill-append": _kill_append,
    "kill-fork": _kill_fork,
}
