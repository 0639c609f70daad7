"""The runner: one adapter, a selection of cases, one :class:`RunResult`.

It opens the adapter (the ``hello`` handshake), runs each case in turn with its own session handle,
routes the implementation's callbacks to that case's world, and never lets one case's failure stop
the run: a crash, hang or malformed message makes that case ``errored`` and the adapter is restarted.
A vector case (``_vectors.py``) calls the pure functions directly: no session, no callback, no snapshot.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from relavium_conformance._corpus.cases import AnyCase, VectorCase
from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._errors import AdapterError
from relavium_conformance._reference.impl import REFERENCE_NAME
from relavium_conformance._report.results import (
    CaseResult,
    CaseStatus,
    ImplementationInfo,
    RunResult,
    one_line,
)
from relavium_conformance._run.execute import CaseWorld, Observation, execute_case
from relavium_conformance._run.vectors import execute_vector_case
from relavium_conformance._wire.adapters import Adapter, StdioAdapter
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.messages import HelloResult

__all__ = ["RunOutcome", "run_cases", "run_cases_sync"]


@dataclass
class RunOutcome:
    run: RunResult
    hello: HelloResult | None
    observations: dict[str, Observation] = field(default_factory=dict)
    snapshots: dict[str, str] = field(default_factory=dict)


class _Router:
    """Routes each callback to the world of the case that owns the session handle."""

    def __init__(self) -> None:
        self.worlds: dict[str, CaseWorld] = {}

    def register(self, handle: str, world: CaseWorld | None) -> None:
        if world is None:
            self.worlds.pop(handle, None)
        else:
            self.worlds[handle] = world

    async def __call__(self, method: str, params: dict[str, Any]) -> Any:
        world = self.worlds.get(str(params.get("handle")))
        if world is None:
            raise RpcError(-32602, f"no live case owns handle {params.get('handle')!r}")
        return await world.callback(method, params)


async def run_cases(
    adapter: Adapter,
    cases: Sequence[AnyCase],
    *,
    timeout: float = 15.0,
    on_case_start: Callable[[str], None] | None = None,
    on_case_end: Callable[[CaseResult], None] | None = None,
    snapshots: bool | None = None,
    first_handle: int = 1,
    maxfail: int | None = None,
) -> RunOutcome:
    """Run ``cases``; ``snapshots`` None compares stored snapshots only for the reference engine.
    Handles are ``case-<first_handle>``, ``case-<first_handle + 1>``, ... (unique per implementation).
    ``maxfail`` stops after that many failed or errored cases (the rest are not run, as pytest's)."""
    started_at = datetime.now(UTC)
    clock = time.perf_counter()
    router = _Router()
    hello: HelloResult | None = None
    handshake_error: str | None = None
    try:
        hello = await adapter.open(router)
    except AdapterError as exc:
        handshake_error = one_line(exc.reason)
    results: list[CaseResult] = []
    outcome = RunOutcome(run=None, hello=hello)  # type: ignore[arg-type]
    try:
        for index, case in enumerate(cases):
            if on_case_start:
                on_case_start(case.id)
            if hello is None:
                result = CaseResult.of(
                    case,
                    CaseStatus.ERRORED,
                    reason=f"the implementation could not be started: {handshake_error}",
                    handshake_failed=True,
                )
            elif isinstance(case, VectorCase):
                result = await execute_vector_case(case, adapter, hello, timeout=timeout)
            else:
                compare = snapshots if snapshots is not None else hello.implementation.name == REFERENCE_NAME
                result, observed, snapshot = await execute_case(
                    case,
                    adapter,
                    hello,
                    handle=f"case-{first_handle + index}",
                    register=router.register,
                    timeout=timeout,
                    compare_snapshot=compare,
                )
                outcome.observations[case.id] = observed
                outcome.snapshots[case.id] = snapshot
            results.append(result)
            if on_case_end:
                on_case_end(result)
            bad = sum(r.status in (CaseStatus.FAILED, CaseStatus.ERRORED) for r in results)
            if maxfail is not None and bad >= maxfail:
                break
    finally:
        await adapter.close()
    implementation = ImplementationInfo(
        name=hello.implementation.name if hello else "unknown",
        adapter="stdio" if isinstance(adapter, StdioAdapter) else "in-process",  # the transport
        version=hello.implementation.version if hello else None,
        language=hello.implementation.language if hello else None,
        capabilities=tuple(hello.capabilities) if hello else (),
    )
    outcome.run = RunResult.build(
        implementation=implementation,
        cases=results,
        catalogue=load_catalogue().clauses,
        started_at=started_at,
        duration_ms=(time.perf_counter() - clock) * 1000,
    )
    return outcome


def run_cases_sync(adapter: Adapter, cases: Sequence[AnyCase], **options: Any) -> RunOutcome:
    return asyncio.run(run_cases(adapter, cases, **options))
