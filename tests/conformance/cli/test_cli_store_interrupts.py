"""SIGINT and SIGTERM in ``run --profile session-store``: the implementation is stopped, every report is
written for the store cases that finished, marked interrupted, and the exit status names the signal.

The signal is sent once the run is known to be inside the third case: the store below answers nothing
from the third ``store.open`` on and writes a mark when it gets there, so the first two cases are over
and the run cannot end before the signal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.conformance.cli.interruptkit import ended, start, wait_for

PROGRAM = Path(__file__).resolve().parents[2] / "programs" / "misbehaving_store.py"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.mark.parametrize(
    ("signum", "code", "name"),
    [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")],
)
def test_a_signal_stops_the_store_run_and_every_report_keeps_the_finished_cases(
    tmp_path: Path, signum: signal.Signals, code: int, name: str
) -> None:
    mark = tmp_path / "stalled"
    reports = {"--json": tmp_path / "r.json", "--junit": tmp_path / "r.xml", "--markdown": tmp_path / "r.md"}
    command = [sys.executable, "-m", "relavium_conformance", "run", "--profile", "session-store"]
    command += ["--timeout", "300", "--select", "store-vectors/*"]
    command += ["--adapter", f"stdio:{sys.executable} {PROGRAM} stall 3 {mark}"]
    for option, path in reports.items():
        command += [option, str(path)]
    process = start(command)
    wait_for(mark, process)
    process.send_signal(signum)
    out, err = ended(process)
    assert process.returncode == code, (out, err)
    assert "Traceback" not in err
    assert f"exit {code}: {'INTERRUPTED' if code == 130 else 'TERMINATED'} ({name};" in out
    # the kit stopped the implementation (bye), not merely left it to see its input end
    assert mark.read_text(encoding="utf-8").split() == ["stalled", "bye"]
    document = json.loads(reports["--json"].read_text(encoding="utf-8"))
    assert document["interrupted"] is True
    assert document["interrupted_by"] == name
    listing = ["run", "--profile", "session-store", "--list", "--select", "store-vectors/*"]
    listed = subprocess.run(
        [sys.executable, "-m", "relavium_conformance", *listing],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    vectors = [word for word in listed if word.startswith("store-vectors/")]
    assert len(vectors) == 3
    assert [case["id"] for case in document["cases"]] == vectors[:2]  # the stalled third is dropped
    assert all(case["status"] == "passed" for case in document["cases"])
    suites = ET.parse(reports["--junit"]).getroot()
    assert int(suites.get("tests", "-1")) == 2
    assert {p.get("value") for p in suites.iter("property") if p.get("name") == "interrupted"} == {name}
    markdown = reports["--markdown"].read_text(encoding="utf-8")
    assert f"exit {code}:" in markdown
    assert name in markdown
