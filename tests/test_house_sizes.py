"""The house's sizes, read with ``ast`` (nothing imported): modules and functions stay small.

* A module over :data:`MODULE_WARN` lines is reported (printed under ``-s`` and kept in
  :func:`module_report`), never a failure on its own; over :data:`MODULE_FAIL` lines it fails.  A pytest
  warning is not used for the first: the suite runs with ``filterwarnings=error``.
* A function (or method) over :data:`FUNCTION_FAIL` lines fails, its decorators and docstring included,
  unless :data:`ALLOWED_LONG` names it: an argparse table that reads best as one list of options may
  stay, at most :data:`ALLOWED_AT_MOST` of them, each with its reason.
* :data:`OWED` names long functions in rooms another change is splitting: each must still be long (a
  stale entry fails), so the list only shrinks.

The checkers are tested on a synthetic tree, so they are known to fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("conformance", "reference", "benchmarks")
MODULE_WARN, MODULE_FAIL, FUNCTION_FAIL = 700, 900, 80
ALLOWED_AT_MOST = 3
#: ``path::function`` -> why it may stay longer than FUNCTION_FAIL lines.
ALLOWED_LONG: dict[str, str] = {
    "conformance/_cli/run.py::register": "the run sub-command's argparse table: one option after another",
}
#: ``path::function`` -> who is splitting it (each entry must still be long: see the module's docstring).
OWED: dict[str, str] = {}


def _python_files(root: Path, folders: tuple[str, ...] = FOLDERS) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((root / folder).rglob("*.py"))


def module_lengths(root: Path, folders: tuple[str, ...] = FOLDERS) -> dict[str, int]:
    return {
        path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in _python_files(root, folders)
    }


def function_lengths(root: Path, folders: tuple[str, ...] = FOLDERS) -> dict[str, int]:
    """``path::name`` -> lines of every function over FUNCTION_FAIL (nested ones by their own name)."""
    out: dict[str, int] = {}
    for path in _python_files(root, folders):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - first + 1
                if length > FUNCTION_FAIL:
                    key = f"{path.relative_to(root).as_posix()}::{node.name}"
                    out[key] = max(length, out.get(key, 0))
    return out


def module_report(root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> tuple[list[str], list[str]]:
    """(the modules over MODULE_WARN lines, the modules over MODULE_FAIL lines), as ``path: n lines``."""
    lengths = module_lengths(root, folders)
    warn = [f"{p}: {n} lines" for p, n in sorted(lengths.items()) if MODULE_WARN < n <= MODULE_FAIL]
    fail = [f"{p}: {n} lines" for p, n in sorted(lengths.items()) if n > MODULE_FAIL]
    return warn, fail


def long_functions(
    root: Path = ROOT, folders: tuple[str, ...] = FOLDERS, allowed: dict[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """(the long functions neither allowed nor owed, the owed entries that are no longer long)."""
    found = function_lengths(root, folders)
    excused = {**(ALLOWED_LONG if allowed is None else allowed), **(OWED if allowed is None else {})}
    unexcused = [f"{name}: {n} lines" for name, n in sorted(found.items()) if name not in excused]
    stale = sorted(name for name in (OWED if allowed is None else {}) if name not in found)
    return unexcused, stale


def test_no_module_is_too_long() -> None:
    warn, fail = module_report()
    if warn:
        print(
            "modules over", MODULE_WARN, "lines (split them by meaning before they reach", MODULE_FAIL, "):"
        )
        print("\n".join(warn))
    assert not fail, "\n".join(fail)


def test_no_function_is_too_long() -> None:
    assert len(ALLOWED_LONG) <= ALLOWED_AT_MOST
    unexcused, stale = long_functions()
    assert not unexcused, "\n".join(unexcused)
    assert not stale, f"no longer long, remove from OWED: {stale}"


def test_the_size_checkers_find_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    package = tmp_path / "conformance"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n", encoding="utf-8")
    (package / "middling.py").write_text("x = 1\n" * 800, encoding="utf-8")
    (package / "long.py").write_text("x = 1\n" * 901, encoding="utf-8")
    body = "".join(f"    y{n} = {n}\n" for n in range(85))
    (package / "table.py").write_text(f"@decorated\ndef table():\n{body}\n\ndef short():\n    pass\n")
    (package / "work.py").write_text(
        f"class C:\n    async def run(self):\n{body.replace('    ', '        ')}"
    )
    warn, fail = module_report(tmp_path, ("conformance",))
    assert warn == ["conformance/middling.py: 800 lines"]
    assert fail == ["conformance/long.py: 901 lines"]
    unexcused, _stale = long_functions(
        tmp_path, ("conformance",), allowed={"conformance/table.py::table": "x"}
    )
    assert unexcused == ["conformance/work.py::run: 86 lines"]
    unexcused, _stale = long_functions(tmp_path, ("conformance",), allowed={})
    assert unexcused == ["conformance/table.py::table: 87 lines", "conformance/work.py::run: 86 lines"]
