"""KD-KIT-1: operations issued together do not depend on how a transport splits writes.

The race cases run 50 times through a shim that writes every byte on its own (and pauses after each
line end), and 50 times straight over stdio: not one verdict may flip.  The kit sends the operations as
one JSON-RPC batch line, which arrives whole however the bytes are split.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from relavium_conformance._connect import reference_stdio_command
from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases
from relavium_conformance._wire.adapters import StdioAdapter

SHIM = Path(__file__).resolve().parents[2] / "programs" / "byte_shim.py"
RUNS = 50


def _race_cases() -> list[Case]:
    races = [c for c in load_cases() if isinstance(c, Case) and c.area == "races"]
    assert len(races) >= 2, "the race cases are gone"
    return races


def _repeated(cases: list[Case], runs: int) -> list[Case]:
    return [case.model_copy(update={"id": f"{case.id}-run-{run}"}) for run in range(runs) for case in cases]


def _flips(command: list[str]) -> list[str]:
    adapter = StdioAdapter("races", command, request_timeout=15.0)
    outcome = asyncio.run(run_cases(adapter, _repeated(_race_cases(), RUNS), timeout=15.0, snapshots=False))
    assert len(outcome.run.cases) == RUNS * len(_race_cases())
    return [f"{c.id}: {c.reason}" for c in outcome.run.cases if c.status is not CaseStatus.PASSED]


@pytest.mark.slow
def test_races_never_flip_through_a_shim_that_writes_single_bytes() -> None:
    assert _flips([sys.executable, str(SHIM), *reference_stdio_command()]) == []


@pytest.mark.slow
def test_races_never_flip_straight_over_stdio() -> None:
    assert _flips(reference_stdio_command()) == []


def test_operations_issued_together_go_out_as_one_batch_line() -> None:
    """The peer writes corked requests as one JSON array line (what the shim cannot split apart)."""
    from relavium_conformance._wire.jsonrpc import JsonRpcPeer

    written: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            written.append(data)

        async def drain(self) -> None:
            return None

        def is_closing(self) -> bool:
            return False

    async def scenario() -> None:
        reader = asyncio.StreamReader()
        peer = JsonRpcPeer(reader, Writer(), handler=None)  # type: ignore[arg-type]
        peer.cork()
        first = asyncio.ensure_future(peer.request("session.abort", {"handle": "h"}, timeout=1))
        second = asyncio.ensure_future(peer.request("session.cancel", {"handle": "h"}, timeout=1))
        for _ in range(3):
            await asyncio.sleep(0)
        await peer.uncork()
        reader.feed_data(b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]\n')
        assert await first == {}
        assert await second == {}
        reader.feed_eof()

    asyncio.run(scenario())
    assert len(written) == 1
    assert written[0].startswith(b"[")
    assert written[0].endswith(b"]\n")
    assert written[0].count(b"\n") == 1
