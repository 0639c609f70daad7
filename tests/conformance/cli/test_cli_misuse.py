"""Every misuse of the command line: exit 2 and one line in one style, found before any case runs."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from relavium_conformance._cli import main
from relavium_conformance._corpus.index import corpus_index
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
    other = tmp / "other.yaml"
    other.write_text("implementation: someone-else\nknown_failures: []\n", encoding="utf-8")
    store = tmp / "store.yaml"
    store.write_text("known_failures:\n  - case: store/some-case\n    reason: r\n", encoding="utf-8")
    session = tmp / "session.yaml"
    session.write_text("profile: agent-session\nknown_failures: []\n", encoding="utf-8")
    return [
        ("timeout-zero", ["run", "--timeout", "0"], "--timeout"),
        ("timeout-negative", ["run", "--timeout", "-1"], "--timeout"),
        ("timeout-nan", ["run", "--timeout", "nan"], "--timeout"),
        ("timeout-inf", ["run", "--timeout", "inf"], "--timeout"),
        ("json-under-a-file", ["run", "--json", str(latin / "r.json")], "is a file, not a folder"),
        ("junit-is-folder", ["run", "--junit", str(tmp)], "is a folder"),
        ("markdown-under-a-file", ["run", "--markdown", str(latin / "d" / "r.md")], "is a file"),
        ("write-baseline-under-a-file", ["run", "--write-baseline", str(latin / "b.yaml")], "is a file"),
        ("trace-under-a-file", ["run", "--trace", str(latin / "t.jsonl")], "is a file"),
        (
            "json-and-junit-one-file",
            ["run", "--json", str(tmp / "r"), "--junit", str(tmp / "." / "r")],
            "--json and --junit name the same file",
        ),
        (
            "baseline-of-another-implementation",
            ["run", "--baseline", str(other), "--select", "commands/*"],
            "written for implementation 'someone-else', but this run tests 'relavium-reference'",
        ),
        (
            "baseline-of-another-profile",
            ["run", "--baseline", str(store), "--select", "commands/*"],
            "written for --profile session-store, but this run is --profile agent-session",
        ),
        (
            "store-baseline-of-the-session-profile",
            ["run", "--profile", "session-store", "--baseline", str(session)],
            "written for --profile agent-session, but this run is --profile session-store",
        ),
        (
            "select-one-pattern-matching-nothing",
            ["run", "--select", "commands/*", "--select", "comands/idle-after-command"],
            "'comands/idle-after-command' matches no case (did you mean commands/idle-after-command?)",
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
        (
            "misspelt-adapter",
            ["run", "--adapter", "refrence"],
            "unknown adapter 'refrence' (did you mean reference?)",
        ),
        ("misspelt-adapter-kind", ["run", "--adapter", "stdo:./port"], "(did you mean stdio:./port?)"),
        (
            "report-missing-results",
            ["report", str(tmp / "none.json"), "--html", str(tmp / "p.html")],
            "none.json",
        ),
        (
            "report-not-results",
            ["report", str(latin), "--html", str(tmp / "p.html")],
            "not a results document",
        ),
        ("report-no-output", ["report", str(latin)], "needs --html, --badges, --markdown, --json or --junit"),
        ("report-html-under-a-file", ["report", str(latin), "--html", str(latin / "p.html")], "is a file"),
        ("no-command", [], "COMMAND"),
        (
            "unknown-adapter",
            ["run", "--adapter", "telepathy", "--select", "commands/idle-after-command"],
            "adapter",
        ),
        ("spec-missing", ["spec-coverage", str(tmp / "no-spec.md")], "No such file"),
        ("selftest-json-under-a-file", ["selftest", "--json", str(latin / "s.json")], "is a file"),
        (
            "fuzz-json-and-markdown-one-file",
            ["fuzz", "--json", str(tmp / "f"), "--markdown", str(tmp / "f")],
            "--json and --markdown name the same file",
        ),
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
    (tmp_path / "x").write_text("a file", encoding="utf-8")
    code, out, _err = call(
        ["run", "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "x" / "j.xml")], capsys
    )
    assert code == 2
    assert out == ""  # no case ran
    assert not (tmp_path / "r.json").exists()


def test_missing_folders_of_an_output_are_made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/ci.md's ``--json conformance/results.json`` in a fresh checkout: the folder is made."""
    outputs = {
        "--json": tmp_path / "a" / "results.json",
        "--junit": tmp_path / "b" / "c" / "junit.xml",
        "--markdown": tmp_path / "d" / "summary.md",
        "--write-baseline": tmp_path / "e" / "baseline.yaml",
        "--trace": tmp_path / "f" / "trace.jsonl",
    }
    argv = ["run", "--select", "commands/idle-after-command"]
    for option, path in outputs.items():
        argv += [option, str(path)]
    code, _out, err = call(argv, capsys)
    assert code == 0, err
    for path in outputs.values():
        assert path.is_file(), path


def test_a_baseline_of_another_implementation_is_refused_before_any_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("implementation: someone-else\nknown_failures: []\n", encoding="utf-8")
    for jobs in ("1", "2"):
        code, out, err = call(
            ["run", "-j", jobs, "-v", "--baseline", str(other), "--json", str(tmp_path / "r.json")], capsys
        )
        assert code == 2, (jobs, err)
        assert "written for implementation 'someone-else'" in err
        assert " PASSED" not in out
        assert "passed" not in out
        assert not (tmp_path / "r.json").exists()


def test_select_refuses_each_pattern_that_matched_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(
        ["run", "--list", "--select", "commands/*", "--select", "comands/idle-after-command"], capsys
    )
    assert code == 2
    assert out == ""
    assert "'comands/idle-after-command' matches no case (did you mean commands/idle-after-command?)" in err
    code, out, err = call(["run", "--list", "--select", "no-such-area/*"], capsys)
    assert code == 2
    assert "'no-such-area/*' matches no case" in err
    code, out, err = call(["run", "--list", "--select", "commands/*", "--exclude", "commands/*"], capsys)
    assert code == 4  # every pattern matched, but nothing is left: an empty selection
    assert "no case matches the selection" in err


def test_version_names_the_kit_the_corpus_and_the_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = call(["--version"], capsys)
    assert code == 0
    cases = len(corpus_index())
    assert out == version_line(cases) + "\n"
    assert kit_version() in out
    assert corpus_version(cases) in out
    assert f"protocol {PROTOCOL_VERSION}" in out
    assert re.search(r"corpus \d+ cases, sha256:[0-9a-f]{12}", out)

    listed = call(["run", "--list"], capsys)[1].splitlines()
    assert f"corpus {len(listed)} cases," in out  # what a run counts (314 today), not the files
    assert len(listed) == len(corpus_index())


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


def test_fuzz_without_hypothesis_says_what_to_install() -> None:
    import subprocess

    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "from relavium_conformance._cli import main\n"
        "sys.exit(main(['fuzz', '--examples', '1']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert ONE_LINE.match(done.stderr), done.stderr
    assert "pip install 'relavium-conformance[strategies]'" in done.stderr


def test_report_writes_its_page_into_a_folder_not_made_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "r.json"
    code, _out, err = call(["run", "--select", "commands/idle-after-command", "--json", str(results)], capsys)
    assert code == 0, err
    page = tmp_path / "site" / "conformance" / "index.html"
    code, out, err = call(["report", str(results), "--html", str(page)], capsys)
    assert code == 0, err
    assert page.is_file()
    assert f"-> {page}" in out
