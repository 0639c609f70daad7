"""Running one golden transcript against an adapter: the kit plays the world, then judges.

:func:`execute_case` sets the case up, lets its :class:`CaseWorld` (``case_world.py``) play it, drives
the steps, collects the observation and turns the judge's verdict (``_judge/``) into a
:class:`CaseResult`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Coroutine
from typing import Any

from pydantic import BaseModel

from relavium_conformance._corpus.cases import (
    Case,
    as_ops,
)
from relavium_conformance._errors import AdapterError
from relavium_conformance._judge.judge import judge
from relavium_conformance._judge.observation import Observation
from relavium_conformance._report.results import CaseResult, CaseStatus, Difference, one_line
from relavium_conformance._run.case_setup import create_params
from relavium_conformance._run.case_world import HISTORY_SESSION_ID, CaseWorld
from relavium_conformance._run.dialect_server import DialectServer, start_dialect_server, stop_dialect_server
from relavium_conformance._run.limits import CaseLimitExceeded
from relavium_conformance._wire.adapters import Adapter
from relavium_conformance._wire.protocol import OperationError
from relavium_conformance._wire.protocol_messages import (
    HelloResult,
)

__all__ = ["execute_case"]


async def execute_case(
    case: Case,
    adapter: Adapter,
    hello: HelloResult,
    *,
    handle: str,
    register: Any,
    timeout: float = 15.0,
    compare_snapshot: bool = False,
) -> tuple[CaseResult, Observation, dict[str, Any] | None]:
    """Run ``case``; ``register(handle, world | None)`` routes the implementation's callbacks.
    Returns the result, the observation and the observed snapshot (as data, None when the case could
    not run: see ``SnapshotTexts``)."""
    started = time.perf_counter()
    missing = sorted(set(case.capabilities) - set(hello.capabilities))
    if missing:
        result = CaseResult.of(
            case, CaseStatus.UNSUPPORTED, reason=f"needs undeclared capability {', '.join(missing)}"
        )
        return result, Observation(), None
    if (refusal := adapter.together_refusal()) is not None and _races_abort_and_cancel(case):
        return CaseResult.of(case, CaseStatus.UNSUPPORTED, reason=refusal), Observation(), None
    workdir = tempfile.mkdtemp(prefix="relavium-case-")
    world = CaseWorld(case, adapter, handle, workdir, timeout)
    world.register = register
    register(handle, world)
    status = CaseStatus.PASSED
    reason: str | None = None
    stderr_tail: str | None = None
    warnings: list[str] = []
    wire: DialectServer | None = None
    try:
        world.create_params = create_params(case, handle, workdir)
        wire = await start_dialect_server(case, world)  # capability wire: the scripts over loopback HTTP
        if case.setup.history is not None:
            world.create_params["sessionId"] = str(
                (case.setup.history.record or {}).get("id", HISTORY_SESSION_ID)
            )
        await _bounded(world, _drive(case, adapter, world, handle, timeout))
    except AdapterError as exc:
        status = CaseStatus.ERRORED
        reason, stderr_tail = await _adapter_broke(exc, case, adapter, world)
    except OperationError as exc:
        status, reason = CaseStatus.ERRORED, one_line(f"the case setup was refused: {exc}")
    finally:
        try:
            await world.settle()
            await stop_dialect_server(wire)
            for each in world.handles():
                register(each, None)
            world.main.observed.others = world.others()
            observed_snapshot, unjudgeable = _snapshot(world.main.observed, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    observed = world.main.observed
    differences: list[Difference] = []
    if status is CaseStatus.PASSED:
        status, reason, differences, warnings = _verdict(
            case, observed, observed_snapshot, unjudgeable, compare_snapshot
        )
    result = CaseResult.of(
        case,
        status,
        duration_ms=(time.perf_counter() - started) * 1000,
        reason=reason,
        differences=tuple(differences) if status is CaseStatus.FAILED else (),
        stderr_tail=stderr_tail if status is CaseStatus.ERRORED else None,
        warnings=tuple(warnings),
    )
    return result, observed, observed_snapshot


_TOO_DEEP = "a value the implementation returned is nested too deep for the kit to judge"


async def _adapter_broke(
    exc: AdapterError, case: Case, adapter: Adapter, world: CaseWorld
) -> tuple[str, str | None]:
    """The implementation broke during the case: note where, restart it, and give the errored case's
    reason (naming a scripted signal never raised, and the kit's leftover notes) and stderr tail."""
    breakage = adapter.breakage()
    world.main.observed.broken_at = breakage.at if breakage is not None else None
    tail = adapter.stderr_tail()
    stderr_tail = "\n".join(tail[-20:]) if tail else None
    with contextlib.suppress(Exception):
        await adapter.recover()
    reason = exc.reason
    if waits := world.signals.never_raised():  # the scripted situation was never reached
        extra = ", ".join(c for c in case.capabilities if c != "core")
        reason = (
            f"signal {', '.join(waits)} never raised: the scripted situation was never reached"
            f" (an implementation that cannot reach it must not declare {extra}); {reason}"
        )
    leftovers = adapter.take_leftovers()  # the reason keeps room for them
    return "; ".join([one_line(reason, 300 - 120 * bool(leftovers)), *leftovers]), stderr_tail


def _verdict(
    case: Case,
    observed: Observation,
    snapshot: dict[str, Any],
    unjudgeable: str | None,
    compare_snapshot: bool,
) -> tuple[CaseStatus, str | None, list[Difference], list[str]]:
    """The judge's verdict on a case that ran to its end: (status, reason, differences, warnings)."""
    if unjudgeable is not None:
        return CaseStatus.ERRORED, unjudgeable, [], []
    try:
        differences, warnings = judge(case, observed, snapshot, compare_snapshot)
    except RecursionError:
        return CaseStatus.ERRORED, _TOO_DEEP, [], []
    if differences:
        reason = one_line(f"{differences[0].path}: {differences[0].message}")
        return CaseStatus.FAILED, reason, differences, warnings
    return CaseStatus.PASSED, None, differences, warnings


def _races_abort_and_cancel(value: Any) -> bool:
    """Whether a ``do`` of the case issues an abort and a cancel together (KD-KIT-1): the one verdict
    that rests on their arriving in one message (other lists keep their meaning on separate lines)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseModel):
            together = getattr(item, "do", None)
            if isinstance(together, tuple) and {"abort", "cancel"} <= {op.op for op in as_ops(together)}:
                return True
            stack.extend(getattr(item, name) for name in type(item).model_fields)
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


async def _drive(case: Case, adapter: Adapter, world: CaseWorld, handle: str, timeout: float) -> None:
    """The case's setup and steps, in order."""
    created = await adapter.call("session.create", world.create_params, timeout=timeout)
    world.observed.session_id = str(created.get("sessionId")) if isinstance(created, dict) else None
    world.seed_history(world.observed.session_id or HISTORY_SESSION_ID)
    if case.setup.policy is not None:
        await adapter.call(
            "session.setTurnPolicy", {"handle": handle, "policy": case.setup.policy}, timeout=timeout
        )
    for step in case.steps:
        await world.perform(step)


async def _bounded(world: CaseWorld, steps: Coroutine[Any, Any, None]) -> None:
    """Run ``steps`` unless the implementation makes the case observe more than its limits allow: then
    stop them and raise :class:`CaseLimitExceeded` (the case errors, the implementation is restarted)."""
    task = asyncio.ensure_future(steps)
    exceeded = asyncio.ensure_future(world.meter.exceeded.wait())
    try:
        await asyncio.wait({task, exceeded}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        exceeded.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if world.meter.reason is not None:
        raise CaseLimitExceeded(world.meter.reason)
    task.result()


def _snapshot(observed: Observation, workdir: str) -> tuple[dict[str, Any], str | None]:
    try:
        return observed.snapshot(workdir), None
    except RecursionError:
        return {}, _TOO_DEEP
