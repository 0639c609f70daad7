"""The selftest's breaks are registered once, where they are defined, in the module of their area.

* every break lives in ``_selftest/breaks/<area>.py`` for the area of its first clause, and every broken
  store in ``_selftest/stores/<area>.py`` (the area from the clause id through ``CLAUSE_AREAS``);
* a registered name is spelt once in the sources (its decorator) and is unique over both registries;
* every clause id a break cites is in the catalogue;
* no module of the kit or the engine has a name ending in a digit, and ``_selftest/`` keeps at most
  eight top-level modules.

Each check is a function of its inputs, run once on the real tree and once on a planted violation, so
it is known to fail.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest

from relavium_conformance._corpus.catalogue import clause_ids
from relavium_conformance._errors import KitError
from relavium_conformance._selftest import base, breaks, stores
from relavium_conformance._selftest.stores import registry as store_registry

ROOT = Path(__file__).resolve().parents[3]
SELFTEST = ROOT / "conformance" / "_selftest"
MAX_TOP_LEVEL_MODULES = 8


def misplaced(
    where: Mapping[str, str],
    clauses: Mapping[str, Sequence[str]],
    area_module: Callable[[str], str],
    package: str,
) -> list[str]:
    """Names whose definition is not in ``package.<area of the first clause>``."""
    out = []
    for name, cited in clauses.items():
        try:
            expected = f"{package}.{area_module(cited[0])}"
        except KeyError:
            out.append(f"{name}: no area for {cited[0]}")
            continue
        if where.get(name) != expected:
            out.append(f"{name}: defined in {where.get(name)}, its area is {expected}")
    return out


def modules_ending_in_a_digit(roots: Iterable[Path]) -> list[str]:
    return sorted(
        str(p.relative_to(ROOT)) for root in roots for p in root.rglob("*.py") if p.stem[-1:].isdigit()
    )


def top_level_modules(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py"))


def repeated(names: Iterable[str]) -> list[str]:
    return sorted(name for name, count in Counter(names).items() if count > 1)


def unknown_clauses(clauses: Mapping[str, Sequence[str]], known: AbstractSet[str]) -> list[str]:
    return sorted(f"{name}: {c}" for name, cited in clauses.items() for c in cited if c not in known)


def string_constants(folder: Path) -> Counter[str]:
    """How often each string constant occurs in the sources under ``folder``."""
    found: Counter[str] = Counter()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found[node.value] += 1
    return found


def _break_clauses() -> dict[str, tuple[str, ...]]:
    return {b.name: b.clauses for b in breaks.BROKEN_IMPLEMENTATIONS}


def _store_clauses() -> dict[str, tuple[str, ...]]:
    return {b.name: b.clauses for b in stores.BROKEN_STORES}


# --------------------------------------------------------------------------------------- the real tree


def test_every_break_lives_in_the_module_of_its_first_clauses_area() -> None:
    assert len(breaks.BROKEN_IMPLEMENTATIONS) >= 288
    package = "relavium_conformance._selftest.breaks"
    assert misplaced(base.where_defined(), _break_clauses(), breaks.area_module, package) == []


def test_every_broken_store_lives_in_the_module_of_its_first_clauses_area() -> None:
    assert len(stores.BROKEN_STORES) >= 57
    package = "relavium_conformance._selftest.stores"
    assert misplaced(store_registry.where_defined(), _store_clauses(), stores.area_module, package) == []


def test_every_area_module_is_a_module_of_the_package() -> None:
    for table, folder in (
        ({row[3] for row in breaks.CLAUSE_AREAS}, SELFTEST / "breaks"),
        (set(stores.CLAUSE_AREAS.values()), SELFTEST / "stores"),
    ):
        assert {(folder / f"{m}.py").is_file() for m in table} == {True}


def test_names_are_unique_and_spelt_once_in_the_sources() -> None:
    names = [*_break_clauses(), *_store_clauses()]
    assert len(names) == len(breaks.BROKEN_IMPLEMENTATIONS) + len(stores.BROKEN_STORES)
    assert repeated(names) == []
    constants = string_constants(SELFTEST)
    assert {name: constants[name] for name in names if constants[name] != 1} == {}


def test_every_cited_clause_is_in_the_catalogue() -> None:
    known = clause_ids()
    assert unknown_clauses(_break_clauses(), known) == []
    assert unknown_clauses(_store_clauses(), known) == []


def test_no_module_name_ends_in_a_digit() -> None:
    assert modules_ending_in_a_digit([ROOT / "conformance", ROOT / "reference"]) == []


def test_selftest_keeps_few_top_level_modules() -> None:
    modules = top_level_modules(SELFTEST)
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


# ------------------------------------------------------------------------------ planted violations


def test_the_checks_report_planted_violations(tmp_path: Path) -> None:
    where = {"a": "pkg.lifecycle", "b": "pkg.lifecycle", "c": "pkg.export"}
    cited = {"a": ("AS-LIFE-001",), "b": ("AS-EXP-001", "AS-LIFE-002"), "c": ("AS-TEST-001",)}
    found = misplaced(where, cited, breaks.area_module, "pkg")
    assert found == [
        "b: defined in pkg.lifecycle, its area is pkg.export",
        "c: no area for AS-TEST-001",
    ]
    assert repeated(["x", "y", "x"]) == ["x"]
    assert unknown_clauses({"a": ("AS-LIFE-001", "AS-TEST-999")}, clause_ids()) == ["a: AS-TEST-999"]
    for name in ("__init__.py", "kept.py", "broken_wire2.py"):
        (tmp_path / name).write_text('"""x"""\nNAME = "twice"\nOTHER = "twice"\n', encoding="utf-8")
    assert top_level_modules(tmp_path) == ["__init__.py", "broken_wire2.py", "kept.py"]
    assert string_constants(tmp_path)["twice"] == 6


def test_the_digit_check_reports_a_planted_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted = tmp_path / "room"
    planted.mkdir()
    (planted / "rules2.py").write_text("", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert modules_ending_in_a_digit([planted]) == ["room/rules2.py"]


def test_a_name_registered_twice_is_refused() -> None:
    with pytest.raises(KitError, match="registered twice"):
        base.break_of(name="no-hard-cap", summary="again", clauses=("AS-CAP-004",))(object)
    again = store_registry.store_break_of(name="forget-deletes", summary="again", clauses=("SS-LIFE-012",))
    with pytest.raises(KitError, match="registered twice"):
        again(object)
