"""The corpus index (``run --list`` without building the case models): it lists what the full load
lists; a changed fixture, kit file or installed library is a new key; a corrupt, foreign or unwritable
index means the full load; a corpus that fails to load is reported every time and never kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from relavium_conformance import _data
from relavium_conformance._corpus import discovery as discovery_module
from relavium_conformance._corpus import index
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.index import CaseEntry, corpus_index, corpus_key, entry_of, select_cases
from relavium_conformance._errors import KitUsageError

ROOT = Path(__file__).resolve().parents[3]
CLI = Path(sys.executable).with_name("relavium-conformance")
TRANSCRIPT = "lifecycle/abort-and-cancel-together-approval-pending"


def _expected() -> tuple[CaseEntry, ...]:
    return tuple(entry_of(case) for case in load_cases())


@pytest.fixture(scope="module")
def parsed_corpus() -> Path | None:
    """The suite's YAML parse cache folder, holding every fixture's parse (``None`` with the cache off).
    Each entry is named by the SHA-256 of the text it parses, so it answers only for that very text."""
    suite = os.environ.get("RELAVIUM_CONFORMANCE_YAML_CACHE", "")
    if suite in ("", "0", "1"):
        return None
    discovery_module.read_corpus()  # fills it (about 0.1 s when the suite has already)
    return Path(suite, "yaml")


def _warmed(folder: Path, parsed: Path | None) -> Path:
    """``folder`` with the suite's parses copied in: a full load there is the index's business, not the
    parser's.  (The xdist workers share the suite's folder: another may be writing an entry, a .tmp
    file renamed into place, so only finished entries are copied.)"""
    if parsed is not None and parsed.is_dir():
        shutil.copytree(parsed, folder / "yaml", ignore=shutil.ignore_patterns("*.tmp"))
    return folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", str(folder))
    return folder


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the full loads; each one answers the (process-cached) real corpus."""
    calls: list[int] = []
    corpus = load_cases()  # (before the stand-in: load_cases itself calls read_corpus)

    def counted() -> tuple[object, ...]:
        calls.append(1)
        return corpus

    monkeypatch.setattr(index, "_full_load", counted)  # (a stand-in read_corpus would bar the index)
    return calls


def _kept_under(path: Path, key: str) -> tuple[CaseEntry, ...] | None:
    """The entries the index file keeps under ``key`` (``None``: no file, another key, malformed)."""
    stored = index._read_stored(path)
    return None if stored is None or stored["key"] != key else index._entries(stored)


def _forbid_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "_full_load", lambda: pytest.fail("the full load ran"))


def test_the_index_lists_what_the_full_load_lists(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _expected()
    assert {entry.suite for entry in expected} > {None}  # transcripts and vector cases alike
    assert corpus_index() == expected  # cold: the full load, then kept
    assert (cache / "corpus-index.json").is_file()
    _forbid_loading(monkeypatch)
    assert corpus_index() == expected  # warm: from the file alone


@pytest.mark.parametrize(
    "pattern",
    [
        "lifecycle/*",
        "AS-LIFE-0*",
        "AS-CAP",
        "vectors",
        "vectors/export",
        "*-over-http",
        TRANSCRIPT,
        "nothing",
    ],
)
def test_entries_select_exactly_the_cases_the_case_objects_select(pattern: str) -> None:
    everything = load_cases()
    by_case = [case.id for case in select_cases(everything, [pattern])]
    by_entry = [entry.id for entry in select_cases(_expected(), [pattern])]
    assert by_entry == by_case
    assert (by_case != []) == (pattern != "nothing")


def test_a_warm_listing_is_what_the_file_says(
    cache: Path, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    corpus_index()
    path = cache / "corpus-index.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["cases"][0]["title"] = "planted in the index"
    path.write_text(json.dumps(stored), encoding="utf-8")
    assert corpus_index()[0].title == "planted in the index"  # a hit really skips the load
    assert loads == [1]


def _tree(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    root = tmp_path / name
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def test_the_key_follows_every_byte_it_rests_on(tmp_path: Path) -> None:
    fixtures = _tree(
        tmp_path, "fixtures", {"transcripts/a/b.yaml": "id: a/b\n", "transcripts/a/b.snapshot.json": "{}"}
    )
    code = _tree(tmp_path, "code", {"pkg/mod.py": "X = 1\n", "pkg/__pycache__/mod.pyc": "bytecode"})
    schemas = _tree(tmp_path, "schemas", {"s.schema.json": "{}"})

    def key(environment: tuple[str, ...] = ("pydantic-2.dist-info",)) -> str:
        return corpus_key(fixtures, [code], schemas, environment)

    first = key()
    assert key() == first  # the same bytes, the same key
    changes: list[Callable[[], object]] = [
        lambda: (fixtures / "transcripts/a/b.yaml").write_text("id: a/c\n", encoding="utf-8"),
        lambda: (fixtures / "transcripts/a/new.yaml").write_text("", encoding="utf-8"),
        lambda: (fixtures / "transcripts/a/new.yaml").rename(fixtures / "transcripts/a/renamed.yaml"),
        lambda: (code / "pkg/mod.py").write_text("X = 2\n", encoding="utf-8"),
        lambda: (schemas / "s.schema.json").write_text('{"type": "object"}', encoding="utf-8"),
    ]
    seen = {first}
    for change in changes:
        change()
        assert key() not in seen
        seen.add(key())
    assert key(("pydantic-3.dist-info",)) not in seen  # another library version
    now = key()
    (fixtures / "transcripts/a/b.snapshot.json").write_text('{"x": 1}', encoding="utf-8")  # a run reads it
    (code / "pkg/__pycache__/mod.pyc").write_text("other bytecode", encoding="utf-8")
    (code / "pkg/notes.txt").write_text("not code", encoding="utf-8")
    assert key() == now


def test_the_key_reads_through_linked_folders_and_survives_a_link_loop(tmp_path: Path) -> None:
    target = _tree(tmp_path, "elsewhere", {"unicode.yaml": "- name: a\n"})
    fixtures = _tree(tmp_path, "fixtures", {"vectors/suites.yaml": "{}\n"})
    (fixtures / "vectors" / "workflow-id").symlink_to(target, target_is_directory=True)
    (fixtures / "vectors" / "loop").symlink_to(fixtures, target_is_directory=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    first = corpus_key(fixtures, [], empty)
    (target / "unicode.yaml").write_text("- name: b\n", encoding="utf-8")
    assert corpus_key(fixtures, [], empty) != first  # a file the loader reads through the link


def test_a_changed_kit_or_library_is_never_answered_from_the_old_index(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    code = _tree(tmp_path, "kit", {"judge.py": "STRICT = True\n"})
    roots = index._code_roots()
    monkeypatch.setattr(index, "_code_roots", lambda: [*roots, code])
    corpus_index()
    corpus_index()
    assert loads == [1]
    (code / "judge.py").write_text("STRICT = False\n", encoding="utf-8")
    assert corpus_index() == _expected()
    assert loads == [1, 1]
    monkeypatch.setattr(index, "_installed", lambda: ["pydantic-99.0.dist-info"])
    corpus_index()
    assert loads == [1, 1, 1]
    corpus_index()
    assert loads == [1, 1, 1]  # the new key's index, kept by the load before


@pytest.mark.parametrize(
    "target",
    [
        "relavium_conformance._corpus.vectors.vectors_dir",
        "relavium_conformance._corpus.cases.transcripts_dir",
        "relavium_conformance._corpus.discovery.transcripts_dir",
    ],
)
def test_a_loader_reading_outside_the_keyed_fixtures_neither_uses_nor_keeps_an_index(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loads: list[int], target: str
) -> None:
    corpus_index()
    path = cache / "corpus-index.json"
    kept = path.read_bytes()
    monkeypatch.setattr(target, lambda: tmp_path / "elsewhere")  # what a test's stand-in folder does
    corpus_index()
    corpus_index()
    assert loads == [1, 1, 1]
    assert path.read_bytes() == kept


@pytest.fixture
def fixtures_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path, parsed_corpus: Path | None
) -> Path:
    """A copy of the kit's fixtures (snapshots left out) that the kit reads instead of its own; the test's
    cache folder is warmed (every full load of the copy would otherwise parse all of it afresh)."""
    _warmed(cache, parsed_corpus)
    copy = tmp_path / "fixtures"
    shutil.copytree(_data.fixtures_dir(), copy, ignore=shutil.ignore_patterns("*.snapshot.json"))
    real = _data.data_root

    def root(kind: str) -> Path:
        return copy if kind == "fixtures" else real(kind)  # type: ignore[arg-type]

    monkeypatch.setattr(_data, "data_root", root)
    return copy


def test_an_edited_fixture_is_listed_as_edited_and_a_broken_one_is_reported_every_time(
    cache: Path, fixtures_copy: Path
) -> None:
    expected = _expected()
    assert corpus_index() == expected
    path = cache / "corpus-index.json"
    kept = path.read_bytes()
    case_file = fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml"
    text = case_file.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    case_file.write_text(text.replace(title, "title: an edited title"), encoding="utf-8")
    edited = corpus_index()
    assert [e.title for e in edited if e.id == TRANSCRIPT] == ["an edited title"]
    assert [e for e in edited if e.id != TRANSCRIPT] == [e for e in expected if e.id != TRANSCRIPT]
    assert path.read_bytes() != kept  # kept afresh, under the new key
    kept = path.read_bytes()

    case_file.write_text(text + "no_such_key: 1\n", encoding="utf-8")
    with pytest.raises(KitUsageError) as first:
        corpus_index()
    with pytest.raises(KitUsageError) as again:
        corpus_index()  # the failure was not kept: the full load reports it again
    assert str(first.value) == str(again.value)
    assert str(case_file) in str(first.value)
    assert "no_such_key" in str(first.value)
    with pytest.raises(KitUsageError) as full:
        discovery_module.read_corpus()
    assert str(full.value) == str(first.value)  # exactly the full load's error
    assert path.read_bytes() == kept  # nothing written for the broken corpus

    case_file.write_text(text, encoding="utf-8")  # put back: the first key again, answered afresh
    assert corpus_index() == expected


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00",
        b"[]",
        b'{"format": 2, "key": "KEY", "cases": []}',
        b'{"format": 1, "key": "KEY", "cases": []}',
        b'{"format": 1, "key": "KEY", "cases": [{"id": "x/y"}]}',
        b'{"format": 1, "key": "KEY", "cases": [{"id": 1, "title": "t", "area": "x", "clauses": [],'
        b' "capabilities": [], "suite": null}]}',
        b'{"format": 1, "key": "KEY", "cases": [{"id": "x/y", "title": "t", "area": "x", "clauses": "AS",'
        b' "capabilities": [], "suite": null}]}',
        b'{"format": 1, "key": "another key", "cases": [{"id": "x/y", "title": "t", "area": "x",'
        b' "clauses": [], "capabilities": [], "suite": null}]}',
    ],
)
def test_a_corrupt_or_foreign_index_means_the_full_load_and_is_replaced(
    cache: Path, loads: list[int], content: bytes
) -> None:
    key = index._current_key()
    assert key is not None
    cache.mkdir(parents=True)
    path = cache / "corpus-index.json"
    path.write_bytes(content.replace(b'"KEY"', json.dumps(key).encode()))
    assert corpus_index() == _expected()
    assert loads == [1]
    assert _kept_under(path, key) == _expected()  # replaced by a good one
    assert [p.name for p in cache.iterdir()] == ["corpus-index.json"]  # no temporary file left


def test_an_unwritable_place_or_the_cache_turned_off_means_no_index_and_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", str(blocker / "cache"))
    assert corpus_index() == _expected()
    assert corpus_index() == _expected()
    assert loads == [1, 1]
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", "0")
    assert index.index_path() is None
    assert corpus_index() == _expected()
    assert loads == [1, 1, 1]


def test_a_corpus_that_changes_while_it_loads_is_not_kept(
    cache: Path, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    keys = iter(["before the load", "after the load"])
    monkeypatch.setattr(index, "_current_key", lambda: next(keys))
    assert corpus_index() == _expected()
    assert not (cache / "corpus-index.json").exists()


@pytest.fixture(scope="module")
def cli_cache(tmp_path_factory: pytest.TempPathFactory, parsed_corpus: Path | None) -> Path:
    """A cache folder for the command line, its YAML parse cache warmed from the suite's when it has one."""
    return _warmed(tmp_path_factory.mktemp("cli-cache"), parsed_corpus)


def _without_signature(path: Path) -> dict[str, object]:
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored.pop("signature")
    return dict(stored)


def _listing(args: list[str], cache_folder: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(CLI), "run", "--list", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "RELAVIUM_CONFORMANCE_YAML_CACHE": str(cache_folder)},
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        [
            "--select",
            "lifecycle/*",
            "--select",
            "vectors/export",
            "--select",
            "lifecycl",
            "--exclude",
            "AS-LIFE-016",
        ],
        ["--select", "nothing-at-all"],
    ],
)
def test_run_list_prints_the_same_bytes_from_the_index_as_from_the_full_load(
    cli_cache: Path, args: list[str]
) -> None:
    path = cli_cache / "corpus-index.json"
    path.unlink(missing_ok=True)
    full = _listing(args, cli_cache)  # no index: the full load, which writes one
    kept = _without_signature(path)
    from_index = _listing(args, cli_cache)
    assert from_index == full
    assert _without_signature(path) == kept  # read, not written afresh (a signature may join it: files
    # changed within the last 2 s when the first listing walked them keep none until they settle)
    if "nothing-at-all" in args or "lifecycl" in args:  # a pattern matching no case is refused (exit 2)
        assert full[0] == 2
        assert "matches no case" in full[2]
    else:
        assert full[0] == 0
        assert full[1].count("\n") > 10


# --- hardening (review of the index): odd names and files, hostile index files, links, stand-ins ---------


def test_a_file_name_that_is_not_utf_8_is_keyed_not_a_crash(
    cache: Path, fixtures_copy: Path, loads: list[int]
) -> None:
    before = index._current_key()
    folder = os.fsencode(fixtures_copy / "transcripts")
    with open(os.path.join(folder, b"notes-\xff.txt"), "wb") as stray:  # the loader globs *.yaml only
        stray.write(b"a note")
    key = index._current_key()
    assert key is not None
    assert key != before
    assert corpus_index() == _expected()
    assert corpus_index() == _expected()
    assert loads == [1]  # kept and served under the key that names it
    empty = fixtures_copy.parent / "no-schemas"
    empty.mkdir()
    assert corpus_key(fixtures_copy, [], empty, ["\ud800 a line no UTF-8 holds"])  # never UnicodeError


def test_a_path_the_system_cannot_name_is_the_documented_oserror(tmp_path: Path) -> None:
    for odd in (tmp_path / "nul\0inside", tmp_path / "lone-\ud800"):
        with pytest.raises(OSError):
            corpus_key(odd, [], tmp_path)


@pytest.mark.parametrize("kind", ["deep", "fifo", "dev-zero", "too-large", "link-to-good"])
def test_a_hostile_index_file_means_the_full_load_never_a_crash_or_a_hang(
    cache: Path, loads: list[int], kind: str
) -> None:
    key = index._current_key()
    assert key is not None
    cache.mkdir(parents=True, exist_ok=True)  # (the loads fixture may have filled it)
    path = cache / "corpus-index.json"
    if kind == "deep":
        path.write_text("[" * 100_000, encoding="utf-8")  # beyond the JSON parser's nesting
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: reading it would wait for ever
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")  # endless bytes
    elif kind == "too-large":
        with path.open("wb") as out:
            out.truncate((16 << 20) + 1)  # (the limit, plus one)
    else:  # a good index, but reached through a link: not the index's own file
        good = cache / "elsewhere.json"
        corpus_index()
        path.rename(good)
        path.symlink_to(good)
        loads.clear()
    assert corpus_index() == _expected()
    assert loads == [1]
    assert path.is_file()
    assert not path.is_symlink()
    assert _kept_under(path, key) == _expected()
    loads.clear()
    assert corpus_index() == _expected()
    assert loads == []  # ...which the next call is answered from


@pytest.mark.parametrize("kind", ["fifo", "socket", "dangling-link"])
def test_a_fifo_socket_or_dangling_link_under_fixtures_is_keyed_by_name_never_opened(
    cache: Path, fixtures_copy: Path, loads: list[int], kind: str
) -> None:
    import socket

    before = index._current_key()
    stray = fixtures_copy / "provider-scripts" / "stray"
    if kind == "fifo":
        os.mkfifo(stray)  # opened for reading, it would block the key for ever
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(stray))
    else:
        stray.symlink_to(fixtures_copy / "nowhere")
    key = index._current_key()
    assert key is not None
    assert key != before
    assert corpus_index() == _expected()
    assert corpus_index() == _expected()
    assert loads == [1]
    stray.unlink()
    assert index._current_key() == before


def test_retargeting_a_link_to_a_folder_met_before_is_a_new_key(cache: Path, fixtures_copy: Path) -> None:
    suite = fixtures_copy / "vectors" / "reconstruct"
    shutil.copytree(suite, fixtures_copy / "aaa" / "A")
    shutil.copytree(suite, fixtures_copy / "aaa" / "B")
    (fixtures_copy / "aaa" / "B" / "interrupted-exchange.yaml").unlink()
    shutil.rmtree(suite)
    suite.symlink_to(Path("..", "aaa", "A"), target_is_directory=True)
    first = corpus_index()
    assert first == tuple(entry_of(case) for case in discovery_module.read_corpus())
    suite.unlink()
    suite.symlink_to(Path("..", "aaa", "B"), target_is_directory=True)  # the same folders, relinked
    full = tuple(entry_of(case) for case in discovery_module.read_corpus())
    assert len(full) == len(first) - 1
    assert corpus_index() == full


def test_a_stand_in_loader_function_neither_uses_nor_keeps_an_index(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = discovery_module.load_vector_cases()
    monkeypatch.setattr(discovery_module, "load_vector_cases", lambda: real[1:])  # a test's stand-in
    path = cache / "corpus-index.json"
    listed = corpus_index()
    assert [e.id for e in listed] == sorted(e.id for e in _expected() if e.id != real[0].id)
    assert not path.exists()
    monkeypatch.undo()
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", str(cache))
    assert corpus_index() == _expected()  # the kit's own loader again: the index is kept
    assert path.is_file()


def test_a_stand_in_folder_inside_the_fixtures_neither_uses_nor_keeps_an_index(
    cache: Path, fixtures_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = fixtures_copy / "zz-copy"
    shutil.copytree(fixtures_copy / "transcripts", stand_in)
    (stand_in / f"{TRANSCRIPT}.yaml").unlink()
    monkeypatch.setattr(discovery_module, "transcripts_dir", lambda: stand_in)
    listed = corpus_index()
    assert TRANSCRIPT not in [e.id for e in listed]
    assert not (cache / "corpus-index.json").exists()


# --- the key over the real roots: each thing a listing rests on is in the key _current_key computes -------


@pytest.mark.parametrize(
    "relative",
    [
        f"transcripts/{TRANSCRIPT}.yaml",
        "vectors/reconstruct/interrupted-exchange.yaml",
        "vectors/suites.yaml",
        "clauses/agent-session.yaml",
        "provider-scripts/three-turns.yaml",
    ],
)
def test_the_real_key_follows_every_fixture_folder(fixtures_copy: Path, relative: str) -> None:
    before = index._current_key()
    target = fixtures_copy / relative
    assert target.is_file()
    target.write_bytes(target.read_bytes() + b"\n# edited\n")
    assert index._current_key() not in (None, before)


@pytest.mark.parametrize("package", ["kit", "engine"])
def test_the_real_key_follows_the_kit_and_the_engine_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str
) -> None:
    import relavium_reference

    real = Path(index.__file__).resolve().parent.parent if package == "kit" else None
    real = real or Path(relavium_reference.__file__).resolve().parent
    copy = tmp_path / package
    shutil.copytree(real, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if package == "kit":  # the code roots are found from the modules' own files
        monkeypatch.setattr(index, "__file__", str(copy / "_corpus" / "index.py"))
    else:
        monkeypatch.setattr(relavium_reference, "__file__", str(copy / "__init__.py"))
    before = index._current_key()
    assert before is not None
    module = copy / ("_data.py" if package == "kit" else "__init__.py")
    module.write_bytes(module.read_bytes() + b"\n# edited\n")
    assert index._current_key() not in (None, before)


def test_the_real_key_follows_the_interpreter_and_the_installed_libraries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jsonschema  # noqa: F401  (their folders are found whether imported or not)
    import pydantic

    installed = index._installed()
    assert f"pydantic-{pydantic.VERSION}.dist-info" in installed
    for name in ("pydantic_core", "jsonschema", "referencing", "ruamel_yaml"):
        assert any(n.replace(".", "_").startswith(f"{name}-") for n in installed), name
    before = index._current_key()
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    after_version = index._current_key()
    assert after_version not in (None, before)
    monkeypatch.setattr(sys.implementation, "cache_tag", "other-311")
    assert index._current_key() not in (None, before, after_version)


def test_the_module_says_which_libraries_the_key_covers() -> None:
    doc = " ".join((index.__doc__ or "").split())
    assert "every ``*.dist-info``" not in doc
    for name in index._JUDGES:
        assert name in doc, name


def test_a_title_no_utf_8_holds_is_the_usual_usage_error_and_leaves_no_temporary_file(
    cache: Path, fixtures_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case_file = fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml"
    text = case_file.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    case_file.write_text(text.replace(title, 'title: "\\ud800"'), encoding="utf-8")
    with pytest.raises(KitUsageError) as cached:
        corpus_index()
    assert "string_unicode" in str(cached.value)
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]
    assert not (cache / "corpus-index.json").exists()
    monkeypatch.setenv("RELAVIUM_CONFORMANCE_YAML_CACHE", "0")
    with pytest.raises(KitUsageError) as uncached:
        corpus_index()
    assert str(uncached.value) == str(cached.value)


# --- the signature: a settled corpus listed without reading its files -----------------------------------


def _fs_clock_at(offset_ns: int) -> Callable[[Path, frozenset[int]], int]:
    """A stand-in file-system clock ``offset_ns`` from the local one, on every device."""
    return lambda _folder, _devices: time.time_ns() + offset_ns


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled, however recently it changed: the file system's clock reads far ahead
    (the margin itself, 2 s, is real)."""
    monkeypatch.setattr(index, "_fs_clock", _fs_clock_at(10**18))


def _count_keys(monkeypatch: pytest.MonkeyPatch, after: Callable[[], object] | None = None) -> list[int]:
    calls: list[int] = []
    real = index.corpus_key

    def counted(*args: object, **kwargs: object) -> str:
        calls.append(1)
        key = real(*args, **kwargs)  # type: ignore[arg-type]
        if after is not None and len(calls) == 1:
            after()
        return key

    monkeypatch.setattr(index, "corpus_key", counted)
    return calls


def _kept_signature(cache: Path) -> object:
    return json.loads((cache / "corpus-index.json").read_text(encoding="utf-8"))["signature"]


def test_a_settled_corpus_is_listed_from_its_signature_without_reading_a_file(
    cache: Path, settled: None, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    assert corpus_index() == _expected()
    stored = json.loads((cache / "corpus-index.json").read_text(encoding="utf-8"))
    assert type(stored["signature"]) is list
    assert len(stored["signature"]) > len(stored["cases"])
    monkeypatch.setattr(index, "corpus_key", lambda *a, **k: pytest.fail("the files were read for the key"))
    assert corpus_index() == _expected()
    assert loads == [1]


def test_files_changed_within_the_margin_keep_no_signature_until_they_settle(
    cache: Path, fixtures_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "_fs_clock", _fs_clock_at(-(10**18)))  # every file changed just now
    keys = _count_keys(monkeypatch)
    assert corpus_index() == _expected()
    assert _kept_signature(cache) is None
    before = len(keys)
    assert corpus_index() == _expected()
    assert len(keys) > before  # answered by the key
    assert _kept_signature(cache) is None
    monkeypatch.setattr(index, "_fs_clock", _fs_clock_at(10**18))  # and now all have settled
    assert corpus_index() == _expected()  # answered by the key, and the signature kept beside it
    assert type(_kept_signature(cache)) is list
    before = len(keys)
    assert corpus_index() == _expected()
    assert len(keys) == before


def test_a_local_clock_ahead_of_the_file_system_cannot_make_a_fresh_file_look_settled(
    cache: Path, fixtures_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The margin is measured by the file system's clock (a file made in the cache folder), the local
    clock only timing the walk: an hour of skew (a file server behind) keeps no signature for a file
    changed a minute ahead of the file system's now."""
    case_file = fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml"
    ahead = time.time_ns() + 60 * 10**9
    os.utime(case_file, ns=(ahead, ahead))

    class _Ahead:
        @staticmethod
        def time_ns() -> int:
            return time.time_ns() + 3600 * 10**9

    monkeypatch.setattr(index, "time", _Ahead)
    assert corpus_index() == _expected()
    assert _kept_signature(cache) is None


def test_the_file_system_clock_is_read_from_the_cache_folder(tmp_path: Path) -> None:
    device = tmp_path.stat().st_dev
    now = index._fs_clock(tmp_path / "cache", frozenset({device}))
    assert now is not None
    assert abs(now - time.time_ns()) < 3600 * 10**9  # (the same machine's clock, give or take)
    assert list((tmp_path / "cache").iterdir()) == []  # the probe file is gone
    assert index._fs_clock(tmp_path / "cache", frozenset({device, device + 1})) is None  # another device
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    assert index._fs_clock(tmp_path / "a-file" / "cache", frozenset({device})) is None  # no folder there


def _same_size_title(case_file: Path) -> tuple[str, str]:
    text = case_file.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    edited = "title: " + "x" * (len(title) - len("title: "))
    return text, text.replace(title, edited)


@pytest.mark.skipif(sys.platform == "win32", reason="no signature is kept on Windows")
@pytest.mark.parametrize("how", ["in place", "saved by rename"])
def test_an_edit_keeping_the_size_and_modification_time_is_still_seen(
    cache: Path, fixtures_copy: Path, settled: None, how: str
) -> None:
    assert corpus_index() == _expected()
    case_file = fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml"
    before = case_file.stat()
    text, edited = _same_size_title(case_file)
    assert len(edited.encode()) == len(text.encode())
    if how == "saved by rename":  # a new inode (the old one still held by the copy below while it is made)
        (fixtures_copy / "edited.tmp").write_text(edited, encoding="utf-8")
        os.utime(fixtures_copy / "edited.tmp", ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(fixtures_copy / "edited.tmp", case_file)
    else:  # the same inode: only the change time can tell (rewritten until the clock has ticked)
        for _ in range(100_000):
            case_file.write_text(edited, encoding="utf-8")
            os.utime(case_file, ns=(before.st_atime_ns, before.st_mtime_ns))
            if case_file.stat().st_ctime_ns != before.st_ctime_ns:
                break
        if case_file.stat().st_ctime_ns == before.st_ctime_ns:
            pytest.skip("this file system's change time did not move on a write")
    after = case_file.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert (after.st_ino == before.st_ino) == (how == "in place")
    title = edited.split("title: ", 1)[1].split("\n", 1)[0]
    assert [e.title for e in corpus_index() if e.id == TRANSCRIPT] == [title]


def test_a_touched_file_is_answered_by_its_key_and_its_new_signature_kept(
    cache: Path, fixtures_copy: Path, settled: None, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    assert corpus_index() == _expected()
    signature = _kept_signature(cache)
    os.utime(fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml")  # a new time, the same bytes
    keys = _count_keys(monkeypatch)
    assert corpus_index() == _expected()
    assert _kept_signature(cache) not in (None, signature)
    assert corpus_index() == _expected()
    assert keys == [1]
    assert loads == [1]


def test_a_file_touched_while_the_key_is_computed_keeps_no_signature(
    cache: Path, fixtures_copy: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second walk: what the first walk saw is kept only if nothing moved while the key was read."""
    case_file = fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml"
    _count_keys(monkeypatch, after=lambda: os.utime(case_file, ns=(1, 1)))
    assert corpus_index() == _expected()
    assert _kept_signature(cache) is None


@pytest.mark.parametrize("field", ["st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"])
def test_the_signature_follows_each_field_of_a_file_s_status(
    fixtures_copy: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    seen = index._signature()
    assert seen is not None
    target = str(fixtures_copy / "transcripts" / f"{TRANSCRIPT}.yaml")
    real = os.stat

    def one_field_moved(path: object, *args: object, **kwargs: object) -> object:
        status = real(path, *args, **kwargs)  # type: ignore[call-overload]
        if os.fspath(path) != target:  # type: ignore[call-overload]
            return status
        names = ("st_mode", "st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")
        moved = {name: getattr(status, name) for name in names}
        moved[field] += 1
        return types.SimpleNamespace(**moved)

    monkeypatch.setattr(os, "stat", one_field_moved)
    again = index._signature()
    assert again is not None
    assert again.lines != seen.lines


def test_the_signature_follows_the_roots_and_what_is_not_a_regular_file(
    tmp_path: Path, fixtures_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = index._signature()
    assert seen is not None
    link = tmp_path / "the-same-fixtures"
    link.symlink_to(fixtures_copy, target_is_directory=True)  # the same files by another path
    real = _data.data_root
    monkeypatch.setattr(_data, "data_root", lambda kind: link if kind == "fixtures" else real(kind))
    through_link = index._signature()
    assert through_link is not None
    assert through_link.lines != seen.lines
    monkeypatch.setattr(_data, "data_root", lambda kind: fixtures_copy if kind == "fixtures" else real(kind))
    roots = index._code_roots()
    code_link = tmp_path / "the-same-engine"
    code_link.symlink_to(roots[1], target_is_directory=True)
    monkeypatch.setattr(index, "_code_roots", lambda: [roots[0], code_link])
    engine_through_link = index._signature()
    assert engine_through_link is not None
    assert engine_through_link.lines != seen.lines
    monkeypatch.setattr(index, "_code_roots", lambda: roots)
    os.mkfifo(fixtures_copy / "transcripts" / "a-fifo.yaml")
    with_fifo = index._signature()
    assert with_fifo is not None
    assert with_fifo.lines != seen.lines


def test_the_signature_follows_the_interpreter_and_a_stand_in_loader(
    cache: Path, settled: None, monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    assert corpus_index() == _expected()
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert corpus_index() == _expected()
    assert loads == [1, 1]
    monkeypatch.setattr(discovery_module, "load_vector_cases", lambda: ())  # what a test's stand-in does
    assert index._signature() is None  # (a stand-in bars the index: no signature is compared)
