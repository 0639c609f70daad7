"""The kit works from a wheel installed in a fresh virtual environment (fixtures and schemas travel inside).

Offline: the wheel is built without build isolation, installed with ``--no-deps`` into a new venv, and
the new venv borrows only the *third-party* dependencies of the test environment through a path entry
(the checkout and its editable install are not visible there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Build from a clean copy of the sources: setuptools leaves build/ and *.egg-info beside the sources,
    # and a stale build/ could smuggle removed files into the wheel.
    source = tmp_path_factory.mktemp("source") / "relavium-conformance"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
        symlinks=True,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("relavium_conformance-*.whl")
    return built


def test_wheel_carries_packages_data_and_markers(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "relavium_reference/py.typed" in names
    assert "relavium_conformance/py.typed" in names
    assert "relavium_conformance/schemas/transcript.schema.json" in names
    assert "relavium_conformance/schemas/protocol/jsonrpc.schema.json" in names
    assert any(n.startswith("relavium_conformance/fixtures/transcripts/") for n in names)
    assert any(n.startswith("relavium_conformance/fixtures/clauses/") for n in names)
    assert "relavium_conformance/fixtures/provider-scripts/three-turns.yaml" in names
    assert "relavium_conformance/schemas/junit-10.xsd" in names
    assert "relavium_conformance/_report/templates/report.html.j2" in names  # the report command needs it
    assert "relavium_conformance/_report/templates/badge.svg.j2" in names


def test_kit_runs_from_the_wheel_in_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(target)
    fresh_python = target / "bin" / "python"
    purelib = subprocess.run(
        [str(fresh_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", purelib, str(wheel)],
        check=True,
        capture_output=True,
    )
    # Borrow third-party dependencies (pydantic, jsonschema, ruamel.yaml, ...) from this environment,
    # appended after the fresh site-packages so the wheel's own packages win.
    (Path(purelib) / "borrowed-deps.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    where = subprocess.run(
        [
            str(fresh_python),
            "-c",
            "import relavium_conformance as k; print(k.__file__); print(k.fixtures_dir())",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    ).stdout.split()
    assert where[0].startswith(purelib), where
    assert where[1].startswith(purelib), where
    report = tmp_path / "r.json"
    result = subprocess.run(
        [str(fresh_python), "-m", "relavium_conformance", "run", "--json", str(report)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["summary"]["failed"] == document["summary"]["errored"] == 0
    assert document["summary"]["passed"] > 50
