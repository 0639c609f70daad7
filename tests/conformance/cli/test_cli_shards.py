"""``run --shard K/N`` splits a selection over N CI jobs; ``report`` merges the shards' results into the
one run a single job reports, after checking that they cover the selection exactly once."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from relavium_conformance._cli import main

SELECT = ["--select", "commands/*", "--select", "budget/*"]


def _listed(capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    assert main(["run", "--list", *SELECT, *extra]) == 0
    return [line.split()[0] for line in capsys.readouterr().out.splitlines()]


def test_shards_split_the_selection_deterministically(capsys: pytest.CaptureFixture[str]) -> None:
    whole = _listed(capsys)
    parts = [_listed(capsys, "--shard", f"{k}/3") for k in (1, 2, 3)]
    assert sorted(case for part in parts for case in part) == sorted(whole)  # each case once
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    ordered = sorted(whole)
    assert parts[1] == [case for case in whole if ordered.index(case) % 3 == 1]  # round-robin by sorted id
    assert parts == [_listed(capsys, "--shard", f"{k}/3") for k in (1, 2, 3)]  # and the same every time


def test_report_merges_the_shards_into_the_run_one_job_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = [tmp_path / f"shard-{k}.json" for k in (1, 2, 3)]
    for k, path in enumerate(shards, start=1):
        assert main(["run", *SELECT, "--shard", f"{k}/3", "--json", str(path)]) == 0
    whole = tmp_path / "whole.json"
    assert main(["run", *SELECT, "--json", str(whole)]) == 0
    out = {name: tmp_path / "merged" / name for name in ("r.json", "r.xml", "r.md", "r.html")}
    outputs = ["--json", str(out["r.json"]), "--junit", str(out["r.xml"])]
    outputs += ["--markdown", str(out["r.md"]), "--html", str(out["r.html"])]
    code = main(["report", *map(str, shards), *outputs])
    assert code == 0, capsys.readouterr().err
    merged = json.loads(out["r.json"].read_text(encoding="utf-8"))
    single = json.loads(whole.read_text(encoding="utf-8"))
    assert merged["summary"] == single["summary"]
    assert sorted(c["id"] for c in merged["cases"]) == sorted(c["id"] for c in single["cases"])
    assert [(c["id"], c["status"]) for c in merged["clauses"]] == [
        (c["id"], c["status"]) for c in single["clauses"]
    ]
    assert merged["context"]["shard"] is None
    assert merged["context"]["selection"] == single["context"]["selection"]
    assert int(ET.parse(out["r.xml"]).getroot().get("tests", "0")) == single["summary"]["total"]
    assert f"of {single['summary']['total']} cases" in out["r.md"].read_text(encoding="utf-8")
    assert out["r.html"].read_text(encoding="utf-8").count('class="card implementation"') == 1
    capsys.readouterr()
    # a shard missing, a shard given twice, a shard of another selection: refused, naming it
    wrong = tmp_path / "other.json"
    assert main(["run", "--select", "commands/*", "--shard", "2/3", "--json", str(wrong)]) == 0
    capsys.readouterr()
    for given, says in (
        ([shards[0], shards[2]], "shard 2/3 missing"),
        ([shards[0], shards[1], shards[1], shards[2]], "shard 2/3 given twice"),
        ([shards[0], wrong, shards[2]], "shard 2/3 missing"),
    ):
        assert main(["report", *map(str, given), "--json", str(tmp_path / "x.json")]) == 2
        assert says in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("shard", ["0/3", "4/3", "2", "a/b"])
def test_a_malformed_shard_is_a_usage_error(shard: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--list", "--shard", shard]) == 2
    assert "give INDEX/COUNT with 1 <= INDEX <= COUNT" in capsys.readouterr().err


def test_a_shard_with_no_case_and_the_store_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--list", "--select", "commands/idle-after-command", "--shard", "2/2"]) == 4
    assert "shard 2/2 holds no case of the 1 selected" in capsys.readouterr().err
    assert main(["run", "--profile", "session-store", "--shard", "1/2"]) == 2
    assert "does not take --shard" in capsys.readouterr().err
