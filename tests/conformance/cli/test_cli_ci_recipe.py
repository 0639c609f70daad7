"""docs/ci.md works as copied: its workflow's install and run steps, run as written (only the lines it
marks CHANGE given a value) in a fresh folder and a fresh virtual environment, against a wheel built
from the kit's sources.

Offline, as tests/test_wheel.py: the wheel is built without build isolation; the documented ``pip
install`` runs with ``PIP_NO_DEPS`` (pip reads its options from the environment), and the fresh
environment then borrows the third-party dependencies of this one through a path entry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._data import parse_yaml

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def _workflow() -> dict[str, Any]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    document: dict[str, Any] = parse_yaml(text.split("```yaml", 1)[1].split("```", 1)[0])
    return document


@pytest.mark.xdist_group("kit-wheel")
def test_the_ci_recipe_installs_and_runs_as_written(tmp_path: Path, kit_wheel: Path) -> None:
    workflow = _workflow()
    steps = {step.get("name"): step for step in workflow["jobs"]["conformance"]["steps"]}
    install, run = steps["Install the kit"]["run"], steps["Run the conformance kit"]["run"]
    assert "pip install relavium-conformance" not in install  # not on the index: from a source one has
    assert set(workflow["env"]) == {"RELAVIUM_CONFORMANCE"}

    # the reader's repository: a fresh folder holding the kit's wheel where the recipe's example puts it
    repository = tmp_path / "port"
    example = Path(workflow["env"]["RELAVIUM_CONFORMANCE"])
    (repository / example.parent).mkdir(parents=True)
    wheel = kit_wheel
    shutil.copy(wheel, repository / example.parent / wheel.name)
    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(fresh)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        PATH=f"{fresh / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        RELAVIUM_CONFORMANCE=str(example.parent / wheel.name),  # CHANGE: the wheel built here
        PIP_NO_DEPS="1",
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        GITHUB_STEP_SUMMARY=str(tmp_path / "step-summary.md"),  # as GitHub Actions sets it
    )

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command], cwd=repository, env=env, capture_output=True, text=True, timeout=900
        )

    installed = shell(install)
    assert installed.returncode == 0, installed.stderr
    purelib = subprocess.run(
        [str(fresh / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "borrowed-deps.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    where = shell("python -c 'import relavium_conformance as k; print(k.__file__)'")
    assert where.stdout.startswith(purelib), where  # the wheel's kit, not this checkout's

    # CHANGE: the adapter (here the kit's own reference engine over stdio, a subset of the corpus to stay
    # quick); the baseline is written once, as the recipe's notes say, then the step runs as written
    command = run.replace('"stdio:node dist/adapter.js"', "reference-stdio --select 'lifecycle/*'")
    assert command != run
    baseline = shell(
        "relavium-conformance run --adapter reference-stdio --select 'lifecycle/*' "
        "--write-baseline conformance-baseline.yaml"
    )
    assert baseline.returncode == 0, baseline.stderr
    done = shell(command)
    assert done.returncode == 0, (done.stdout, done.stderr)
    for report in ("results.json", "junit.xml", "summary.md"):
        assert (repository / "conformance" / report).is_file(), report  # a folder that did not exist
    assert "# Conformance results" in (tmp_path / "step-summary.md").read_text(encoding="utf-8")
