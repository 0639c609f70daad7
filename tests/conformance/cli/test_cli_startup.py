"""What a listing costs beyond the interpreter's start: the command line asks argparse's questions
without ``shutil``, and a warm ``run --list`` imports neither the hashing, dataclass, temporary-file nor
threading modules, with help texts and terminal widths exactly those argparse gives itself."""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from relavium_conformance._cli import _common, build_parser

ROOT = Path(__file__).resolve().parents[3]


class _Stdout:
    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor

    def fileno(self) -> int:
        return self.descriptor


@pytest.mark.parametrize("columns", [None, "40", "200", "0", "-3", "wide", ""])
@pytest.mark.parametrize("terminal", [None, (31, 97), (0, 0)])
def test_the_width_is_the_one_shutil_reports(
    monkeypatch: pytest.MonkeyPatch, columns: str | None, terminal: tuple[int, int] | None
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    if terminal is None:  # no terminal: a pipe
        read, write = os.pipe()
    else:  # a real pseudo-terminal of that size (rows, columns)
        fcntl = pytest.importorskip("fcntl")
        termios = pytest.importorskip("termios")
        write, read = os.openpty()
        fcntl.ioctl(read, termios.TIOCSWINSZ, struct.pack("HHHH", *terminal, 0, 0))
    try:
        monkeypatch.setattr(sys, "__stdout__", _Stdout(write))
        assert _common._terminal_columns() == shutil.get_terminal_size().columns
        monkeypatch.setattr(sys, "__stdout__", None)  # (Python started without a stdout)
        assert _common._terminal_columns() == shutil.get_terminal_size().columns
    finally:
        os.close(read)
        os.close(write)


def _helps(parser: argparse.ArgumentParser) -> list[str]:
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts.extend(sub.format_help() for sub in action.choices.values())
    return texts


@pytest.mark.parametrize("columns", ["52", "100", "200"])
def test_every_help_text_is_what_argparse_s_own_formatter_writes(
    monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    ours = _helps(build_parser())
    monkeypatch.setattr(_common, "_KitHelpFormatter", argparse.HelpFormatter)
    theirs = _helps(build_parser())
    assert len(ours) > 10
    assert ours == theirs


def test_a_warm_listing_imports_no_hashing_dataclass_tempfile_or_threading_module(tmp_path: Path) -> None:
    env = {**os.environ, "RELAVIUM_CONFORMANCE_YAML_CACHE": str(tmp_path / "cache")}
    # every file settled, by a stand-in file-system clock (the cache folder may be on another device)
    settle = (
        "from relavium_conformance._corpus import index\nindex._fs_clock = lambda folder, devices: 10**30\n"
    )
    listing = (
        "import contextlib, io, sys\n"
        "from relavium_conformance._cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    assert main(['run', '--list']) == 0\n"
        "assert out.getvalue().count('\\n') > 100\n"
    )
    subprocess.run([sys.executable, "-c", settle + listing], check=True, cwd=ROOT, env=env)  # keeps it
    probe = (
        f"{listing}"
        "heavy = {'hashlib', 'dataclasses', 'inspect', 'tempfile', 'shutil', 'threading', 'pydantic'}\n"
        "assert not heavy & set(sys.modules), sorted(heavy & set(sys.modules))\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT, env=env)
