"""The runner against misbehaving implementations: it never hangs, never crashes, keeps memory bounded.

Each test drives a small fake under ``fakes/`` (or an in-process implementation defined here) through the
real runner.  Timeouts are small; a guard only catches a hanging regression: no test asserts on time.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._corpus.cases import AnyCase
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus, RunResult
from relavium_conformance._report.writers import write_json, write_junit, write_markdown
from relavium_conformance._run.runner import RunInterrupted, RunOutcome, run_cases
from relavium_conformance._wire.adapters import InProcessAdapter, StdioAdapter
from relavium_conformance._wire.protocol import Callback
from relavium_conformance._wire.protocol_messages import HelloResult
from relavium_conformance._wire.reaper import alive

FAKES = Path(__file__).resolve().parents[1] / "fakes"
MISBEHAVING = FAKES / "misbehaving_adapter.py"
RELAY = FAKES / "relay_adapter.py"
GUARD = 120.0  # seconds: reached only by a hanging regression
FIRST, SECOND = "commands/idle-after-command", "commands/missing-program-failed"
POSIX = sys.platform != "win32"


def pick(*ids: str) -> list[AnyCase]:
    by_id = {case.id: case for case in load_cases()}
    return [by_id[case_id] for case_id in ids]


def run(adapter: Any, cases: list[AnyCase], timeout: float = 5.0) -> RunOutcome:
    async def guarded() -> RunOutcome:
        return await asyncio.wait_for(run_cases(adapter, cases, timeout=timeout), GUARD)

    return asyncio.run(guarded())


def fake(mode: str, monkeypatch: pytest.MonkeyPatch, **env: str) -> StdioAdapter:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return StdioAdapter(f"fake-{mode}", [sys.executable, str(MISBEHAVING), mode], request_timeout=5.0)


def strict_load(path: Path) -> Any:
    """Parse like the strictest RFC 8259 reader: UTF-8 only, no NaN/Infinity, no lone surrogates."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    document = json.loads(path.read_bytes().decode("utf-8", "strict"), parse_constant=refuse)
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            item.encode("utf-8", "strict")  # a lone surrogate (from a \ud800 escape) fails here
        elif isinstance(item, float):
            assert math.isfinite(item)
    return document


def write_all(run_result: RunResult, folder: Path) -> Any:
    write_junit(run_result, folder / "junit.xml")
    write_markdown(run_result, folder / "summary.md")
    write_json(run_result, folder / "results.json")
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # the atomic writes left no temporary file behind
    return strict_load(folder / "results.json")


# --- hangs and leaks -----------------------------------------------------------------------------


@pytest.mark.skipif(not POSIX, reason="process groups and setsid are POSIX")
def test_a_program_that_stops_reading_errors_its_case_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "pids"
    adapter = fake("stop-reading", monkeypatch, FAKE_PIDFILE=str(pidfile))
    started = time.perf_counter()
    outcome = run(adapter, pick(FIRST, SECOND), timeout=2.0)
    elapsed = time.perf_counter() - started
    statuses = [case.status for case in outcome.run.cases]
    assert statuses == [CaseStatus.ERRORED, CaseStatus.ERRORED]
    reasons = [case.reason or "" for case in outcome.run.cases]
    assert all("2 s" in reason for reason in reasons), reasons
    assert any("outside its process group" in reason for reason in reasons), reasons
    escaped = [int(line) for line in pidfile.read_text().split()]
    assert len(escaped) == 2  # one setsid child per start of the fake
    assert [pid for pid in escaped if alive(pid)] == []
    print(f"two stop-reading cases at --timeout 2 took {elapsed:.1f} s")


# --- values no strict reader accepts ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param('"\\ud800"', CaseStatus.FAILED, id="lone-surrogate"),
        pytest.param("[" * 900 + "]" * 900, CaseStatus.ERRORED, id="900-deep"),
        pytest.param("1e400", CaseStatus.ERRORED, id="1e400"),
    ],
)
def test_odd_values_over_stdio_give_a_result_and_strict_json(
    value: str, expected: CaseStatus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = run(fake("odd-value", monkeypatch, FAKE_VALUE=value), pick(FIRST))
    (case,) = outcome.run.cases
    assert case.status is expected, case.reason
    document = write_all(outcome.run, tmp_path)
    assert document["cases"][0]["status"] == expected.value


class OddImplementation:
    """In process: serves the reference engine, but answers every ``session.send`` with ``value``."""

    def __init__(self, callback: Callback, value: Any) -> None:
        self._inner = ReferenceImplementation(callback)
        self._value = value

    def hello_result(self) -> HelloResult:
        return self._inner.hello_result()

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.send":
            return {"outcome": self._value, "echo": [self._value]}
        return await self._inner.handle(method, params)


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("\ud800", id="lone-surrogate"),
        pytest.param(nested(900), id="900-deep"),
        pytest.param(float("inf"), id="infinity"),
        pytest.param(float("nan"), id="nan"),
    ],
)
def test_odd_values_in_process_give_a_result_and_strict_json(value: Any, tmp_path: Path) -> None:
    cases = [c for c in load_cases() if c.id.startswith("events/")][:2]
    adapter = InProcessAdapter("odd", lambda callback: OddImplementation(callback, value))
    outcome = run(adapter, cases)
    assert [c.status for c in outcome.run.cases] != [CaseStatus.PASSED] * len(cases)
    assert all(c.status in (CaseStatus.FAILED, CaseStatus.ERRORED) for c in outcome.run.cases)
    write_all(outcome.run, tmp_path)


def test_a_value_too_deep_to_judge_leaves_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    adapter = InProcessAdapter("odd", lambda callback: OddImplementation(callback, nested(900)))
    outcome = run(adapter, [c for c in load_cases() if c.id.startswith("events/")][:1])
    assert outcome.run.cases[0].status in (CaseStatus.FAILED, CaseStatus.ERRORED)
    assert list(tmp_path.glob("relavium-case-*")) == []


# --- crashes that must not lose the run ----------------------------------------------------------------


class RaisingOnce:
    """The reference engine, except that the first ``session.create`` raises an unexpected exception."""

    raised = False

    def __init__(self, callback: Callback) -> None:
        self._inner = ReferenceImplementation(callback)

    def hello_result(self) -> HelloResult:
        return self._inner.hello_result()

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.create" and not RaisingOnce.raised:
            RaisingOnce.raised = True
            raise KeyError("agent")
        return await self._inner.handle(method, params)


def test_an_in_process_exception_errors_that_case_and_the_run_goes_on() -> None:
    RaisingOnce.raised = False
    outcome = run(InProcessAdapter("raising", RaisingOnce), pick(FIRST, SECOND))
    first, second = outcome.run.cases
    assert first.status is CaseStatus.ERRORED
    assert "KeyError" in (first.reason or "")
    assert "session.create" in (first.reason or "")
    assert second.status is CaseStatus.PASSED, second.reason


def test_an_interrupted_run_keeps_the_finished_cases(tmp_path: Path) -> None:
    cases = pick(FIRST, SECOND)

    async def interrupt_after_first() -> RunOutcome:
        task = asyncio.current_task()
        assert task is not None

        def cancel_on_first(result: Any) -> None:
            if result.id == FIRST:
                task.cancel()

        try:
            return await run_cases(
                InProcessAdapter("ref", ReferenceImplementation), cases, on_case_end=cancel_on_first
            )
        except RunInterrupted as stop:
            return stop.outcome

    outcome = asyncio.run(interrupt_after_first())
    assert outcome.run.interrupted
    assert [c.id for c in outcome.run.cases] == [FIRST]
    document = write_all(outcome.run, tmp_path)
    assert document["interrupted"] is True


# --- blame and memory -------------------------------------------------------------------------------


def test_a_second_answer_to_the_last_request_of_a_case_is_that_cases_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = tmp_path / "ids"
    monkeypatch.setenv("FAKE_IDS", str(ids))
    recorded = run(StdioAdapter("relay", [sys.executable, str(RELAY), "record"]), pick(FIRST))
    assert recorded.run.cases[0].status is CaseStatus.PASSED
    last = max(int(line) for line in ids.read_text().split())
    outcome = run(
        StdioAdapter("relay", [sys.executable, str(RELAY), "duplicate", str(last)]), pick(FIRST, SECOND)
    )
    first, second = outcome.run.cases
    assert first.status is CaseStatus.ERRORED
    assert f"id {last}" in (first.reason or "")
    assert "after this case's last step" in (first.reason or "")
    assert second.status is CaseStatus.PASSED, second.reason


MEMORY_PROBE = """
import asyncio, json, sys
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._run.runner import run_cases
from relavium_conformance._wire.adapters import StdioAdapter
case = next(c for c in load_cases() if c.id == sys.argv[2])
adapter = StdioAdapter("flood", [sys.executable, sys.argv[1], "flood-events"], request_timeout=60)
outcome = asyncio.run(run_cases(adapter, [case], timeout=60))
result = outcome.run.cases[0]
# VmHWM is this program's own peak (it restarts at exec); ru_maxrss would include the pytest process
# this one was forked from, which is large late in a full run
peak_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"status": result.status.value, "reason": result.reason, "peak_kib": peak_kib}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the peak is read from /proc/self/status (Linux)")
def test_a_hundred_thousand_events_error_the_case_and_memory_stays_flat() -> None:
    """The flood errors its case with the limit named, and the run's own peak RSS stays under 150 MB."""
    probe = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(MISBEHAVING), FIRST],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
        env={**os.environ, "FAKE_EVENTS": "100000"},
    )
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert report["status"] == "errored"
    assert "more than 10000 events" in report["reason"]
    assert report["peak_kib"] < 150 * 1024, report
    print(f"peak RSS of the run: {report['peak_kib'] / 1024:.0f} MiB")


# --- what an implementation supplies ------------------------------------------------------------------


def test_a_secret_on_stderr_is_redacted_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run(fake("secret", monkeypatch), pick(FIRST))
    (case,) = outcome.run.cases
    assert case.status is CaseStatus.ERRORED
    write_all(outcome.run, tmp_path)
    for name in ("results.json", "junit.xml", "summary.md"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "AbCdEf0123456789" not in text, name
        assert "c2VjcmV0" not in text, name
    assert "[redacted]" in (case.stderr_tail or "")


def test_control_characters_in_a_name_are_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run(fake("control-name", monkeypatch), pick(FIRST))
    assert outcome.run.implementation.name == "fake\\x1b[31m-red\\x07"
    write_all(outcome.run, tmp_path)
    for name in ("results.json", "junit.xml", "summary.md"):
        raw = (tmp_path / name).read_text(encoding="utf-8")
        assert "\x1b" not in raw, name
        assert "\x07" not in raw, name


def test_no_asyncio_noise_at_exit(tmp_path: Path) -> None:
    command = f"{sys.executable} {MISBEHAVING} stop-reading"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "relavium_conformance",
            "run",
            "--select",
            FIRST,
            "--timeout",
            "1",
            "--adapter",
            f"stdio:{command}",
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
        env={**os.environ, "FAKE_PIDFILE": str(tmp_path / "pids")},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    for noise in ("Traceback", "never retrieved", "Event loop is closed", "Exception ignored"):
        assert noise not in result.stderr, result.stderr
    strict_load(tmp_path / "r.json")


def test_a_closed_stdout_under_a_short_timeout_is_reported_as_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run(fake("close-stdout", monkeypatch), pick(FIRST), timeout=1.0)
    (case,) = outcome.run.cases
    assert case.status is CaseStatus.ERRORED
    assert "output ended" in (case.reason or ""), case.reason
    assert "no answer" not in (case.reason or ""), case.reason
