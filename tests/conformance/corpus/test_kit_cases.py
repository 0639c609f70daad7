"""The golden-transcript format: discovery, strictness, clause citations, the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from relavium_conformance._corpus.cases import Case, load_case, transcript_schema, transcripts_dir
from relavium_conformance._corpus.catalogue import clause_ids
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import select_cases
from relavium_conformance._errors import KitUsageError
from relavium_conformance._wire.model import schema_registry
from relavium_reference._schemas import render

ROOT = Path(__file__).resolve().parents[3]


def test_the_corpus_is_found_and_every_case_cites_known_clauses() -> None:
    cases = load_cases()
    assert cases
    known = clause_ids()
    for case in cases:
        assert case.clauses
        assert set(case.clauses) <= known, (case.id, sorted(set(case.clauses) - known))


def test_every_case_file_validates_against_the_committed_schema() -> None:
    schema = json.loads((ROOT / "schemas" / "transcript.schema.json").read_text(encoding="utf-8"))
    validator = Draft202012Validator(schema, registry=schema_registry())  # chunks $ref stream-chunk
    for path in sorted(transcripts_dir().rglob("*.yaml")):
        validator.validate(YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8")))


def test_transcript_schema_matches_the_model() -> None:
    committed = (ROOT / "schemas" / "transcript.schema.json").read_text(encoding="utf-8")
    assert committed == render(transcript_schema())


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = "id: {id}\ntitle: t\nclauses: [AS-LIFE-004]\nsteps: [{{op: start}}]\n"


def test_loader_refuses_unknown_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("relavium_conformance._corpus.cases.transcripts_dir", lambda: tmp_path)
    path = _write(tmp_path, "a/b.yaml", MINIMAL.format(id="a/b") + "surprise: 1\n")
    with pytest.raises(KitUsageError, match="unknown field refused"):
        load_case(path)


def test_loader_refuses_an_id_that_does_not_match_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("relavium_conformance._corpus.cases.transcripts_dir", lambda: tmp_path)
    path = _write(tmp_path, "a/b.yaml", MINIMAL.format(id="a/c"))
    with pytest.raises(KitUsageError, match="must match its path"):
        load_case(path)


def test_loader_refuses_a_case_without_clauses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("relavium_conformance._corpus.cases.transcripts_dir", lambda: tmp_path)
    path = _write(tmp_path, "a/b.yaml", "id: a/b\ntitle: t\nclauses: []\nsteps: [{op: start}]\n")
    with pytest.raises(KitUsageError):
        load_case(path)


def test_finding_no_case_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("relavium_conformance._corpus.discovery.transcripts_dir", lambda: tmp_path)
    load_cases.cache_clear()
    try:
        with pytest.raises(KitUsageError, match="no golden transcripts"):
            load_cases()
    finally:
        load_cases.cache_clear()


def test_short_forms_are_accepted() -> None:
    case = Case.model_validate(
        {
            "id": "a/b",
            "title": "t",
            "clauses": ["AS-LIFE-004"],
            "provider": [[{"do": "abort"}, {"hold": True}]],
            "approvals": [True, {"approve": False, "do": "cancel"}],
            "tools": [{"text": "x", "isError": True}],
            "steps": [{"op": "start"}],
        }
    )
    assert case.tools[0].is_error is True


def _ordered_case(tools: list[object]) -> dict[str, object]:
    return {
        "id": "a/b",
        "title": "t",
        "clauses": ["AS-MSG-020"],
        "tools": tools,
        "steps": [{"op": "start"}],
    }


def test_an_answer_waiting_for_its_own_then_is_refused_at_load() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="waits for its own then"):
        Case.model_validate(_ordered_case([{"after": "x", "then": "x", "text": "t"}]))
    # another answer raising it, or the answer's own signal (raised on arrival), breaks the cycle
    Case.model_validate(
        _ordered_case([{"after": "x", "then": "x", "text": "t"}, {"signal": "x", "text": "u"}])
    )
    Case.model_validate(_ordered_case([{"signal": "x", "after": "x", "then": "x", "text": "t"}]))


def test_selection_by_id_area_clause_and_clause_area() -> None:
    cases = load_cases()
    first = cases[0]
    assert first in select_cases(cases, [first.id])
    assert first in select_cases(cases, [first.area + "/*"])
    assert first in select_cases(cases, [first.clauses[0]])
    assert first in select_cases(cases, [first.clauses[0].rsplit("-", 1)[0]])
    assert select_cases(cases, ["no-such-area/*"]) == ()


def test_every_kit_choice_a_case_rests_on_is_recorded() -> None:
    import re

    text = (ROOT / "docs" / "kit-defined.md").read_text(encoding="utf-8")
    recorded = set(re.findall(r"^## (KD-[A-Z]+-\d+):", text, re.M))
    named = {
        (case.id, kd)
        for case in load_cases()
        if isinstance(case, Case)
        for kd in (*case.kit_defined, *(kd for step in case.steps for kd in step.kit_defined))
    }
    assert {pair for pair in named if pair[1] not in recorded} == set()
    for generic in ("KD-EVT-2", "KD-EVT-4", "KD-EVT-6"):  # what the generic event checks cite
        assert generic in recorded
