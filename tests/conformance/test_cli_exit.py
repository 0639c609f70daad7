"""The command line as a program exits without the interpreter's teardown, and loses nothing by it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import relavium_conformance._cli as cli


def test_a_run_as_a_program_keeps_its_results_its_caches_and_its_exit_status(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "RELAVIUM_CONFORMANCE_YAML_CACHE": str(cache)}
    report = tmp_path / "r.json"
    command = [sys.executable, "-m", "relavium_conformance", "run", "--select", "lifecycle/*"]
    done = subprocess.run([*command, "--json", str(report)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "passed" in done.stdout.splitlines()[-2]  # the summary, flushed before the exit
    assert json.loads(report.read_text(encoding="utf-8"))["cases"]
    # the shape memo is written by an exit handler: the handlers ran before the process ended
    assert json.loads((cache / "shape-verdicts.json").read_text(encoding="utf-8"))["verdicts"]
    nothing = subprocess.run([*command[:-1], "no-such-case"], env=env, capture_output=True, text=True)
    assert nothing.returncode == 4
    assert "no case matches" in nothing.stderr


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _fake_exit(code: int) -> None:
    raise _Exited(code)


def test_the_exit_runs_the_handlers_then_ends_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(cli, "main", lambda: 3)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: ran.append("handlers"))
    monkeypatch.setattr(os, "_exit", _fake_exit)
    with pytest.raises(_Exited) as exited:
        cli.entry()
    assert exited.value.code == 3
    assert ran == ["handlers"]


def test_a_thread_still_running_means_the_ordinary_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(cli, "main", lambda: 1)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: ran.append("handlers"))
    monkeypatch.setattr(os, "_exit", _fake_exit)
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with pytest.raises(SystemExit) as exited:
            cli.entry()
    finally:
        release.set()
        worker.join()
    assert exited.value.code == 1
    assert ran == []
