"""A Python port meets the kit the way Python projects do: ``python:module:factory`` in the command line
and in the pytest plugin, one pytest item per case, baselines as strict xfails, readable failures.

Each test lays out a small project in a temporary folder (its own ``pytest.ini``, a port package) and runs
the real command line or a real pytest in a subprocess: nothing of this checkout's configuration leaks in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from relavium_conformance._connect import adapter_alias, resolve_adapter, split_alias
from relavium_conformance._errors import KitUsageError

# A port built on the public surface only: it serves the message set through the reference engine, under
# its own name, logs every operation it is asked for (to prove which cases ran), and its "broken"
# flavour ignores abort (the abort cases must then fail).
PORT = """
import json
import os

from relavium_conformance import PROTOCOL_VERSION, ReferenceImplementation


class TinyPort:
    def __init__(self, callback, broken=False):
        self._inner = ReferenceImplementation(callback)
        self._broken = broken

    def hello_result(self):
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "implementation": {"name": "tiny-port", "version": "0.0.1", "language": "python"},
            "capabilities": ["core"],
        }

    async def handle(self, method, params):
        log = os.environ.get("TINY_PORT_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as stream:
                stream.write(json.dumps({"method": method, "handle": params.get("handle")}) + "\\n")
        if self._broken and method == "session.abort":
            return {}
        return await self._inner.handle(method, params)


def make(callback):
    return TinyPort(callback)


def make_broken(callback):
    return TinyPort(callback, broken=True)
"""

CONFORMANCE_TEST = """
import pytest

from relavium_conformance.pytest_plugin import assert_case_passes


def test_conformance_case(conformance_adapter, conformance_case):
    assert_case_passes(conformance_adapter, conformance_case)


@pytest.mark.clauses("AS-LIFE-017")
def test_a_test_of_my_own_cites_a_clause():
    pass
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tinyport").mkdir()
    (tmp_path / "tinyport" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tinyport" / "adapter.py").write_text(PORT, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_conformance.py").write_text(CONFORMANCE_TEST, encoding="utf-8")
    # --strict-markers: the plugin must register what it uses; no cacheprovider cache left behind
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = --strict-markers -p no:randomly\npythonpath = .\n", encoding="utf-8"
    )
    return tmp_path


def _env(project: Path, log: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(project)
    if log is not None:
        env["TINY_PORT_LOG"] = str(log)
    return env


def _pytest(project: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", *args],
        cwd=project,
        env=_env(project, log),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _handles(log: Path) -> set[str]:
    """The cases that created a session: a case's further sessions are ``<handle>.<name>`` (one case)."""
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    created = [json.loads(line)["handle"] for line in lines if json.loads(line)["method"] == "session.create"]
    return {handle.split(".", 1)[0] for handle in created}


def test_the_cli_runs_a_python_port_by_name(project: Path) -> None:
    report = project / "r.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "relavium_conformance",
            "run",
            "--adapter",
            "python:tinyport.adapter:make",
            "--select",
            "lifecycle/*",
            "--json",
            str(report),
        ],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["implementation"]["name"] == "tiny-port"
    assert document["summary"]["passed"] > 10
    assert document["summary"]["failed"] == document["summary"]["errored"] == 0


def test_the_cli_fails_the_broken_python_port(project: Path) -> None:
    command = ["run", "--adapter", "python:tinyport.adapter:make_broken", "--select", "lifecycle/abort-b*"]
    result = subprocess.run(
        [sys.executable, "-m", "relavium_conformance", *command],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout[-3000:]


def test_pytest_k_on_one_case_executes_only_that_case(project: Path) -> None:
    log = project / "ops.log"
    result = _pytest(
        project,
        "tests/test_conformance.py",
        "--relavium-adapter",
        "python:tinyport.adapter:make",
        "-k",
        "lifecycle/abort-mid-stream",
        log=log,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 passed" in result.stdout, result.stdout[-2000:]
    assert (
        "PASSED tests/test_conformance.py::test_conformance_case[python:adapter::lifecycle/abort-mid-stream]"
        in (result.stdout)
    )
    assert len(_handles(log)) == 1  # one case, one session: nothing else was executed


def test_plugin_selects_by_marks_and_clause_keywords(project: Path) -> None:
    log = project / "ops.log"
    result = _pytest(
        project,
        "tests/test_conformance.py",
        "--relavium-adapter",
        "tiny=python:tinyport.adapter:make",
        "-m",
        "conformance(area='session')",
        log=log,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    ran = [line for line in result.stdout.splitlines() if line.startswith("PASSED")]
    assert ran
    assert all("[tiny::session/" in line for line in ran), ran
    assert len(_handles(log)) == len(ran)
    by_clause = _pytest(project, "tests/test_conformance.py", "-k", "AS-LIFE-017 and abort-mid-stream")
    assert "1 passed" in by_clause.stdout, by_clause.stdout[-2000:]


def test_a_baseline_becomes_strict_xfail_and_failures_name_their_clauses(project: Path) -> None:
    baseline = project / "known.yaml"
    baseline.write_text(
        "known_failures:\n"
        "  - case: lifecycle/abort-before-provider\n    reason: abort is not wired yet\n"
        "  - case: lifecycle/plain-turn-event-order\n    reason: listed although it passes\n",
        encoding="utf-8",
    )
    result = _pytest(
        project,
        "tests/test_conformance.py",
        "--relavium-adapter",
        "python:tinyport.adapter:make_broken",
        "--relavium-baseline",
        str(baseline),
        "-k",
        "plain-turn-event-order or abort-before-provider or abort-between-tool-rounds",
    )
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert (
        "XFAIL tests/test_conformance.py::test_conformance_case[python:adapter::lifecycle/abort-before-p"
        in out
    )
    # the broken port still runs a plain turn: its entry is stale, and strict xfail says so
    assert "[XPASS(strict)] baseline: listed although it passes" in out, out[-3000:]
    # a failure outside the baseline reads as clauses with summaries, not a Python repr
    assert "FAILED lifecycle/abort-between-tool-rounds:" in out, out[-3000:]
    assert "AS-LIFE-016: " in out
    assert "Traceback" not in out
    assert "CaseResult(" not in out


def test_clauses_marker_is_registered_under_strict_markers(project: Path) -> None:
    result = _pytest(project, "tests/test_conformance.py", "-k", "cites_a_clause")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout


def test_adapter_names_and_aliases() -> None:
    assert split_alias("echo=stdio:node a.mjs") == ("echo", "stdio:node a.mjs")
    assert split_alias("stdio:env A=1 prog") == (None, "stdio:env A=1 prog")
    assert adapter_alias("reference") == "reference"
    assert adapter_alias("stdio:node /home/me/x/echo-adapter.mjs --verbose") == "stdio:echo-adapter"
    assert adapter_alias("python:my_port.kit.adapter:make") == "python:adapter"
    assert adapter_alias("mine=python:my_port.adapter:make") == "mine"
    assert resolve_adapter("mine=reference").name == "mine"
    with pytest.raises(KitUsageError, match=r"cannot import 'no_such_port\.adapter'"):
        resolve_adapter("python:no_such_port.adapter:make")
    with pytest.raises(KitUsageError, match="has no attribute"):
        resolve_adapter("python:relavium_conformance:no_such_factory")
    with pytest.raises(KitUsageError, match=r"is named python:package\.module:factory"):
        resolve_adapter("python:not a name")
    with pytest.raises(KitUsageError, match="unknown adapter"):
        resolve_adapter("pyhton:my_port:make")


def test_docs_python_port_example_imports_only_public_names() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "adapters.md").read_text(encoding="utf-8")
    section = text.split("## 9. In-process Python adapters", 1)[1].split("\n## ", 1)[0]
    imports = [line for line in section.splitlines() if line.startswith(("from relavium", "import relavium"))]
    assert imports, "the section shows its imports"
    assert [line for line in imports if "._" in line] == []
    code = textwrap.dedent(section.split("```python", 1)[1].split("```", 1)[0])
    compile(code, "docs/adapters.md#9", "exec")
