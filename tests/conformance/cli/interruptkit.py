"""What the signal tests share: start a run in a session of its own, wait for its stall mark, and read
what it printed once it has ended, never leaving it running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest


def start(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The run, with faulthandler on, in a session of its own (so that every process it forks can be
    stopped together should it never end)."""
    return subprocess.Popen(
        [command[0], "-X", "faulthandler", *command[1:]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120  # a bound on a broken run, not a verdict
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never reached the stalled case"
        time.sleep(0.05)


def ended(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The run's output once it has ended; a run still going after 120 s (a broken run, not a verdict on
    speed) has every process of its session dump its stacks (faulthandler, SIGABRT) and killed, and the
    test fails with what they printed: nothing is left running."""
    try:
        return process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGABRT)
        time.sleep(1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"the run did not end after the signal\n{out[-3000:]}\n{err[-12000:]}")
