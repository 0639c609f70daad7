"""The kit's wheel, built offline from a copy of the checkout (tests/test_wheel.py, the CI recipe's test).

Without build isolation and with ``--no-deps``: nothing is fetched.  The copy leaves nothing beside the
checkout (setuptools writes ``build/`` into the folder it builds).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def copy_sources(target: Path) -> Path:
    """The checkout's files, less version control, environments, builds and caches, copied to ``target``."""
    shutil.copytree(
        ROOT,
        target,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
        symlinks=True,
    )
    return target


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel ``pip wheel`` builds from ``source`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
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
