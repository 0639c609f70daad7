"""The verdict of ``persistence/started-tool-settles-after-the-latch`` never rests on scheduling.

The kit controls only the order its answers are delivered in, not when an engine acts on them.  An engine
whose failed usage write reaches its latch many loop turns after the failure was delivered (a writer client
handing answers to a worker task, say) dispatches the round's next tool.  That may only fail the case on
the expectations marked KD-USE-2 (the delivery-order assumption), as a kit-choice failure; the running
tool's outcome and the terminal stay spec verdicts, which such an engine still meets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.discovery import load_transcripts
from relavium_conformance._report.results import CaseStatus, FailureKind
from relavium_conformance._run.runner import run_cases_sync
from relavium_reference._host import turn as _turn

CASE = "persistence/started-tool-settles-after-the-latch"


def _lagging_latch(lag: int) -> Any:
    async def resolve(setup: Any, progress: Any, model: str, attempt: int, usage: Any) -> Any:
        if setup.usage is None:
            return None
        try:
            return await setup.usage.resolved(_turn._resolution_record(model, attempt, usage))
        except Exception:
            for _ in range(lag):
                await asyncio.sleep(0)
            _turn._latch(setup, progress)
            return None

    return resolve


@pytest.mark.parametrize("lag", [0, 200])
def test_a_late_latch_fails_only_the_delivery_order_expectations(lag: int, monkeypatch: Any) -> None:
    monkeypatch.setattr(_turn, "_resolve", _lagging_latch(lag))
    cases = tuple(c for c in load_transcripts() if c.id == CASE)
    assert len(cases) == 1
    (result,) = run_cases_sync(resolve_adapter("reference"), cases, snapshots=False).run.cases
    if lag == 0:
        assert result.status is CaseStatus.PASSED
        return
    assert result.status is CaseStatus.FAILED  # the next tool reached the kit: tool_calls holds call-2
    assert result.failure_kind is FailureKind.KIT_CHOICE
    assert all("KD-USE-2" in d.kit_defined for d in result.differences)


def test_an_engine_that_declares_the_overlap_but_resolves_first_is_told_which_signal_never_came(
    monkeypatch: Any,
) -> None:
    dispatch = _turn._dispatch_round

    async def sequential(setup: Any, progress: Any, result: Any, round_number: int) -> Any:
        if progress.accounting is not None:
            await progress.accounting.finish()  # the round's usage resolved before its first tool
        return await dispatch(setup, progress, result, round_number)

    monkeypatch.setattr(_turn, "_dispatch_round", sequential)
    cases = tuple(c for c in load_transcripts() if c.id == CASE)
    (result,) = run_cases_sync(resolve_adapter("reference"), cases, snapshots=False, timeout=1.0).run.cases
    assert result.status is CaseStatus.ERRORED
    assert result.reason is not None
    assert "signal first-tool-running never raised" in result.reason
    assert "must not declare usage, persistence, overlapped-usage" in result.reason
