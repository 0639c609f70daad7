"""``relavium-conformance regen-schemas``: the committed schemas and method table are what the models
generate, and ``--check`` notices a file that is not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from relavium_conformance._cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_the_committed_generated_files_are_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["regen-schemas", "--check", "--root", str(ROOT)]) == 0
    assert capsys.readouterr().out.strip() == "up to date"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the checkout's generated files: ``schemas/`` and two pages of ``docs/``."""
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (tmp_path / "docs").mkdir()
    for page in ("protocol.md", "lifecycle.md"):
        shutil.copy(ROOT / "docs" / page, tmp_path / "docs" / page)
    return tmp_path


def test_check_names_each_planted_change_and_a_run_repairs_it(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = checkout / "schemas" / "turn-result.schema.json"
    method = next((checkout / "schemas" / "protocol" / "methods").glob("*.schema.json"))
    page = checkout / "docs" / "protocol.md"
    lifecycle = checkout / "docs" / "lifecycle.md"
    originals = {path: path.read_text(encoding="utf-8") for path in (engine, method, page, lifecycle)}
    engine.write_text(originals[engine].replace('"type"', '"typ"', 1), encoding="utf-8")
    method.unlink()
    table = "<!-- method-table -->\n"
    page.write_text(originals[page].replace(table, f"{table}| `session.gone` |\n", 1), encoding="utf-8")
    lifecycle.write_text(originals[lifecycle] + "\nedited by hand\n", encoding="utf-8")
    orphan = checkout / "schemas" / "protocol" / "methods" / "session.gone.schema.json"
    orphan.write_text("{}\n", encoding="utf-8")

    assert main(["regen-schemas", "--check", "--root", str(checkout)]) == 1
    out = capsys.readouterr().out
    for path in (engine, method, page, lifecycle):
        assert f"stale    {path.relative_to(checkout).as_posix()}" in out
    assert "orphan   schemas/protocol/methods/session.gone.schema.json" in out
    assert "4 stale, 1 orphaned" in out
    assert orphan.is_file()  # --check writes nothing
    assert engine.read_text(encoding="utf-8") != originals[engine]

    assert main(["regen-schemas", "--root", str(checkout)]) == 0
    assert "4 written, 1 removed" in capsys.readouterr().out
    assert {path: path.read_text(encoding="utf-8") for path in originals} == originals
    assert not orphan.exists()
    assert main(["regen-schemas", "--check", "--root", str(checkout)]) == 0


def test_a_folder_that_is_not_a_checkout_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["regen-schemas", "--check", "--root", str(tmp_path)]) == 2
    assert "is not a checkout" in capsys.readouterr().err
