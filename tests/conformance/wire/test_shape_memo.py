"""The lasting memo of shape verdicts: a hit gives the verdict judged before, by the same judge only; a
corrupt, foreign or unwritable memo means judging afresh, with the same verdict."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._wire import model, shape_memo

SHAPE = "session-message"
VALUE: dict[str, Any] = {"role": "nobody", "parts": 3}


def _fresh(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """A new process, as far as the memos are concerned."""
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", str(cache))
    monkeypatch.setattr(model, "_SHAPE_MEMO", {})
    shape_memo.forget()


def _judged_now(value: Any) -> str | None:
    error = next(iter(model.shape_validator(SHAPE).iter_errors(value)), None)
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "(top)"
    return f"{where}: breaks the {SHAPE} schema ({error.validator})"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    _fresh(monkeypatch, folder)
    yield folder
    shape_memo.forget()


def test_a_verdict_outlives_the_process_and_is_the_one_judged(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = model.shape_problem(SHAPE, VALUE)
    assert first is not None
    assert first == _judged_now(VALUE)
    shape_memo._save()
    stored = json.loads((cache / "shape-verdicts.json").read_text(encoding="utf-8"))
    assert list(stored["verdicts"].values()) == [first]
    _fresh(monkeypatch, cache)
    monkeypatch.setattr(model, "shape_validator", lambda name: pytest.fail("judged again"))
    assert model.shape_problem(SHAPE, VALUE) == first  # recalled, not judged


def test_the_memo_file_is_what_is_recalled_and_only_for_the_same_question(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model.shape_problem(SHAPE, VALUE)
    shape_memo._save()
    path = cache / "shape-verdicts.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["verdicts"] = dict.fromkeys(stored["verdicts"], "from the memo")
    path.write_text(json.dumps(stored), encoding="utf-8")
    _fresh(monkeypatch, cache)
    assert model.shape_problem(SHAPE, VALUE) == "from the memo"  # a hit really skips the judge
    other = {**VALUE, "role": "somebody"}
    assert model.shape_problem(SHAPE, other) == _judged_now(other)  # another value, another question


def test_another_judge_never_reads_the_old_verdicts(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model.shape_problem(SHAPE, VALUE)
    shape_memo._save()
    path = cache / "shape-verdicts.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["verdicts"] = dict.fromkeys(stored["verdicts"], "stale")
    path.write_text(json.dumps(stored), encoding="utf-8")
    _fresh(monkeypatch, cache)
    monkeypatch.setattr(shape_memo, "_judge_fingerprint", lambda: "a schema or the judge changed")
    assert model.shape_problem(SHAPE, VALUE) == _judged_now(VALUE)


@pytest.mark.parametrize("content", ["{not json", "[]", '{"fingerprint": 1, "verdicts": {"a": 2}}'])
def test_a_corrupt_memo_means_judging_afresh(
    cache: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    cache.mkdir()
    (cache / "shape-verdicts.json").write_text(content, encoding="utf-8")
    _fresh(monkeypatch, cache)
    assert model.shape_problem(SHAPE, VALUE) == _judged_now(VALUE)
    shape_memo._save()  # and the corrupt file is replaced by a good one
    assert json.loads((cache / "shape-verdicts.json").read_text(encoding="utf-8"))["verdicts"]


@pytest.mark.parametrize("kind", ["deep", "fifo", "dev-zero", "link-to-good"])
def test_a_hostile_memo_file_means_judging_afresh(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """What sits where the memo belongs may be anything: no wait on a FIFO, no endless read of a device,
    no crash on JSON nested past the parser's depth, and a link is not followed (it may point anywhere)."""
    model.shape_problem(SHAPE, VALUE)
    shape_memo._save()
    memo = cache / "shape-verdicts.json"
    good = tmp_path / "good.json"
    lie = memo.read_text(encoding="utf-8").replace("breaks the", "LIED: breaks the")
    good.write_text(lie, encoding="utf-8")
    memo.unlink()
    if kind == "deep":
        memo.write_text("[" * 100_000, encoding="utf-8")
    elif kind == "fifo":
        os.mkfifo(memo)
    elif kind == "dev-zero":
        memo.symlink_to("/dev/zero")
    else:
        memo.symlink_to(good)
    _fresh(monkeypatch, cache)
    assert model.shape_problem(SHAPE, VALUE) == _judged_now(VALUE)


def test_a_failed_memo_write_leaves_no_temporary_file(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model.shape_problem(SHAPE, VALUE)

    def refuse(*_args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    shape_memo._save()
    assert sorted(path.name for path in cache.iterdir()) == []


def test_an_unwritable_memo_is_silently_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    _fresh(monkeypatch, blocker / "cache")  # its folder cannot be made: a file is in the way
    assert model.shape_problem(SHAPE, VALUE) == _judged_now(VALUE)
    shape_memo._save()
    assert not (blocker / "cache").exists()
    shape_memo.forget()


def test_the_memo_is_off_with_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", "0")
    assert shape_memo.memo_path() is None


def test_the_whole_corpus_loads_the_same_from_remembered_verdicts(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relavium_conformance._corpus.discovery import load_transcripts
    from relavium_conformance._corpus.vectors import load_vector_cases

    cold = (load_transcripts(), load_vector_cases())
    shape_memo._save()
    _fresh(monkeypatch, cache)
    monkeypatch.setattr(model, "shape_validator", lambda name: pytest.fail(f"{name} judged again"))
    assert (load_transcripts(), load_vector_cases()) == cold
