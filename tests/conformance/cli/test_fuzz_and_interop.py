"""``fuzz`` finds and shrinks a bug and writes a case that keeps failing it; ``interop`` runs two
implementations against each other's rows: the reference passes against itself, a private row dialect
fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relavium_conformance._cli import main
from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.discovery import load_transcripts_from
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.interop import interop

PRIVATE_DIALECT = "python:relavium_conformance._selftest.interop_dialect:private_row_dialect"


def test_fuzz_finds_shrinks_and_writes_a_case_that_fails_the_broken_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases, report = tmp_path / "cases", tmp_path / "fuzz.json"
    options = ["--seed", "1", "--examples", "100", "--write", str(cases), "--json", str(report)]
    # the lifecycle area (every area mixed, the chain area may shrink the same bug to its own shape)
    code = main(["fuzz", "--adapter", "broken:no-hard-cap", "--area", "lifecycle", *options])
    out = capsys.readouterr().out
    assert code == 1, out
    [written] = load_transcripts_from(cases)  # a valid golden transcript, id matching its path
    assert written.id.startswith("generated/broken-no-hard-cap-")
    # shrunk: a cap of one turn and two sends is the whole story of this bug
    assert written.setup.deps == {"maxTurns": 1, "allowedCommands": ["echo"]}
    assert [step.op for step in written.steps] == ["start", "send", "send"]
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["summary"]["failed"] == 1
    assert document["cases"][-1]["id"] == written.id
    assert document["summary"]["passed"] == len(document["cases"]) - 1
    # the written case keeps failing the broken engine, and the reference passes it
    select = ["--cases", str(cases), "--select", "generated/*"]
    assert main(["run", "--adapter", "broken:no-hard-cap", *select]) == 1
    assert main(["run", "--adapter", "reference", *select]) == 0


def test_fuzz_finds_nothing_in_the_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fuzz", "--examples", "15", "--seed", "3", "--write", str(tmp_path / "c")])
    assert code == 0
    assert "no failure found" in capsys.readouterr().out
    assert not (tmp_path / "c").exists()


CORE_ONLY = """
from relavium_conformance import ReferenceImplementation


class CoreOnly(ReferenceImplementation):
    def hello_result(self):
        hello = super().hello_result()
        return hello.model_copy(update={"capabilities": ("core",)})
"""


def test_fuzz_without_a_needed_capability_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "core_only_port.py").write_text(CORE_ONLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["fuzz", "--adapter", "python:core_only_port:CoreOnly", "--examples", "3"])
    assert code == 4
    assert "needs undeclared capability" in capsys.readouterr().err


def test_fuzz_of_a_port_that_cannot_be_imported_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "--adapter", "python:no_such_port_here:make", "--examples", "3"]) == 2
    assert "cannot import" in capsys.readouterr().err


@pytest.mark.parametrize("second", ["reference", "reference-stdio"])
def test_interop_passes_the_reference_against_itself(second: str, tmp_path: Path) -> None:
    report = tmp_path / "interop.json"
    assert main(["interop", "--adapter", "reference", "--adapter", second, "--json", str(report)]) == 0
    document = json.loads(report.read_text(encoding="utf-8"))
    assert [(c["id"], c["status"]) for c in document["cases"]] == [
        ("interop/a-to-b", "passed"),
        ("interop/b-to-a", "passed"),
    ]


def test_interop_fails_rows_another_implementation_cannot_resume() -> None:
    run = interop(resolve_adapter(PRIVATE_DIALECT), resolve_adapter("reference"))
    by_id = {case.id: case for case in run.cases}
    # the reference resumes the dialect's rows: its next request and its export carry the private prefix
    writer_first = by_id["interop/a-to-b"]
    assert writer_first.status is CaseStatus.FAILED
    assert any("v2|" in json.dumps(d.actual) for d in writer_first.differences)
    # the dialect resumes the reference's rows fine, but the rows it commits are not the reference's
    reader_first = by_id["interop/b-to-a"]
    assert reader_first.status is CaseStatus.FAILED
    assert [d.path for d in reader_first.differences] == ["third turn: committed rows[1].content[0].text"]


def test_interop_needs_two_adapters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["interop", "--adapter", "reference"]) == 2
    assert "exactly two --adapter" in capsys.readouterr().err


def test_strategies_without_hypothesis_says_which_extra_to_install() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "try:\n    import relavium_conformance.strategies\n"
        "except ModuleNotFoundError as exc:\n    print(exc.name, '|', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("hypothesis | ")
    assert "pip install 'relavium-conformance[strategies]'" in out


@pytest.mark.slow
def test_fuzz_area_finds_a_boundary_break_the_corpus_misses_and_writes_a_replayable_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from relavium_conformance._cli.fuzz import AGENT_SESSION_AREAS
    from relavium_conformance._corpus.generated import AREAS

    assert tuple(AREAS) == AGENT_SESSION_AREAS
    cases = tmp_path / "cases"
    options = ["--area", "history", "--seed", "0", "--examples", "100", "--write", str(cases)]
    assert main(["fuzz", "--adapter", "broken:trim-counts-its-marker", *options]) == 1
    [written] = load_transcripts_from(cases)
    assert "AS-LIFE-039" in written.clauses
    assert [step.op for step in written.steps].count("trimHistory") >= 2  # a trim after a trim, shrunk
    capsys.readouterr()
    select = ["--cases", str(cases), "--select", "generated/*"]
    assert main(["run", "--adapter", "broken:trim-counts-its-marker", *select]) == 1
    assert main(["run", "--adapter", "reference", *select]) == 0


LIFECYCLE_ONLY = """
from relavium_conformance import ReferenceImplementation


class LifecycleOnly(ReferenceImplementation):
    def hello_result(self):
        hello = super().hello_result()
        kept = ("core", "persistence", "resume", "user-commands", "compaction")
        return hello.model_copy(update={"capabilities": kept})
"""


def test_fuzz_skips_the_areas_a_port_does_not_declare_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lifecycle_only_port.py").write_text(LIFECYCLE_ONLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    options = ["--examples", "30", "--seed", "2", "--write", str(tmp_path / "c")]
    assert main(["fuzz", "--adapter", "python:lifecycle_only_port:LifecycleOnly", *options]) == 0
    captured = capsys.readouterr()
    assert "generated cases were skipped" in captured.err
    assert "no failure found" in captured.out
