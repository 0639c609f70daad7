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
from relavium_conformance._corpus.index import corpus_index


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
    assert nothing.returncode == 2
    assert "'no-such-case' matches no case" in nothing.stderr


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _fake_exit(code: int) -> None:
    raise _Exited(code)


def test_a_real_run_takes_the_exit_without_teardown(tmp_path: Path) -> None:
    """The run's own threads (the event loop's executor, the SQLite hand-offs) are gone when ``main``
    returns, so a real run ends by ``os._exit``, after its handlers, with main's code."""
    marker = tmp_path / "exited"
    probe = (
        "import os, sys\n"
        "real = os._exit\n"
        "def noted(code):\n"
        f"    open({str(marker)!r}, 'w').write(str(code))\n"
        "    real(code)\n"
        "os._exit = noted\n"
        "sys.argv = ['relavium-conformance', 'run', '--select', 'lifecycle/abort-before-provider']\n"
        "from relavium_conformance._cli import entry\n"
        "entry()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 passed" in done.stdout
    assert marker.read_text(encoding="utf-8") == "0"
    for streams in ([">&-"], [">&-", "2>&-"]):  # a closed stdout (and stderr) is no reason to fail
        command = f"{sys.executable} -m relavium_conformance run --list {' '.join(streams)}"
        assert subprocess.run(["sh", "-c", command]).returncode == 0, streams


def test_the_exit_runs_the_handlers_then_ends_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # (whatever threads earlier tests left)
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


CORE_ONLY = """
from relavium_conformance import ReferenceImplementation

class CoreOnly(ReferenceImplementation):
    def hello_result(self):
        hello = super().hello_result()
        return hello.model_copy(update={"capabilities": ("core",)})
"""


def test_a_run_in_which_nothing_could_run_exits_4_as_fuzz_and_interop_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every selected case unsupported: nothing was tested, and a gate that tested nothing never passes."""
    (tmp_path / "core_only_port.py").write_text(CORE_ONLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    port = "python:core_only_port:CoreOnly"
    code = cli.main(["run", "--adapter", port, "--select", "resume/*", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 4, out
    resume_cases = sum(1 for entry in corpus_index() if entry.id.startswith("resume/"))
    assert f"exit 4: NOTHING TESTED (all {resume_cases} selected cases are unsupported" in out
    summary = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["summary"]
    assert summary["unsupported"] == summary["total"] == resume_cases
    assert cli.main(["interop", "--adapter", port, "--adapter", "reference"]) == 4
    assert "exit 4: NOTHING TESTED" in capsys.readouterr().out
    assert cli.main(["fuzz", "--adapter", port, "--examples", "3"]) == 4


@pytest.mark.parametrize("program", ["echo hello", "yes", "cat"])
def test_a_program_that_does_not_speak_json_rpc_leaves_no_asyncio_noise(program: str) -> None:
    """Exit 3 with the reason on the case, and nothing from asyncio's own logger on stderr."""
    command = [sys.executable, "-m", "relavium_conformance", "run", "--adapter", f"stdio:{program}"]
    done = subprocess.run(
        [*command, "--select", "commands/*", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "never retrieved" not in done.stderr
    assert "Traceback" not in done.stderr
