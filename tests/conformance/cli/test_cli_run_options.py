"""``run`` options a port's CI needs: its own cases, exclusions, stopping early, the GitHub job summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relavium_conformance._cli import main
from relavium_conformance._data import fixtures_dir


def _own_case(folder: Path, name: str, **changes: str) -> Path:
    text = (fixtures_dir() / "transcripts" / "lifecycle" / "abort-idle-noop.yaml").read_text(encoding="utf-8")
    text = text.replace("id: lifecycle/abort-idle-noop", f"id: mine/{name}")
    for old, new in changes.items():
        text = text.replace(old, new)
    path = folder / "mine" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _run(*args: str, tmp_path: Path) -> tuple[int, dict[str, object]]:
    report = tmp_path / "r.json"
    code = main(["run", *args, "--json", str(report)])
    return code, json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}


def test_run_adds_a_ports_own_cases(tmp_path: Path) -> None:
    _own_case(tmp_path / "cases", "idle-abort")
    code, document = _run("--cases", str(tmp_path / "cases"), "--select", "mine/*", tmp_path=tmp_path)
    assert code == 0
    assert [c["id"] for c in document["cases"]] == ["mine/idle-abort"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"AS-LIFE-020": "AS-TEST-999"}, "unknown clause ids AS-TEST-999"),
        ({"id: mine/": "id: other/"}, "must match its path"),
        ({"steps:": "stepz:"}, "required field missing"),
    ],
)
def test_a_ports_cases_are_validated_as_the_kits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, str], message: str
) -> None:
    _own_case(tmp_path / "cases", "bad", **changes)
    assert main(["run", "--cases", str(tmp_path / "cases"), "--list"]) == 2
    assert message in capsys.readouterr().err


def test_a_ports_case_may_not_take_a_kit_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cases"
    (folder / "lifecycle").mkdir(parents=True)
    kit_case = fixtures_dir() / "transcripts" / "lifecycle" / "abort-idle-noop.yaml"
    (folder / "lifecycle" / "abort-idle-noop.yaml").write_text(kit_case.read_text(encoding="utf-8"))
    assert main(["run", "--cases", str(folder), "--list"]) == 2
    assert "already taken" in capsys.readouterr().err


def test_exclude_drops_what_it_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--select", "lifecycle/*", "--exclude", "lifecycle/abort*", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed
    assert all(case.startswith("lifecycle/") for case in listed)
    assert not [case for case in listed if case.startswith("lifecycle/abort")]
    assert main(["run", "--select", "lifecycle/*", "--exclude", "AS-LIFE-020", "--list"]) == 0
    assert "lifecycle/abort-idle-noop" not in capsys.readouterr().out


def test_maxfail_and_exitfirst_stop_the_run(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    for name in ("a", "b", "c"):  # each expects a text the provider never sends: all three fail
        _own_case(folder, name, **{"text: fine}}": "text: other}}"})
    code, document = _run("--cases", str(folder), "--select", "mine/*", "--maxfail", "2", tmp_path=tmp_path)
    assert code == 1
    assert [c["status"] for c in document["cases"]] == ["failed", "failed"]  # type: ignore[index]
    code, document = _run("--cases", str(folder), "--select", "mine/*", "-x", tmp_path=tmp_path)
    assert [c["id"] for c in document["cases"]] == ["mine/a"]  # type: ignore[index]


def test_github_summary_appends_the_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["run", "--select", "lifecycle/abort-idle-noop", "--github-summary"]) == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n")
    assert "abort-idle-noop" in text or "lifecycle" in text
    assert "| " in text  # the Markdown tables


def test_github_summary_outside_actions_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert main(["run", "--select", "lifecycle/abort-idle-noop", "--github-summary"]) == 2
    assert "GITHUB_STEP_SUMMARY is not set" in capsys.readouterr().err


def test_data_path_names_the_folders(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data-path", "--json"]) == 0
    paths = json.loads(capsys.readouterr().out)
    assert paths["fixtures"] == str(fixtures_dir())
    assert Path(paths["examples"], "echo-adapter.mjs").is_file()
    assert main(["data-path", "schemas"]) == 0
    assert Path(capsys.readouterr().out.strip(), "transcript.schema.json").is_file()


def test_the_store_profile_honours_verbose_trace_exclude_and_stopping_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t" / "store.jsonl"
    select = ["--profile", "session-store", "--select", "store/acquire-*"]
    code = main(["run", *select, "-v", "--trace", str(trace), "--exclude", "store/acquire-concurrent-*"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "START store/acquire-create-and-return" in out  # -v: a line as each case starts
    assert "PASSED store/acquire-create-and-return" in out
    assert "store/acquire-concurrent-one-session" not in out  # --exclude
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert "store/acquire-create-and-return" in {line["case"] for line in lines}
    assert f"trace: {len(lines)} messages written to {trace}" in out
    # an implementation that never starts errs every case: -x and --maxfail stop after the first ones
    for stop, ran in ((["-x"], 1), (["--maxfail", "2"], 2)):
        code, document = _run(*select, "--adapter", "stdio:false", *stop, tmp_path=tmp_path)
        assert code == 3
        assert len(document["cases"]) == ran  # type: ignore[arg-type]


def test_the_store_profile_refuses_the_options_it_cannot_honour_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for option, named in (
        (["-j", "2"], "-j/--jobs"),
        (["--require-capability", "core"], "--require-capability"),
        (["--require-all"], "--require-all"),
    ):
        code = main(["run", "--profile", "session-store", *option])
        err = capsys.readouterr().err
        assert code == 2, option
        assert f"--profile session-store does not take {named} (" in err


def test_jobs_where_fork_is_missing_say_they_run_serially(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from relavium_conformance._run import parallel

    monkeypatch.setattr(parallel, "fork_available", lambda: False)
    assert main(["run", "-j", "3", "--select", "commands/*"]) == 0
    err = capsys.readouterr().err
    assert "-j 3: this platform cannot fork worker processes; the cases run one after another" in err
