"""The workflow id of an exported session: the language-neutral vectors, then properties."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from relavium_conformance import fixtures_dir
from relavium_reference import InvalidInputError
from relavium_reference.export import workflow_id

KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*\Z")
VECTOR_DIR = fixtures_dir() / "vectors" / "workflow-id"
VECTOR_KEYS = {"name", "title", "session_id", "expected", "expected_error", "why"}


def _load_vectors() -> list[tuple[str, dict[str, Any]]]:
    loader = YAML(typ="safe", pure=True)
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(VECTOR_DIR.glob("*.yaml")):
        entries = loader.load(path.read_text(encoding="utf-8"))
        assert isinstance(entries, list), f"{path.name}: a vector file holds a list"
        found.extend((f"{path.stem}/{entry['name']}", entry) for entry in entries)
    return found


VECTORS = _load_vectors()


def test_vectors_are_found_and_well_formed() -> None:
    assert len(VECTORS) >= 40, "the workflow-id vectors are missing"
    names = [name for name, _ in VECTORS]
    assert len(names) == len(set(names)), "vector names repeat"
    for name, vector in VECTORS:
        assert set(vector) <= VECTOR_KEYS, name
        assert ("expected" in vector) != ("expected_error" in vector), name
        assert vector["title"] is None or isinstance(vector["title"], str), name
        assert isinstance(vector["session_id"], str), name


def test_vectors_cover_what_the_issue_requires() -> None:
    titles = [v["title"] for _, v in VECTORS if v["title"]]
    expected = [v.get("expected", "") for _, v in VECTORS]
    assert any("\u0131" in t for t in titles)
    assert any("\u00df" in t for t in titles)
    assert any(unicodedata.combining(ch) for t in titles for ch in unicodedata.normalize("NFKD", t))
    assert any(any(ord(ch) > 0x2FFF for ch in t) for t in titles)  # non-Latin scripts
    assert any(len(e) == 128 for e in expected)
    assert any(e.startswith("exported-session-id-") for e in expected)
    assert any(
        e.startswith("exported-session-") and not e.startswith("exported-session-id-") for e in expected
    )


@pytest.mark.clauses("AS-EXP-032", "AS-EXP-033", "AS-EXP-034", "AS-EXP-035", "AS-EXP-036", "AS-EXP-037")
@pytest.mark.parametrize(("name", "vector"), VECTORS, ids=[name for name, _ in VECTORS])
def test_workflow_id_vector(name: str, vector: dict[str, Any]) -> None:
    if "expected_error" in vector:
        assert vector["expected_error"] == "invalid_input"
        with pytest.raises(InvalidInputError):
            workflow_id(vector["title"], vector["session_id"])
    else:
        assert workflow_id(vector["title"], vector["session_id"]) == vector["expected"]


def test_empty_session_id_names_the_field_not_the_value() -> None:
    with pytest.raises(InvalidInputError) as caught:
        workflow_id("!!!", "")
    assert caught.value.location == "session_id"


@pytest.mark.clauses("AS-EXP-032", "AS-EXP-034", "AS-EXP-038")
@given(title=st.none() | st.text(), session_id=st.text(min_size=1))
def test_id_is_always_kebab_and_at_most_128(title: str | None, session_id: str) -> None:
    result = workflow_id(title, session_id)
    assert KEBAB.match(result)
    assert len(result) <= 128


@pytest.mark.clauses("AS-EXP-032")
@given(title=st.none() | st.text(), session_id=st.text(min_size=1))
def test_id_is_deterministic(title: str | None, session_id: str) -> None:
    assert workflow_id(title, session_id) == workflow_id(title, session_id)


@pytest.mark.clauses("AS-EXP-036")
@given(
    session_id=st.from_regex(r"[a-z0-9]{1,20}(-[a-z0-9]{1,20}){0,4}", fullmatch=True),
    title=st.none() | st.text(alphabet=" !?-_.\u65e5\u00a0\u200d", max_size=10),
)
def test_legal_short_session_id_survives_unchanged(title: str | None, session_id: str) -> None:
    assert workflow_id(title, session_id) == "exported-session-" + session_id


@pytest.mark.clauses("AS-EXP-037")
@given(session_id=st.text(min_size=1).filter(lambda s: not KEBAB.match(s) or len(s) > 111))
def test_other_session_ids_are_hex_of_their_first_24_utf16_units(session_id: str) -> None:
    result = workflow_id(None, session_id)
    assert result.startswith("exported-session-id-")
    digits = result.removeprefix("exported-session-id-")
    units = [int(digits[i : i + 4], 16) for i in range(0, len(digits), 4)]
    encoded = session_id.encode("utf-16-be", "surrogatepass")
    expected = [int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)][:24]
    assert units == expected
    assert len(result) <= 116


@pytest.mark.clauses("AS-EXP-033", "AS-EXP-034")
@given(words=st.lists(st.from_regex(r"[a-z0-9]{1,12}", fullmatch=True), min_size=1, max_size=30))
def test_ascii_words_join_with_single_dashes(words: list[str]) -> None:
    slug = "-".join(words)
    expected = slug[:128].rstrip("-")
    assert workflow_id("  ".join(w.upper() for w in words) + " !", "s") == expected
