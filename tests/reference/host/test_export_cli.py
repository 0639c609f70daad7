"""``relavium-conformance export``: a persisted session from a history.db to a .relavium.yaml file."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from relavium_reference._host.export_cli import REVIEW_NOTICE, register
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._model.messages import parse_agent_session_record
from relavium_reference._model.records import parse_completed_turn
from relavium_reference.export import parse_workflow, serialize_workflow, session_to_workflow

SESSION_ID = "3f2b8c1e-9a4d-4e2b-8f6a-1c2d3e4f5a6b"


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _turn(user: str, final: str, tool: str | None = None) -> Any:
    structural: list[dict[str, Any]] = []
    call = f"call-{len(user)}"
    if tool is not None:
        structural = [
            {
                "role": "assistant",
                "content": [{"type": "tool_call", "id": call, "name": tool}],
            },
            {
                "role": "tool",
                "content": [{"type": "tool_result", "toolCallId": call, "name": tool, "isError": False}],
            },
        ]
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": user}]},
            "structural": structural,
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": final}]},
        }
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "history.db"
    with HistoryStore.open(path, clock=_Clock()) as store:
        for session_id, title in ((SESSION_ID, "Fix the {{ build }}"), ("odd/id", None)):
            store.create_session(
                parse_agent_session_record(
                    {
                        "id": session_id,
                        "agentSlug": "coder",
                        "context": {"workingDir": "/w"},
                        "createdAt": "2026-03-01T10:00:00Z",
                        "updatedAt": "2026-03-01T10:00:00Z",
                        **({"title": title} if title else {}),
                    }
                )
            )
            store.commit_turn(session_id, _turn("why does it fail?", "", tool="read_file"))
            store.commit_turn(session_id, _turn("fix it", "done"))
    return path


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "work"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="relavium-conformance")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["export", *argv])
    code: int = args.handler(args)
    return code


def _expected_text(db: Path, session_id: str = SESSION_ID) -> str:
    with HistoryStore.open(db) as store:
        return serialize_workflow(session_to_workflow(*store.load_full(session_id)))


@pytest.mark.clauses("AS-EXP-009", "AS-EXP-040")
def test_export_writes_the_default_file_and_the_notice(
    db: Path, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("--db", str(db), SESSION_ID) == 0
    written = workdir / f"{SESSION_ID}.relavium.yaml"
    assert written.read_text(encoding="utf-8") == _expected_text(db)
    out, err = capsys.readouterr()
    assert str(written) in out
    assert "fix-the-build" in out
    assert err == REVIEW_NOTICE


def test_exported_file_parses_and_has_one_node_per_turn(db: Path, workdir: Path) -> None:
    assert _run("--db", str(db), SESSION_ID, "--out", "w.relavium.yaml") == 0
    document = parse_workflow((workdir / "w.relavium.yaml").read_text(encoding="utf-8"))
    nodes = [node.id for node in document.workflow.nodes]
    assert nodes == ["input", "turn-1", "turn-2", "output"]
    assert document.workflow.nodes[1].tools == ("read_file",)  # type: ignore[union-attr]


@pytest.mark.clauses("AS-EXP-009")
def test_json_mode_prints_path_and_id_and_still_writes_the_notice(
    db: Path, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("--db", str(db), SESSION_ID, "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "workflowPath": str(workdir / f"{SESSION_ID}.relavium.yaml"),
        "workflowId": "fix-the-build",
    }
    assert err == REVIEW_NOTICE


def test_existing_file_is_refused_and_left_untouched(
    db: Path, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = workdir / "taken.yaml"
    target.write_bytes(b"mine\n")
    assert _run("--db", str(db), SESSION_ID, "--out", str(target), "--json") == 2
    assert target.read_bytes() == b"mine\n"
    out, err = capsys.readouterr()
    assert out == ""
    assert "--force" in err
    assert REVIEW_NOTICE not in err


def test_force_overwrites_and_the_bytes_are_reproducible(db: Path, workdir: Path) -> None:
    target = workdir / "w.yaml"
    target.write_bytes(b"old\n")
    assert _run("--db", str(db), SESSION_ID, "--out", str(target), "--force") == 0
    first = target.read_bytes()
    assert first == _expected_text(db).encode("utf-8")
    assert _run("--db", str(db), SESSION_ID, "--out", str(target), "--force") == 0
    assert target.read_bytes() == first
    assert sorted(p.name for p in workdir.iterdir()) == ["w.yaml"]  # no temporary file left


def test_export_does_not_change_the_session(db: Path, workdir: Path) -> None:
    with HistoryStore.open(db) as store:
        before = store.load_full(SESSION_ID)
    assert _run("--db", str(db), SESSION_ID) == 0
    with HistoryStore.open(db) as store:
        assert store.load_full(SESSION_ID) == before


def test_unknown_session_exits_1_and_writes_nothing(
    db: Path, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("--db", str(db), "no-such-session") == 1
    assert list(workdir.iterdir()) == []
    out, err = capsys.readouterr()
    assert out == ""
    assert "session not found" in err


def test_missing_database_exits_1_and_is_not_created(workdir: Path) -> None:
    assert _run("--db", str(workdir / "absent.db"), SESSION_ID) == 1
    assert list(workdir.iterdir()) == []


def test_corrupt_database_exits_1(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corrupt = workdir / "history.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    assert _run("--db", str(corrupt), SESSION_ID, "--out", "x.yaml") == 1
    assert not (workdir / "x.yaml").exists()
    assert "error" in capsys.readouterr().err


def test_session_id_that_cannot_name_a_file_needs_out(db: Path, workdir: Path) -> None:
    assert _run("--db", str(db), "odd/id") == 2
    assert list(workdir.iterdir()) == []
    assert _run("--db", str(db), "odd/id", "--out", "odd.yaml") == 0
    document = parse_workflow((workdir / "odd.yaml").read_text(encoding="utf-8"))
    metadata = document.workflow.metadata
    assert metadata is not None
    assert metadata.relavium_export is not None
    assert metadata.relavium_export.session_id == "odd/id"


@pytest.mark.clauses("AS-EXP-010", "AS-EXP-012", "AS-EXP-014", "AS-EXP-015")
def test_notice_covers_continuity_review_and_snapshots() -> None:
    text = " ".join(REVIEW_NOTICE.split()).lower()
    for needed in (
        "working context",
        "summarised",
        "review",
        "run or commit",
        "redacted",
        "snapshot",
        "validation",
    ):
        assert needed in text, needed


def test_export_is_a_subcommand_of_the_kit_command(
    db: Path, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from relavium_conformance._cli import main

    assert main(["export", "--db", str(db), SESSION_ID, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workflowId"] == "fix-the-build"
