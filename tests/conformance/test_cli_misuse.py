"""Every misuse of the command line: exit 2 and one line in one style, found before any case runs."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from relavium_conformance._cli import main
from relavium_conformance._version import PROTOCOL_VERSION, corpus_version, kit_version, version_line

ONE_LINE = re.compile(r"^relavium-conformance( [a-z-]+)?: error: [^\n]+\n$")


def call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def misuses(tmp: Path) -> list[tuple[str, list[str], str]]:
    fifo = tmp / "fifo"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
    latin = tmp / "latin.yaml"
    latin.write_bytes(b"known_failures: [] # caf\xe9\n")
    return [
        ("timeout-zero", ["run", "--timeout", "0"], "--timeout"),
        ("timeout-negative", ["run", "--timeout", "-1"], "--timeout"),
        ("timeout-nan", ["run", "--timeout", "nan"], "--timeout"),
        ("timeout-inf", ["run", "--timeout", "inf"], "--timeout"),
        ("json-no-folder", ["run", "--json", str(tmp / "missing" / "r.json")], "does not exist"),
        ("junit-is-folder", ["run", "--junit", str(tmp)], "is a folder"),
        ("markdown-no-folder", ["run", "--markdown", str(tmp / "missing" / "r.md")], "does not exist"),
        (
            "write-baseline-no-folder",
            ["run", "--write-baseline", str(tmp / "no" / "b.yaml")],
            "does not exist",
        ),
        ("baseline-missing", ["run", "--baseline", str(tmp / "none.yaml")], "--baseline"),
        ("baseline-fifo", ["run", "--baseline", str(fifo)], "not a regular file"),
        (
            "baseline-not-utf8",
            ["run", "--baseline", str(latin), "--select", "commands/idle-after-command"],
            "UTF-8",
        ),
        ("misspelt-option", ["run", "--timout", "3"], "did you mean --timeout?"),
        ("misspelt-command", ["rnu"], "did you mean run?"),
        ("no-command", [], "COMMAND"),
        (
            "unknown-adapter",
            ["run", "--adapter", "telepathy", "--select", "commands/idle-after-command"],
            "adapter",
        ),
        ("spec-missing", ["spec-coverage", str(tmp / "no-spec.md")], "No such file"),
        ("selftest-json-no-folder", ["selftest", "--json", str(tmp / "no" / "s.json")], "does not exist"),
    ]


def test_every_misuse_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, argv, says in misuses(tmp_path):
        if "fifo" in name and not hasattr(os, "mkfifo"):
            continue
        code, out, err = call(argv, capsys)
        assert code == 2, (name, out, err)
        assert ONE_LINE.match(err), (name, err)
        assert says in err, (name, err)
        assert "Traceback" not in err
        assert re.search(r"\b[A-Z][A-Za-z]+(Error|Exception)\b", err) is None, (name, err)  # no Python names


def test_an_output_path_is_checked_before_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = call(
        ["run", "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "x" / "j.xml")], capsys
    )
    assert code == 2
    assert out == ""  # no case ran
    assert not (tmp_path / "r.json").exists()


def test_select_names_each_pattern_that_matched_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(
        ["run", "--list", "--select", "commands/*", "--select", "comands/idle-after-command"], capsys
    )
    assert code == 0
    assert "commands/idle-after-command" in out
    assert "'comands/idle-after-command' matches no case (did you mean commands/idle-after-command?)" in err
    code, out, err = call(["run", "--list", "--select", "no-such-area/*"], capsys)
    assert code == 4
    assert "'no-such-area/*' matches no case" in err


def test_version_names_the_kit_the_corpus_and_the_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = call(["--version"], capsys)
    assert code == 0
    assert out == version_line() + "\n"
    assert kit_version() in out
    assert corpus_version() in out
    assert f"protocol {PROTOCOL_VERSION}" in out
    assert re.search(r"corpus \d+ case files, sha256:[0-9a-f]{12}", out)


def test_every_sub_command_has_a_description_and_every_option_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from relavium_conformance._cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    for name, sub in commands.choices.items():  # type: ignore[attr-defined]
        assert sub.description, name
        assert "``" not in sub.description, name  # no raw markup in --help
        for action in sub._actions:
            assert action.help, (name, action.option_strings)


@pytest.mark.skipif(sys.platform == "win32", reason="the pipe closes differently")
def test_a_closed_pipe_on_stdout_is_quiet(tmp_path: Path) -> None:
    import subprocess

    process = subprocess.Popen(
        [sys.executable, "-m", "relavium_conformance", "run", "--list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.readline()
    process.stdout.close()  # like `| head -1`
    _, err = process.communicate(timeout=300)
    assert b"Traceback" not in err


def test_each_command_module_registers_the_command_named_for_it() -> None:
    """The dispatcher imports only the named command's module: the table must say where each lives."""
    import argparse

    from relavium_conformance._cli import COMMAND_MODULES, build_parser

    def names(parser: argparse.ArgumentParser) -> list[str]:
        [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return sorted(action.choices)

    assert names(build_parser()) == sorted(COMMAND_MODULES)
    for command in COMMAND_MODULES:
        assert names(build_parser(command)) == [command]
