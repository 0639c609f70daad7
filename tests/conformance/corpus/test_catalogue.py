"""The clause catalogue: its data, schema and loader, the ids cited across the project, the marker check."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from relavium_conformance._corpus.catalogue import (
    AREAS,
    CAPABILITIES,
    STATUSES,
    Clause,
    area_of,
    catalogue_files,
    clause_ids,
    get,
    load_catalogue,
    load_catalogue_from,
    unknown_ids,
)
from relavium_conformance._data import fixtures_dir, schemas_dir
from relavium_conformance._errors import KitUsageError

ROOT = Path(__file__).resolve().parents[3]
SHARED_SPEC = ROOT.parent / "shared" / "spec"
_YAML = YAML(typ="safe", pure=True)
_CITED = re.compile(r"\b(?:AS|SS)-[A-Z]+-\d{3}\b")
#: Area reserved for made-up ids in the kit's own tests (``AS-TEST-001``): never in the catalogue.
FICTIONAL_AREA = "TEST"
#: Made-up ids other tests still use outside the reserved area, as (file, prefix, area-number; split so
#: that this file does not cite them).  Each entry must still occur (a stale entry fails the test): once a
#: file moves to ``AS-TEST-...`` or to real ids, drop its entries.
_KNOWN_FICTIONAL_PARTS: frozenset[tuple[str, str, str]] = frozenset()
KNOWN_FICTIONAL = frozenset((path, f"{prefix}-{rest}") for path, prefix, rest in _KNOWN_FICTIONAL_PARTS)


def _schema() -> dict[str, object]:
    schema: dict[str, object] = json.loads(
        (schemas_dir() / "clause-catalogue.schema.json").read_text(encoding="utf-8")
    )
    return schema


# ------------------------------------------------------------------------------------------ the data


def test_catalogue_covers_both_contracts_with_unique_well_formed_ids() -> None:
    catalogue = load_catalogue()
    ids = [c.id for c in catalogue.clauses]
    assert len(ids) == len(set(ids))
    assert sum(1 for i in ids if i.startswith("AS-")) >= 120
    assert sum(1 for i in ids if i.startswith("SS-")) >= 40
    assert {f.prefix for f in catalogue.files} == {"AS", "SS"}
    assert all(re.fullmatch(r"(AS|SS)-[A-Z]{2,6}-\d{3}", i) for i in ids)


def test_every_status_and_capability_is_used_only_from_the_vocabulary() -> None:
    clauses = load_catalogue().clauses
    assert {c.status for c in clauses} == set(STATUSES)
    assert {c.capability for c in clauses} <= set(CAPABILITIES)
    assert all(c.reason for c in clauses if c.status == "host-specific")
    assert all(c.kit_defined for c in clauses if c.status == "kit-defined")


def test_catalogue_files_validate_against_their_json_schema() -> None:
    schema = _schema()
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    files = catalogue_files()
    assert [p.name for p in files] == ["agent-session.yaml", "session-store.yaml"]
    for path in files:
        errors = [e.message for e in validator.iter_errors(_YAML.load(path.read_text(encoding="utf-8")))]
        assert errors == [], path.name


def test_schema_refuses_what_the_loader_refuses() -> None:
    validator = Draft202012Validator(_schema())
    clause = {
        "id": "AS-LIFE-001",
        "section": "Lifecycle",
        "summary": "A summary of the rule.",
        "sentences": [{"anchor": "some words", "fingerprint": "0123456789abcdef"}],
        "status": "host-specific",
        "capability": "core",
    }
    document = {"spec": "x.md", "prefix": "AS", "clauses": [clause]}
    assert not validator.is_valid(document)  # host-specific without a reason
    clause["reason"] = "why"
    assert validator.is_valid(document)
    clause["kit_defined"] = "KD-LIFE-1"
    assert not validator.is_valid(document)  # only kit-defined clauses name an entry


def test_retired_ids_are_a_json_list_of_ids_never_reused() -> None:
    path = fixtures_dir() / "clauses" / "retired.yaml"
    retired = json.loads(path.read_text(encoding="utf-8"))  # JSON is YAML: any language reads it
    assert isinstance(retired, list)
    assert Draft202012Validator(_schema()["$defs"]["retired"]).is_valid(retired)  # type: ignore[index]
    assert not set(retired) & clause_ids()


def test_ids_of_each_area_are_numbered_without_gaps_except_retired_ones() -> None:
    catalogue = load_catalogue()
    numbers: dict[str, set[int]] = {}
    for cid in [c.id for c in catalogue.clauses] + list(catalogue.retired):
        prefix, area, number = cid.split("-")
        numbers.setdefault(f"{prefix}-{area}", set()).add(int(number))
    gaps = {key: sorted(set(range(1, max(n) + 1)) - n) for key, n in numbers.items()}
    assert {key: gap for key, gap in gaps.items() if gap} == {}


def test_every_area_is_declared_and_used() -> None:
    used = {(c.id[:2], c.area) for c in load_catalogue().clauses}
    declared = {(prefix, area) for prefix, areas in AREAS.items() for area in areas}
    assert used == declared


def test_summaries_are_in_our_own_words(tmp_path: Path) -> None:
    if not SHARED_SPEC.is_dir():
        pytest.skip("../shared/spec/ (the real specification) is not next to this checkout")
    run = 12

    def words(text: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", text.lower())

    shingles: set[str] = set()
    for spec in (SHARED_SPEC / "agent-session-spec.md", SHARED_SPEC / "session-store.d.ts"):
        w = words(spec.read_text(encoding="utf-8"))
        shingles.update(" ".join(w[i : i + run]) for i in range(len(w) - run + 1))
    copied = []
    for path in catalogue_files():
        w = words(path.read_text(encoding="utf-8"))
        copied += [
            " ".join(w[i : i + run]) for i in range(len(w) - run + 1) if " ".join(w[i : i + run]) in shingles
        ]
    assert copied == []


# ------------------------------------------------------------------------------------------ the loader


def test_get_area_and_unknown_ids() -> None:
    clause = get("AS-LIFE-001")
    assert isinstance(clause, Clause)
    assert clause.area == "LIFE" == area_of("AS-LIFE-001")
    missing = "AS-LIFE-" + "999"
    with pytest.raises(KitUsageError, match="unknown clause id"):
        get(missing)
    with pytest.raises(KitUsageError, match="not a clause id"):
        area_of("LIFE-1")
    assert unknown_ids(["AS-LIFE-001", missing, missing]) == [missing]


def test_testable_clauses_can_be_selected_by_capability() -> None:
    catalogue = load_catalogue()
    by_capability = {cap: catalogue.testable(cap) for cap in CAPABILITIES}
    assert sum(len(found) for found in by_capability.values()) == len(catalogue.testable())
    assert all(c.capability == "compaction" for c in by_capability["compaction"])
    assert get("AS-LIFE-017") in by_capability["core"]
    assert get("AS-INTRO-001") not in catalogue.testable()  # informative


def _write_catalogue(root: Path, clauses: list[dict[str, object]], *, retired: str = "[]\n") -> Path:
    folder = root / "clauses"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.yaml").write_text(json.dumps({"spec": "a.md", "prefix": "AS", "clauses": clauses}), "utf-8")
    (folder / "retired.yaml").write_text(retired, encoding="utf-8")
    return root


def _clause(cid: str = "AS-LIFE-001", **changes: object) -> dict[str, object]:
    clause: dict[str, object] = {
        "id": cid,
        "section": "Lifecycle",
        "summary": "A summary of the rule.",
        "sentences": [{"anchor": "some words", "fingerprint": "0123456789abcdef"}],
        "status": "testable",
        "capability": "core",
    }
    clause.update(changes)
    return clause


def test_loader_reads_a_well_formed_catalogue(tmp_path: Path) -> None:
    catalogue = load_catalogue_from(_write_catalogue(tmp_path, [_clause(), _clause("AS-LIFE-002")]))
    assert [c.id for c in catalogue.clauses] == ["AS-LIFE-001", "AS-LIFE-002"]


@pytest.mark.parametrize(
    ("clauses", "retired", "message"),
    [
        ([_clause(), _clause()], "[]", "used twice"),
        ([_clause("AS-LIFE-1")], "[]", "string_pattern_mismatch"),
        ([_clause("AS-" + "NOPE-001")], "[]", "unknown area"),
        ([_clause("SS-LIFE-001")], "[]", "does not belong"),
        ([_clause(status="host-specific")], "[]", "says why"),
        ([_clause(status="kit-defined")], "[]", "names its kit_defined"),
        ([_clause(kit_defined="KD-LIFE-1")], "[]", "only a kit-defined clause"),
        ([_clause(capability="everything")], "[]", "literal_error"),
        ([_clause(summary="two\nlines here")], "[]", "one line"),
        ([_clause(summary=12345678)], "[]", "string_type"),
        ([_clause(sentences=[])], "[]", "too_short"),
        (
            [_clause(sentences=[{"anchor": "one two three four five six seven", "fingerprint": "0" * 16}])],
            "[]",
            "at most six words",
        ),
        (
            [_clause(sentences=[{"anchor": "some words", "fingerprint": "XYZ"}])],
            "[]",
            "string_pattern_mismatch",
        ),
        ([_clause(extra="field")], "[]", "extra_forbidden"),
        ([_clause()], '["AS-LIFE-001"]', "retired clause ids reused"),
        ([_clause()], '["bogus"]', "not a clause id"),
        ([_clause()], "{}", "must be a list"),
    ],
)
def test_loader_refuses_a_malformed_catalogue(
    tmp_path: Path, clauses: list[dict[str, object]], retired: str, message: str
) -> None:
    with pytest.raises(KitUsageError, match=message):
        load_catalogue_from(_write_catalogue(tmp_path, clauses, retired=retired))


def test_loader_refuses_unreadable_yaml(tmp_path: Path) -> None:
    root = _write_catalogue(tmp_path, [_clause()])
    (root / "clauses" / "a.yaml").write_text("clauses: [\n", encoding="utf-8")
    with pytest.raises(KitUsageError, match="not readable YAML"):
        load_catalogue_from(root)


# ------------------------------------------------------------------------------------------ citations


def _project_files() -> list[Path]:
    catalogue = (ROOT / "fixtures" / "clauses").resolve()
    synthetic = (ROOT / "tests" / "fixtures_specs").resolve()  # a made-up catalogue for the kit's own tests
    found = []
    for folder in ("tests", "fixtures", "docs", "reference", "conformance"):
        for path in sorted((ROOT / folder).rglob("*")):
            resolved = path.resolve()
            if not path.is_file() or path.suffix not in {".py", ".yaml", ".yml", ".json", ".md", ".txt"}:
                continue
            if resolved.is_relative_to(catalogue) or resolved.is_relative_to(synthetic):
                continue
            found.append(path)
    return found


def test_every_clause_id_cited_in_the_project_exists() -> None:
    known = clause_ids()
    unknown: set[tuple[str, str]] = set()
    for path in _project_files():
        for cited in _CITED.findall(path.read_text(encoding="utf-8", errors="replace")):
            if cited not in known and area_of(cited) != FICTIONAL_AREA:
                unknown.add((path.relative_to(ROOT).as_posix(), cited))
    assert sorted(unknown - KNOWN_FICTIONAL) == []
    assert sorted(KNOWN_FICTIONAL - unknown) == [], "stale KNOWN_FICTIONAL entries: remove them"


def test_the_fictional_area_is_never_a_catalogue_area(tmp_path: Path) -> None:
    assert all(FICTIONAL_AREA not in areas for areas in AREAS.values())
    with pytest.raises(KitUsageError, match="unknown area"):
        load_catalogue_from(_write_catalogue(tmp_path, [_clause(f"AS-{FICTIONAL_AREA}-001")]))


def _kit_defined_entries() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "kit-defined.md").read_text(encoding="utf-8")
    entries: dict[str, list[str]] = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        heading = block.split(":", 1)[0].strip()
        if not re.fullmatch(r"KD-[A-Z]+-\d+", heading):
            continue  # the format example
        assert heading not in entries, f"{heading} appears twice"
        line = re.search(r"^Clauses:(.*)$", block, flags=re.M)
        assert line, f"{heading} has no Clauses: line"
        entries[heading] = _CITED.findall(line.group(1))
    return entries


def test_every_kit_defined_clause_names_an_entry_that_lists_it() -> None:
    entries = _kit_defined_entries()
    problems = []
    for clause in load_catalogue().clauses:
        if clause.kit_defined is None:
            continue
        if clause.kit_defined not in entries:
            problems.append(f"{clause.id}: no entry {clause.kit_defined} in docs/kit-defined.md")
        elif clause.id not in entries[clause.kit_defined]:
            problems.append(
                f"add {clause.id} to the Clauses line of {clause.kit_defined} (docs/kit-defined.md)"
            )
    assert problems == []


# ------------------------------------------------------------------------------------------ the marker


def _run_pytest(tmp_path: Path, cited: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    clauses(*ids): cited clauses\naddopts = -p no:cacheprovider\n",
        encoding="utf-8",
    )
    (tmp_path / "test_cites.py").write_text(
        f"import pytest\n\n\n@pytest.mark.clauses({cited})\ndef test_it():\n    assert True\n",
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "test_cites.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_marker_citing_known_clauses_collects_and_runs(tmp_path: Path) -> None:
    result = _run_pytest(tmp_path, '"AS-LIFE-001", "SS-OWN-002"')
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_a_marker_citing_an_unknown_clause_fails_collection_with_its_id(tmp_path: Path) -> None:
    missing = "AS-LIFE-" + "998"
    result = _run_pytest(tmp_path, f'"AS-LIFE-001", "{missing}"')
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"test_cites.py::test_it: unknown clause id {missing}" in result.stdout + result.stderr
    assert "1 passed" not in result.stdout


def test_a_marker_citing_nothing_fails_collection(tmp_path: Path) -> None:
    result = _run_pytest(tmp_path, "")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "cites no clause id" in result.stdout + result.stderr
