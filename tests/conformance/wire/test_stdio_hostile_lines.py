"""The stdio reader survives whatever line a program sends, and says what the line was.

Each run is the real command line against a real child process (``tests/programs/hostile_answer.py``):
the hostile line is the answer to the case's ``session.create``, so the case that sent the request is
the one errored, with a reason naming what was wrong, never a timeout and never a traceback.  The same
runs check that asyncio reports no future whose exception nobody retrieved (issue 37, item 8).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
HOSTILE = PROGRAMS / "hostile_answer.py"
CASE = "lifecycle/abort-idle-noop"
NOISE = ("never retrieved", "Traceback", "was destroyed but it is pending")


def _run(adapter: str, report: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "relavium_conformance", "run", "--adapter", adapter]
    return subprocess.run(
        [*command, "--json", str(report), *extra], capture_output=True, text=True, timeout=180
    )


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("deep", "nested deeper than 128 levels"),
        ("utf8", "a line that is not UTF-8"),
        ("nan", "NaN is not JSON"),
        ("repeated", "an object repeats the key 'sessionId'"),
        ("digits", "an integer of more than"),
        ("huge", "longer than the 16777216-byte line limit"),
        ("array", "not a JSON object but list"),
        ("scalar", "not a JSON object but int"),
    ],
)
def test_a_hostile_answer_errors_the_case_that_asked_with_its_reason(
    mode: str, reason: str, tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    done = _run(f"stdio:{sys.executable} {HOSTILE} {mode}", report, "--select", CASE)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    (case,) = json.loads(report.read_text(encoding="utf-8"))["cases"]
    assert case["id"] == CASE
    assert case["status"] == "errored"
    assert reason in case["reason"]
    assert "within" not in case["reason"]  # a protocol failure, not a timeout
    for noise in NOISE:
        assert noise not in done.stderr


_GARBAGE = f"stdio:{sys.executable} -c \"import sys\nfor _ in sys.stdin: print('garbage', flush=True)\""


@pytest.mark.parametrize(
    ("adapter", "jobs"),
    [
        ("stdio:echo not-a-protocol-line", "1"),  # one line that is not JSON, then exits
        ("stdio:echo not-a-protocol-line", "2"),
        ("stdio:cat", "2"),  # echoes the kit's own hello back as a request
        (_GARBAGE, "2"),  # answers every line with a line that is not JSON
    ],
)
def test_a_program_that_does_not_speak_json_rpc_leaves_no_asyncio_noise(
    adapter: str, jobs: str, tmp_path: Path
) -> None:
    done = _run(adapter, tmp_path / "r.json", "-j", jobs, "--select", "lifecycle/*")
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    for noise in NOISE:
        assert noise not in done.stderr, done.stderr[-3000:]


def test_a_late_duplicate_answer_is_blamed_on_the_case_that_asked(tmp_path: Path) -> None:
    """The program answers the first case's ``session.create`` twice, the second time only once the next
    case has begun: the first case errors for it, the next one keeps its own verdict."""
    report = tmp_path / "r.json"
    first, second = "lifecycle/abort-before-provider", "lifecycle/abort-idle-noop"
    done = _run(f"stdio:{sys.executable} {HOSTILE} late", report, "--select", first, "--select", second)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    cases = {case["id"]: case for case in json.loads(report.read_text(encoding="utf-8"))["cases"]}
    assert cases[first]["status"] == "errored"
    assert "broke the protocol after this case's last step" in cases[first]["reason"]
    assert "an answer to no pending request" in cases[first]["reason"]
    assert cases[second]["status"] == "failed"  # the program is no engine: its own, honest verdict
    assert "no pending request" not in (cases[second]["reason"] or "")
    for noise in NOISE:
        assert noise not in done.stderr


def test_a_program_echoing_its_input_is_told_apart(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = _run("stdio:cat", report, "--select", CASE)
    assert done.returncode == 3
    (case,) = json.loads(report.read_text(encoding="utf-8"))["cases"]
    assert case["handshake_failed"] is True
    assert "hello is the kit's request, never the implementation's (is it echoing?)" in case["reason"]
