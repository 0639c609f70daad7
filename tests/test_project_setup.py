"""The project's own wiring: CI runs the README's command, data is found, the surface is closed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import relavium_conformance
import relavium_reference

ROOT = Path(__file__).resolve().parent.parent


def _fenced_after(marker: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(re.escape(marker) + r"\s*```sh\n(.*?)\n```", text, re.S)
    assert match, f"README has no command after {marker}"
    return match.group(1)


def test_ci_script_extracts_exactly_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    awk = re.search(r"command=\$\((awk .*?README\.md)\)", script)
    assert awk, ".ci/run no longer reads its command from the README"
    extracted = subprocess.run(
        ["bash", "-c", awk.group(1)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert extracted == _fenced_after("<!-- test-command -->")
    assert "pytest" in extracted


def test_readme_main_command_runs_the_kit() -> None:
    assert "relavium-conformance run" in _fenced_after("<!-- main-command -->")


def test_packages_declare_their_public_surface() -> None:
    for package in (relavium_reference, relavium_conformance):
        assert (Path(package.__file__).parent / "py.typed").is_file()
        for name in package.__all__:
            assert hasattr(package, name), f"{package.__name__}.{name} is listed but missing"
        public = {n for n in vars(package) if not n.startswith("_")} - {"annotations"}
        unlisted = {n for n in public if not isinstance(getattr(package, n), type(package))}
        assert unlisted <= set(package.__all__), sorted(unlisted - set(package.__all__))


def test_data_folders_are_found() -> None:
    assert relavium_conformance.fixtures_dir().is_dir()
    assert relavium_conformance.schemas_dir().is_dir()


def test_the_engine_imports_a_public_name_on_first_use() -> None:
    """``import relavium_reference`` imports none of its rooms, and the kit's run path (whose stdio runs
    never drive the engine in-process) imports only the engine's exception root: the strict workflow
    reader comes at the first export read-back, the sessions, stores and providers with an in-process
    adapter."""
    probe = (
        "import sys\n"
        "import relavium_reference\n"
        "assert not [m for m in sys.modules if m.startswith('relavium_reference.')], sorted(sys.modules)\n"
        "import relavium_conformance._cli.run_cases, relavium_conformance._connect\n"
        "engine = {m for m in sys.modules if m.startswith('relavium_reference.')}\n"
        "assert engine == {'relavium_reference._model', 'relavium_reference._model.errors'}, engine\n"
        "assert relavium_reference.AgentSession.__module__ == 'relavium_reference._host.session'\n"
        "assert 'AgentSession' in vars(relavium_reference) and 'SqlitePersister' in dir(relavium_reference)\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT)


def test_type_checkers_refuse_a_name_the_packages_do_not_have(tmp_path: Path) -> None:
    """The lazy ``__getattr__`` of both packages is hidden from type checkers, so a misspelt public name
    is an error for mypy, as it was when the packages imported their names at once."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import relavium_conformance\n"
        "import relavium_reference\n"
        "from relavium_reference import AgentSession, AgentSesion\n"
        "from relavium_conformance import run_cases, run_casez\n"
        "print(AgentSession, run_cases, relavium_reference.NoSuchThing)\n",
        encoding="utf-8",
    )
    config = tmp_path / "mypy.ini"
    config.write_text(
        f"[mypy]\nstrict = True\nmypy_path = {ROOT / '.import-roots'}\n"
        "[mypy-ruamel.*]\nignore_missing_imports = True\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", os.devnull, str(probe)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    missing = sorted(re.findall(r'has no attribute "(\w+)"', done.stdout))
    assert missing == ["AgentSesion", "NoSuchThing", "run_casez"], done.stdout + done.stderr


def test_the_stdio_server_imports_no_schema_validator() -> None:
    """The server parses messages with the kit's pydantic models and never judges a shape: jsonschema
    and referencing (about 40 ms of every server start) are the kit's, imported at its first shape
    question."""
    probe = (
        "import sys\n"
        "import relavium_conformance._reference.stdio_server\n"
        "import relavium_conformance._reference.session_store_impl\n"
        "from relavium_conformance._reference.session_store_impl import both_profiles_factory\n"
        "both_profiles_factory('sqlite')\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'referencing')]\n"
        "assert not loaded, loaded\n"
        "from relavium_conformance._wire.model import shape_problem\n"
        "assert shape_problem('stream-chunk', {'type': 'text_delta', 'text': 'hi'}) is None\n"
        "assert 'jsonschema' in sys.modules\n"
    )
    no_memo = {**os.environ, "RELAVIUM_CONFORMANCE_YAML_CACHE": "0"}  # the shape question is judged anew
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT, env=no_memo)


def test_a_parent_that_only_deals_cases_imports_no_schema_validator(tmp_path: Path) -> None:
    """The run path and a warm corpus load (the shape verdicts remembered from an earlier process) import
    neither jsonschema nor referencing: under ``-j`` the parent loads the corpus and forks, and each worker
    imports the validator beside the others at its first shape question."""
    env = {**os.environ, "RELAVIUM_CONFORMANCE_YAML_CACHE": str(tmp_path / "cache")}
    load = "from relavium_conformance._corpus.selection import gather_cases\ngather_cases([])\n"
    subprocess.run([sys.executable, "-c", load], check=True, cwd=ROOT, env=env)  # warms the caches
    probe = (
        "import sys\n"
        "import relavium_conformance._cli.run_cases, relavium_conformance._connect\n"
        f"{load}"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'referencing')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT, env=env)


def test_xdist_groups_hold_so_each_shared_session_result_is_computed_once(tmp_path: Path) -> None:
    """tests/conformance/conftest.py computes a whole selftest once only if ``--dist loadgroup`` (addopts)
    sends an ``xdist_group`` to one worker; with pytest 9.2 that grouping silently stops
    (pytest-dev/pytest-xdist#1386), which this catches."""
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    addopts = options["ini_options"]["addopts"]
    assert "--dist" in addopts
    assert addopts[addopts.index("--dist") + 1] == "loadgroup"
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\n"
        + "".join(
            f"@pytest.mark.xdist_group('one')\ndef test_{n}():\n"
            f"    open('{tmp_path}/{n}.worker', 'w').write(os.environ['PYTEST_XDIST_WORKER'])\n"
            for n in range(6)
        )
        + "".join(f"def test_free_{n}():\n    pass\n" for n in range(6)),
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "test_grouped.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {(tmp_path / f"{n}.worker").read_text(encoding="utf-8") for n in range(6)}
    assert len(workers) == 1, workers
