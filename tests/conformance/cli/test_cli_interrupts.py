"""SIGINT and SIGTERM, with one process or several: the implementation is stopped, every report is written
for the cases that finished, marked interrupted, and the exit status names the signal (130, 143).

The signal is sent once a case is known to have finished and the run is known to be still going: the
port below never answers the session of one chosen case and writes a mark when it gets there, so the
cases before it on its worker are over and the run cannot end before the signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.conformance.cli.interruptkit import ended, start, wait_for

STALLING_PORT = """
import asyncio, os
from relavium_conformance import ReferenceImplementation


class Stalling(ReferenceImplementation):
    async def handle(self, method, params):
        if params.get("handle") == os.environ["STALL_AT"]:
            with open(os.environ["STALL_MARK"], "a", encoding="utf-8") as mark:
                mark.write(method + "\\n")
            await asyncio.Event().wait()  # never answers: the run waits here for the signal
        return await super().handle(method, params)
"""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.mark.parametrize(
    ("jobs", "signum", "code", "name"),
    [
        ("1", signal.SIGINT, 130, "SIGINT"),
        ("1", signal.SIGTERM, 143, "SIGTERM"),
        ("2", signal.SIGINT, 130, "SIGINT"),
        ("2", signal.SIGTERM, 143, "SIGTERM"),
    ],
)
def test_a_signal_stops_the_run_and_every_report_keeps_the_finished_cases(
    tmp_path: Path, jobs: str, signum: signal.Signals, code: int, name: str
) -> None:
    (tmp_path / "stalling_port.py").write_text(STALLING_PORT, encoding="utf-8")
    mark = tmp_path / "stalled"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "STALL_AT": "case-3",  # -j 1: cases 1 and 2 finished; -j 2: the first worker's case 1 finished
        "STALL_MARK": str(mark),
    }
    reports = {"--json": tmp_path / "r.json", "--junit": tmp_path / "r.xml", "--markdown": tmp_path / "r.md"}
    command = [sys.executable, "-m", "relavium_conformance", "run", "-j", jobs, "--timeout", "300"]
    command += ["--adapter", "python:stalling_port:Stalling", "--select", "lifecycle/*"]
    for option, path in reports.items():
        command += [option, str(path)]
    process = start(command, env)
    wait_for(mark, process)
    process.send_signal(signum)
    out, err = ended(process)
    assert process.returncode == code, (out, err)
    assert "Traceback" not in err
    assert f"exit {code}: {'INTERRUPTED' if code == 130 else 'TERMINATED'} ({name};" in out
    document = json.loads(reports["--json"].read_text(encoding="utf-8"))
    assert document["interrupted"] is True
    assert document["interrupted_by"] == name
    ids = [case["id"] for case in document["cases"]]
    listed = subprocess.run(
        [sys.executable, "-m", "relavium_conformance", "run", "--list", "--select", "lifecycle/*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    lifecycle = [word for word in listed if word.startswith("lifecycle/")]
    assert lifecycle[0] in ids  # finished before the stalled case (case-1, on either worker)
    assert lifecycle[2] not in ids  # the stalled case is dropped, not judged
    assert len(ids) < len(lifecycle)
    assert all(case["status"] == "passed" for case in document["cases"])
    suites = ET.parse(reports["--junit"]).getroot()
    assert int(suites.get("tests", "-1")) == len(ids)
    assert {p.get("value") for p in suites.iter("property") if p.get("name") == "interrupted"} == {name}
    markdown = reports["--markdown"].read_text(encoding="utf-8")
    assert f"exit {code}:" in markdown
    assert name in markdown
