"""Every fixture reads the same in every YAML reader: the kit's (ruamel, pure, YAML 1.2) and PyYAML (YAML 1.1,
the reader most other tools use), and nothing in it trips the stricter readers of other languages.

YAML 1.1 readers take ``yes``/``no``/``on``/``off`` for booleans, and a plain scalar ending in ``?`` inside a
flow mapping for a key; some JavaScript readers refuse a flow collection closed in column 0.  Quote what is
ambiguous; this test guards every fixture, including the ones added later.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from relavium_conformance._data import build_corpus_json, fixtures_dir, parse_yaml

FIXTURES = sorted(fixtures_dir().rglob("*.yaml"))


def _name(path: Path) -> str:
    return path.relative_to(fixtures_dir()).as_posix()


@pytest.mark.parametrize("path", FIXTURES, ids=_name)
def test_ruamel_and_pyyaml_read_the_same_data(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert parse_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize("path", FIXTURES, ids=_name)
def test_no_flow_collection_closes_in_column_zero(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [n + 1 for n, line in enumerate(lines) if re.match(r"[\]}]", line)] == []


def test_every_fixture_is_json_data() -> None:
    """No timestamps, no non-string keys, no binary: what the JSON copy of the corpus can carry exactly."""
    corpus = build_corpus_json(fixtures_dir())
    assert len(corpus["files"]) == len(FIXTURES)
    assert json.loads(json.dumps(corpus, allow_nan=False)) == corpus


def test_the_parity_check_bites() -> None:
    assert parse_yaml("a: yes") != yaml.safe_load("a: yes")
    assert parse_yaml("[{text: And now?}, 1]") == [{"text": "And now?"}, 1]
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load("[{text: And now?}, 1]")


def test_the_kit_reads_the_json_copy_when_it_matches_and_the_yaml_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relavium_conformance import _data

    case = tmp_path / "transcripts" / "area" / "name.yaml"
    case.parent.mkdir(parents=True)
    case.write_text("id: area/name\ntitle: from the YAML\n", encoding="utf-8")
    corpus = build_corpus_json(tmp_path)
    corpus["files"]["transcripts/area/name.yaml"]["data"]["title"] = "from the JSON copy"
    (tmp_path / _data.CORPUS_JSON).write_text(json.dumps(corpus), encoding="utf-8")
    monkeypatch.setattr(_data, "fixtures_dir", lambda: tmp_path)
    monkeypatch.setattr(_data, "_CORPUS_CACHE", {})
    assert _data.read_yaml(case)["title"] == "from the JSON copy"  # the hash matched: no YAML parse
    case.write_text("id: area/name\ntitle: edited since the build\n", encoding="utf-8")
    assert _data.read_yaml(case)["title"] == "edited since the build"  # the YAML is the source


def test_every_fixture_reads_the_same_through_the_parse_cache() -> None:
    """The drift test of the checkout's JSON copies: whatever the kit reads (cached or parsed now) is what
    the YAML says, for every fixture."""
    from relavium_conformance._data import read_yaml

    for path in FIXTURES:
        assert read_yaml(path) == parse_yaml(path.read_text(encoding="utf-8")), _name(path)


def test_the_parse_cache_is_used_keyed_by_the_exact_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relavium_conformance import _data

    cache = tmp_path / "cache"
    monkeypatch.setattr(_data, "yaml_cache_dir", lambda: cache)
    monkeypatch.setattr(_data, "corpus_json_path", lambda: None)
    case = tmp_path / "case.yaml"
    case.write_text("title: from the YAML\n", encoding="utf-8")
    assert _data.read_yaml(case) == {"title": "from the YAML"}
    (entry,) = cache.iterdir()
    assert entry.name == f"{_data._cache_key(case.read_bytes())}.json"
    doctored = json.loads(entry.read_text(encoding="utf-8"))
    doctored["data"]["title"] = "from the cache"
    entry.write_text(json.dumps(doctored), encoding="utf-8")
    assert _data.read_yaml(case)["title"] == "from the cache"  # a hit: no parse
    case.write_text("title: edited\n", encoding="utf-8")
    assert _data.read_yaml(case)["title"] == "edited"  # new text, new key: never a stale answer
    odd = tmp_path / "odd.yaml"
    odd.write_text("1: integer key\nwhen: 2001-12-14\n", encoding="utf-8")
    assert _data.read_yaml(odd) == parse_yaml(odd.read_text(encoding="utf-8"))
    assert len(list(cache.iterdir())) == 2  # what JSON cannot carry exactly is never cached
    monkeypatch.undo()
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", "0")
    assert _data.yaml_cache_dir() is None


def test_the_parse_cache_can_be_pointed_at_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from relavium_conformance import _data

    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(_data, "corpus_json_path", lambda: None)
    assert _data.yaml_cache_dir() == tmp_path / "elsewhere" / "yaml"
    case = tmp_path / "case.yaml"
    case.write_text("title: kept elsewhere\n", encoding="utf-8")
    assert _data.read_yaml(case) == {"title": "kept elsewhere"}
    assert [p.name for p in (tmp_path / "elsewhere" / "yaml").iterdir()] == [
        f"{_data._cache_key(case.read_bytes())}.json"
    ]
