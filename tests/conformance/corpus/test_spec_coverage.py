"""spec-coverage: sentence splitting, fingerprints, matching against the catalogue, and the command itself.

Synthetic specs live in ``tests/fixtures_specs/``: ``base.md`` with its catalogue ``base-clauses.yaml``, and
four edits of it (one sentence reworded, one rule inserted, one rule deleted, two sections swapped).  The
real specification is checked too when ``../shared/spec/`` exists next to the checkout.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from relavium_conformance._cli import main as cli_main
from relavium_conformance._cli.coverage import EXIT_DRIFT, EXIT_OK, EXIT_UNREADABLE, render_table, run
from relavium_conformance._corpus.catalogue import CatalogueFile, Clause, load_catalogue
from relavium_conformance._corpus.coverage import (
    cited_clause_ids,
    coverage_report,
    fingerprint,
    normalise,
    parse_spec_file,
    parse_spec_markdown,
    parse_spec_typescript,
)
from relavium_conformance._errors import KitUsageError

ROOT = Path(__file__).resolve().parents[3]
SYNTHETIC = ROOT / "tests" / "fixtures_specs"
SHARED_SPEC = ROOT.parent / "shared" / "spec"
AS_SPEC = SHARED_SPEC / "agent-session-spec.md"
SS_SPEC = SHARED_SPEC / "session-store.d.ts"

needs_shared_spec = pytest.mark.skipif(
    not AS_SPEC.is_file(), reason="../shared/spec/ (the real specification) is not next to this checkout"
)


def _synthetic_clauses() -> tuple[Clause, ...]:
    data = YAML(typ="safe", pure=True).load((SYNTHETIC / "base-clauses.yaml").read_text(encoding="utf-8"))
    return CatalogueFile.model_validate(data).clauses


def _report(name: str) -> object:
    return coverage_report(parse_spec_file(SYNTHETIC / name), _synthetic_clauses(), spec_name=name)


# ------------------------------------------------------------------------------------------ normalising


def test_normalise_ignores_case_emphasis_code_marks_links_and_spacing() -> None:
    assert normalise("A  **Bold**\tclaim about `code` and [a link](https://x.test).") == (
        "a bold claim about code and a link."
    )


def test_fingerprint_is_sixteen_hex_digits_and_stable_under_formatting() -> None:
    plain = fingerprint("The cap is fifty.")
    assert len(plain) == 16
    assert int(plain, 16) >= 0
    assert fingerprint("The  *cap*  is `fifty`.") == plain
    assert fingerprint("The cap is fifty!") != plain


# ------------------------------------------------------------------------------------------ splitting


def test_markdown_sentences_skip_headings_code_fences_and_table_headers() -> None:
    texts = [s.text for s in parse_spec_file(SYNTHETIC / "base.md")]
    assert texts == [
        "A widget session is a short conversation.",
        "It has one owner.",
        "Sessions open *idle*.",
        "A send moves a session to busy; the reply returns it to idle.",
        "Create a session.",
        "Persist its row.",
        "End the session (terminal); no later send is accepted.",
        "a session runs at most ten turns, e.g. ten sends;",
        "a refused send makes no request.",
        "A limit breach reports the code `over_limit`.",
        "Nothing else is reported!",
    ]


def test_markdown_table_rows_are_sectioned_by_their_first_cell() -> None:
    sections = {s.text: s.section for s in parse_spec_file(SYNTHETIC / "base.md")}
    assert sections["Persist its row."] == "Lifecycle > open"
    assert sections["Sessions open *idle*."] == "Lifecycle"
    assert sections["a refused send makes no request."] == "Limits"


def test_markdown_pipe_inside_the_last_cell_stays_in_that_cell() -> None:
    text = "## Ops\n\n| Op | Meaning |\n| --- | --- |\n| `run` | Returns (ran | failed) always. Done. |\n"
    sentences = parse_spec_markdown(text)
    assert [s.text for s in sentences] == ["Returns (ran | failed) always.", "Done."]
    assert {s.section for s in sentences} == {"Ops > run"}


def test_markdown_split_keeps_a_bang_inside_a_sentence_and_splits_after_a_closing_bracket() -> None:
    text = "Callable when idle (a ! never races a turn). Next one.) Then lowercase. next sentence."
    assert [s.text for s in parse_spec_markdown(text)] == [
        "Callable when idle (a ! never races a turn).",
        "Next one.)",
        "Then lowercase.",
        "next sentence.",
    ]


def test_typescript_sentences_come_from_comments_sectioned_by_declaration() -> None:
    sentences = parse_spec_file(SYNTHETIC / "store.d.ts")
    found = [(s.section, s.text) for s in sentences]
    assert found == [
        ("module", "Synthetic declaration file for the kit's own tests."),
        ("Box", "A box keeps values."),
        ("Box", "It never loses one."),
        ("Box.put", "Put a value in."),
        ("Box.put", "Returns nothing."),
        ("Box.take", "Take the value back out."),
        ("Box.take", "Rules:"),
        ("Box.take", "an empty box answers undefined;"),
        ("Box.take", "taking twice answers the same value."),
        ("Box.size", "Count of values, best-effort."),
        ("isEmpty", "True when the box is empty."),
    ]


def test_typescript_code_outside_comments_is_not_a_sentence() -> None:
    assert parse_spec_typescript("export interface A {\n  b: string; // Note this. Also that.\n}\n") == []


# ------------------------------------------------------------------------------------------ matching


def test_the_base_spec_matches_its_catalogue_exactly() -> None:
    report = _report("base.md")
    assert report.clean
    assert (report.changed, report.untriaged, report.removed) == ([], [], [])
    assert report.clause_count == 10
    assert report.by_status == {"informative": 1, "testable": 8, "kit-defined": 1}


def test_an_edited_sentence_reports_its_clause_as_changed_and_nothing_untriaged() -> None:
    report = _report("edited.md")
    assert report.changed == ["AS-SESS-002"]
    assert report.untriaged == []
    assert report.removed == []
    assert report.changed_detail["AS-SESS-002"] == [
        "[Widget Session Specification] It has exactly one owner."
    ]
    assert not report.clean


def test_an_inserted_rule_is_untriaged() -> None:
    report = _report("inserted.md")
    assert report.untriaged == ["[Lifecycle > reopen] Reopen a closed session."]
    assert report.to_json()["untriaged_sentences"] == [
        {
            "section": "Lifecycle > reopen",
            "excerpt": "[Lifecycle > reopen] Reopen a closed session.",
            "fingerprint": fingerprint("Reopen a closed session."),
        }
    ]
    assert report.changed == []
    assert report.removed == []


def test_a_deleted_rule_reports_its_clause_as_removed() -> None:
    report = _report("deleted.md")
    assert report.removed == ["AS-CAP-002"]
    assert report.changed == []
    assert report.untriaged == []


def test_reordering_sections_changes_nothing() -> None:
    assert _report("reordered.md").clean


def _edited_base(tmp_path: Path, old: str, new: str) -> Path:
    text = (SYNTHETIC / "base.md").read_text(encoding="utf-8")
    assert text.count(old) == 1
    spec = tmp_path / "edited.md"
    spec.write_text(text.replace(old, new), encoding="utf-8")
    return spec


def test_a_clause_citing_two_sentences_is_changed_when_either_changes(tmp_path: Path) -> None:
    spec = _edited_base(tmp_path, "Nothing else is reported!", "Nothing else is ever reported!")
    report = coverage_report(parse_spec_file(spec), _synthetic_clauses())
    assert report.changed == ["AS-CAP-003"]
    assert (report.untriaged, report.removed) == ([], [])


def test_a_rewording_that_drops_the_anchor_is_found_by_shared_words_in_its_section(tmp_path: Path) -> None:
    spec = _edited_base(
        tmp_path, "a refused send makes no request.", "a send that is refused sends no request."
    )
    report = coverage_report(parse_spec_file(spec), _synthetic_clauses())
    assert report.changed == ["AS-CAP-002"]
    assert report.changed_detail["AS-CAP-002"] == ["[Limits] a send that is refused sends no request."]
    assert (report.untriaged, report.removed) == ([], [])


def test_a_sentence_rewritten_beyond_recognition_is_removed_and_its_successor_untriaged(
    tmp_path: Path,
) -> None:
    spec = _edited_base(tmp_path, "a refused send makes no request.", "quotas are enforced upstream.")
    report = coverage_report(parse_spec_file(spec), _synthetic_clauses())
    assert report.removed == ["AS-CAP-002"]
    assert report.untriaged == ["[Limits] quotas are enforced upstream."]
    assert report.changed == []


def test_untested_and_tested_split_the_testable_clauses_by_citation() -> None:
    report = coverage_report(
        parse_spec_file(SYNTHETIC / "base.md"), _synthetic_clauses(), cited=["AS-LIFE-001", "AS-SESS-001"]
    )
    assert report.tested == ["AS-LIFE-001"]  # an informative clause is never "tested"
    assert "AS-LIFE-001" not in report.untested
    assert len(report.tested) + len(report.untested) == report.by_status["testable"]


# ------------------------------------------------------------------------------------------ citations


def test_cited_ids_come_from_clauses_fields_and_clauses_marks(tmp_path: Path) -> None:
    (tmp_path / "case.yaml").write_text(
        "id: case-1\nsteps:\n  - clauses: [AS-LIFE-001, AS-CAP-002]\nnote: AS-EVT-001 is only mentioned\n",
        encoding="utf-8",
    )
    (tmp_path / "test_x.py").write_text(
        '@pytest.mark.clauses(\n    "AS-LIFE-003",\n    "SS-OWN-002",\n)\ndef test_x(): "AS-CAP-009"\n',
        encoding="utf-8",
    )
    skipped = tmp_path / "clauses"
    skipped.mkdir()
    (skipped / "cat.yaml").write_text("clauses: [AS-SESS-001]\n", encoding="utf-8")
    found = cited_clause_ids([tmp_path], skip=[skipped])
    assert found == {"AS-LIFE-001", "AS-CAP-002", "AS-LIFE-003", "SS-OWN-002"}


def test_cited_ids_read_every_document_of_a_multi_document_file(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text("clauses: [AS-LIFE-001]\n---\nclauses: [AS-LIFE-002]\n", "utf-8")
    assert cited_clause_ids([tmp_path]) == {"AS-LIFE-001", "AS-LIFE-002"}


def test_an_unreadable_case_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("clauses: [\n", encoding="utf-8")
    with pytest.raises(KitUsageError, match=r"broken\.yaml: not readable YAML"):
        cited_clause_ids([tmp_path])


# ------------------------------------------------------------------------------------------ the command


def test_table_lists_what_needs_attention() -> None:
    table = render_table(_report("edited.md"))  # type: ignore[arg-type]
    counts = dict(line.strip().rsplit(None, 1) for line in table.splitlines()[2:10])
    assert counts["changed"] == "1"
    assert counts["untriaged sentences"] == "0"
    assert "AS-SESS-002  [Widget Session Specification] It has exactly one owner." in table
    assert "Every sentence is triaged" not in table


def test_missing_spec_file_exits_unreadable(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run(tmp_path / "absent.md", as_json=True, strict=True, out=out, err=err) == EXIT_UNREADABLE
    assert out.getvalue() == ""
    assert "cannot read" in err.getvalue()


@needs_shared_spec
def test_real_spec_is_fully_triaged_and_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["spec-coverage", str(AS_SPEC), "--json", "--strict"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert {"clauses", "by_status", "untested", "changed", "untriaged", "removed"} <= set(report)
    assert report["clauses"] >= 120
    assert (report["changed"], report["untriaged"], report["removed"]) == ([], [], [])
    assert sum(report["by_status"].values()) == report["clauses"]


@needs_shared_spec
def test_real_store_contract_is_fully_triaged_and_unchanged() -> None:
    out = io.StringIO()
    assert run(SS_SPEC, as_json=True, strict=True, out=out, err=io.StringIO()) == EXIT_OK
    report = json.loads(out.getvalue())
    assert report["clauses"] == sum(1 for c in load_catalogue().clauses if c.id.startswith("SS-"))
    assert (report["changed"], report["untriaged"], report["removed"]) == ([], [], [])


@needs_shared_spec
def test_a_reworded_sentence_of_the_real_spec_is_changed_and_strict_fails(tmp_path: Path) -> None:
    copy = tmp_path / "agent-session-spec.md"
    shutil.copy(AS_SPEC, copy)
    text = copy.read_text(encoding="utf-8")
    assert text.count("Retry overflow is final.") == 1
    copy.write_text(
        text.replace("Retry overflow is final.", "A retry overflow is always final."), encoding="utf-8"
    )
    target = [
        c.id
        for c in load_catalogue().clauses
        if any(r.anchor == "retry overflow is final." for r in c.sentences)
    ]
    new_fingerprint = fingerprint("A retry overflow is always final.")
    assert len(target) == 1

    out = io.StringIO()
    assert run(copy, as_json=True, strict=False, out=out, err=io.StringIO()) == EXIT_OK
    report = json.loads(out.getvalue())
    assert report["changed"] == target
    assert report["changed_sentences"] == {
        target[0]: [
            {
                "section": "Classified context-window failures",
                "excerpt": "[Classified context-window failures] A retry overflow is always final.",
                "fingerprint": new_fingerprint,
            }
        ]
    }
    assert (report["untriaged"], report["removed"]) == ([], [])
    assert run(copy, as_json=True, strict=True, out=io.StringIO(), err=io.StringIO()) == EXIT_DRIFT


@needs_shared_spec
def test_every_catalogue_anchor_lies_in_the_sentence_its_fingerprint_names() -> None:
    sentences = {
        "AS": parse_spec_file(AS_SPEC),
        "SS": parse_spec_file(SS_SPEC),
    }
    problems = []
    for clause in load_catalogue().clauses:
        by_fp = {s.fingerprint: s for s in sentences[clause.id[:2]]}
        for ref in clause.sentences:
            sentence = by_fp.get(ref.fingerprint)
            if sentence is None or ref.anchor not in sentence.normalised:
                problems.append(f"{clause.id}: {ref.anchor}")
            elif sentence.section != clause.section and len(clause.sentences) == 1:
                problems.append(f"{clause.id}: section {clause.section!r} is not {sentence.section!r}")
    assert problems == []
