"""The kit works from a wheel installed in a fresh virtual environment (fixtures and schemas travel inside).

Offline: the wheel is built without build isolation, installed with ``--no-deps`` into a new venv, and
the new venv borrows only the *third-party* dependencies of the test environment through a path entry
(the checkout and its editable install are not visible there).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from tests.wheelkit import build_wheel, copy_sources

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("kit-wheel")]


@pytest.fixture
def wheel(kit_wheel: Path) -> Path:
    return kit_wheel


def test_wheel_carries_the_json_corpus_the_licence_and_the_example_adapter(wheel: Path) -> None:
    from relavium_conformance._data import build_corpus_json, fixtures_dir

    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    assert "relavium_conformance/examples/echo-adapter.mjs" in names
    [licence] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert "Apache License" in archive.read(licence).decode("utf-8")
    corpus = json.loads(archive.read("relavium_conformance/fixtures/corpus.json"))
    assert corpus == build_corpus_json(fixtures_dir())  # every YAML file, as the kit's loader reads it
    [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
    metadata = archive.read(metadata_name).decode("utf-8")
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: Framework :: Pytest" in metadata
    assert "Project-URL: Source, https://" in metadata
    # declared dependencies are the used ones: httpx serves the engine's HTTP providers (dialect_client.py)
    assert "Requires-Dist: httpx" in metadata
    links = re.findall(r"\]\(([^)]+)\)", metadata)
    assert links
    assert [link for link in links if not link.startswith("https://")] == []


def test_a_stale_build_folder_cannot_ship_a_deleted_fixture(tmp_path: Path) -> None:
    source = copy_sources(tmp_path / "checkout")
    first = build_wheel(source, tmp_path / "one")
    gone = "relavium_conformance/fixtures/provider-scripts/three-turns.yaml"
    assert gone in zipfile.ZipFile(first).namelist()
    assert (source / "build").is_dir()  # the first build left its build/ folder, as setuptools does
    (source / "fixtures" / "provider-scripts" / "three-turns.yaml").unlink()
    second = build_wheel(source, tmp_path / "two")
    archive = zipfile.ZipFile(second)
    assert gone not in archive.namelist()
    corpus = json.loads(archive.read("relavium_conformance/fixtures/corpus.json"))
    assert "provider-scripts/three-turns.yaml" not in corpus["files"]


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
    paths = json.loads(
        subprocess.run(
            [str(fresh_python), "-m", "relavium_conformance", "data-path", "--json"],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
        ).stdout
    )
    assert all(str(value).startswith(purelib) for value in paths.values()), paths
    assert Path(paths["examples"], "echo-adapter.mjs").is_file()
    assert Path(paths["corpus-json"]).is_file()
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
