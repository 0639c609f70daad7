"""The YAML parse cache (``_data``): an entry is named by the text and the parser that read it, so a parser
upgrade never serves old parses; an entry that is no regular file of bounded size is no entry; a parse JSON
cannot hold as UTF-8 keeps nothing and leaves no temporary file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from relavium_conformance import _data


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_data, "corpus_json_path", lambda: None)
    return tmp_path / "cache" / "yaml"


def _doctored(cache: Path, case: Path) -> Path:
    assert _data.read_yaml(case) == {"title": "from the YAML"}
    (entry,) = cache.iterdir()
    doctored = json.loads(entry.read_text(encoding="utf-8"))
    doctored["data"]["title"] = "from the cache"
    entry.write_text(json.dumps(doctored), encoding="utf-8")
    assert _data.read_yaml(case)["title"] == "from the cache"  # a hit
    return entry


def test_another_parser_version_never_gets_the_old_parses(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = tmp_path / "case.yaml"
    case.write_text("title: from the YAML\n", encoding="utf-8")
    _doctored(cache, case)
    assert _data.parser_version().startswith("ruamel.yaml-")
    assert _data.parser_version() != "ruamel.yaml-unknown"  # found from the installed metadata
    monkeypatch.setattr(_data, "parser_version", lambda: "ruamel.yaml-99.0", raising=False)  # an upgrade
    assert _data.read_yaml(case)["title"] == "from the YAML"  # parsed afresh, not the old entry
    assert len(list(cache.iterdir())) == 2  # kept beside the other version's


def test_the_wheels_json_copy_is_used_only_by_the_parser_that_made_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", "0")
    case = tmp_path / "case.yaml"
    case.write_text("title: from the YAML\n", encoding="utf-8")
    corpus = _data.build_corpus_json(tmp_path)
    assert corpus["parser"] == _data.parser_version()
    corpus["files"]["case.yaml"]["data"]["title"] = "from the JSON copy"
    (tmp_path / _data.CORPUS_JSON).write_text(json.dumps(corpus), encoding="utf-8")
    monkeypatch.setattr(_data, "fixtures_dir", lambda: tmp_path)
    monkeypatch.setattr(_data, "_CORPUS_CACHE", {})
    assert _data.read_yaml(case)["title"] == "from the JSON copy"
    monkeypatch.setattr(_data, "_CORPUS_CACHE", {})
    monkeypatch.setattr(_data, "parser_version", lambda: "ruamel.yaml-99.0", raising=False)
    assert _data.read_yaml(case)["title"] == "from the YAML"


@pytest.mark.parametrize("kind", ["deep", "fifo", "dev-zero"])
def test_a_hostile_cache_entry_is_no_entry(cache: Path, tmp_path: Path, kind: str) -> None:
    case = tmp_path / "case.yaml"
    case.write_text("title: from the YAML\n", encoding="utf-8")
    entry = _doctored(cache, case)
    entry.unlink()
    if kind == "deep":
        entry.write_text("[" * 100_000, encoding="utf-8")
    elif kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")
    assert _data.read_yaml(case) == {"title": "from the YAML"}


def test_a_parse_no_utf_8_holds_keeps_nothing_and_no_temporary_file(cache: Path, tmp_path: Path) -> None:
    case = tmp_path / "case.yaml"
    case.write_text('title: "\\ud800"\n', encoding="utf-8")
    assert _data.read_yaml(case) == {"title": "\ud800"}
    assert not cache.exists() or list(cache.iterdir()) == []
