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

# A shell starts a foreground program with SIGINT and SIGTERM at their default actions and unblocked; a
# test process may not hold them so (a disposition or a blocked mask would pass on to its children), and
# the signal tests are about a user's Ctrl-C.  The run's own interpreter sets them so first.
_AS_FROM_A_SHELL = (
    "import runpy, signal, sys; "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGTERM, signal.SIG_DFL); "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM}); "
    "sys.argv[0] = 'relavium-conformance'; "
    "runpy.run_module('relavium_conformance', run_name='__main__', alter_sys=True)"
)


def start(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The run (``command`` is ``python -m relavium_conformance ...``) as a shell would start it, with
    faulthandler on, in a session of its own (so that every process it forks can be stopped together
    should it never end)."""
    assert command[1:3] == ["-m", "relavium_conformance"], command
    return subprocess.Popen(
        [command[0], "-X", "faulthandler", "-c", _AS_FROM_A_SHELL, *command[3:]],
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
        states = f"run: {_signal_state(process.pid)}; test: {_signal_state(os.getpid())}"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGABRT)
        time.sleep(1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"the run did not end after the signal ({states})\n{out[-3000:]}\n{err[-12000:]}")


def _signal_state(pid: int) -> str:
    """The signal masks of a process as Linux shows them (blocked, ignored, caught), for a failure's text."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "unknown"
    return " ".join(
        line.replace("\t", "") for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt"))
    )
