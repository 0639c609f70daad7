"""The house's rules, read from the code's imports with ``ast`` (no dependency, nothing imported).

* Rooms import only downwards, in the order of :data:`KIT_ROOMS` and :data:`ENGINE_ROOMS` (lowest
  first); a module may always import its own room.
* The pure rooms of the engine (``_model``, ``_rules``) import no asyncio, sqlite3, subprocess,
  threading or httpx.
* The kit reaches engine internals (``relavium_reference._*``) only from ``_reference`` and
  ``_selftest``; elsewhere at most the public modules (``relavium_reference``, ``relavium_reference.export``).
* The engine never imports the kit.

Every ``import`` counts, those inside functions too, and so does a string constant naming one of our
modules (``importlib.import_module("relavium_...")``).  The checker is tested on a synthetic tree with one
upward import and one forbidden import, so it is known to fail.

* No circle of imports between modules (:func:`import_cycles`): the graph has an edge from a module to
  each of our modules it imports, those inside functions included (a function-level import is a circle
  postponed, not removed).  Imports under ``if TYPE_CHECKING:`` are left out of this graph: they are
  never executed, so they cannot close a circle at run time (the room order above still reads them).
  A ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``; the
  parent packages Python initialises on the way are not edges.  A strongly connected component of more
  than one module fails, named by one circle through it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Lowest first. Top-level modules are rooms of their own; a room not listed is a violation.
KIT_ROOMS: tuple[tuple[str, ...], ...] = (
    ("_errors",),
    ("_data",),
    ("_version",),  # above _data: the corpus version digests the fixtures
    ("_wire",),
    ("_corpus",),
    ("_report",),
    ("_judge",),  # the observation, matching, the judge: reads what _run observed
    ("_reference",),
    ("_run",),
    ("_store",),
    ("_selftest",),
    ("_connect",),
    ("_cli",),
    ("__init__", "__main__", "pytest_plugin", "strategies"),
)
ENGINE_ROOMS: tuple[tuple[str, ...], ...] = (
    ("_model",),
    ("_rules",),
    ("_host",),
    ("__init__", "export", "example", "_schemas"),
)
PURE_ROOMS = {("relavium_reference", "_model"), ("relavium_reference", "_rules")}
FORBIDDEN_IN_PURE = {"asyncio", "sqlite3", "subprocess", "threading", "httpx"}
KIT_ROOMS_WITH_ENGINE_INTERNALS = {"_reference", "_selftest"}
PUBLIC_ENGINE_MODULES = {"relavium_reference", "relavium_reference.export"}
PACKAGES = {"relavium_conformance": "conformance", "relavium_reference": "reference"}
_OUR_MODULE = re.compile(r"^relavium_(conformance|reference)(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@dataclass(frozen=True)
class Violation:
    module: str
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module} -> {self.imported}: {self.rule}"


def _module_name(package: str, source_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(source_dir).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join([package, *parts]) if parts != ["__init__"] else f"{package}.__init__"


def _imports(path: Path, module: str) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                keep = len(base) - node.level + (1 if is_package else 0)
                prefix = ".".join(base[:keep])
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            yield target
            for alias in node.names:  # ``from pkg import room`` imports the room
                yield f"{target}.{alias.name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _OUR_MODULE.match(node.value):
            yield node.value


def _room(module: str) -> tuple[str, str] | None:
    """(package, room) of one of our modules; the room of ``pkg`` itself is ``__init__``."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    return parts[0], parts[1] if len(parts) > 1 else "__init__"


def _rank(package: str, room: str, kit_rooms: tuple[tuple[str, ...], ...] = KIT_ROOMS) -> int | None:
    rooms = kit_rooms if package == "relavium_conformance" else ENGINE_ROOMS
    for rank, names in enumerate(rooms):
        if room in names:
            return rank
    return None


def check_tree(
    sources: dict[str, Path], kit_rooms: tuple[tuple[str, ...], ...] = KIT_ROOMS
) -> list[Violation]:
    """Every violation of the house rules in the packages ``sources`` maps (import name -> folder)."""
    out: list[Violation] = []
    for package, source_dir in sources.items():
        for path in sorted(source_dir.rglob("*.py")):
            module = _module_name(package, source_dir, path)
            own = _room(module)
            assert own is not None
            own_rank = _rank(*own, kit_rooms=kit_rooms)
            if own_rank is None:
                out.append(Violation(module, "", f"room {own[1]} is not in the house plan"))
                continue
            for imported in _imports(path, module):
                top = imported.split(".")[0]
                if own in PURE_ROOMS and top in FORBIDDEN_IN_PURE:
                    out.append(Violation(module, imported, "a pure rule module does I/O or concurrency"))
                target = _room(imported)
                if target is None or imported in sources:
                    if target is not None and target[0] != package and package == "relavium_reference":
                        out.append(Violation(module, imported, "the engine imports the kit"))
                    continue
                if target[0] != package:
                    if package == "relavium_reference":
                        out.append(Violation(module, imported, "the engine imports the kit"))
                    elif (
                        imported not in PUBLIC_ENGINE_MODULES
                        and not _is_public_name(imported)
                        and own[1] not in KIT_ROOMS_WITH_ENGINE_INTERNALS
                    ):
                        out.append(Violation(module, imported, "the kit reaches an engine internal"))
                    continue
                if target[1] == own[1]:
                    continue
                target_rank = _rank(*target, kit_rooms=kit_rooms)
                if target_rank is None or target_rank >= own_rank:
                    out.append(Violation(module, imported, f"{own[1]} imports {target[1]}, not below it"))
    return out


def _is_public_name(imported: str) -> bool:
    """``relavium_reference.AgentSession`` (a name from the public package) is public."""
    parts = imported.split(".")
    head = ".".join(parts[:-1])
    return head in PUBLIC_ENGINE_MODULES and not parts[-1].startswith("_")


def test_the_house_keeps_its_rules() -> None:
    violations = check_tree({name: ROOT / folder for name, folder in PACKAGES.items()})
    assert not violations, "\n".join(map(str, violations))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _executed_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` stays)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for each in child.orelse:
                yield each
                yield from _executed_nodes(each)
            continue
        yield child
        yield from _executed_nodes(child)


def _imported_modules(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules of ours that ``module`` imports when it runs (see the module's docstring)."""

    def deepest(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        return ".".join(parts) if parts else None

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in _executed_nodes(tree):
        if isinstance(node, ast.Import):
            found.update(deepest(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                whole = f"{target}.{alias.name}"
                found.add(whole if whole in known else deepest(target))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _OUR_MODULE.match(node.value):
            found.add(deepest(node.value))
    return {name for name in found if name is not None and name != module}


def import_graph(sources: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports when it runs, over the packages ``sources`` maps."""
    paths = {
        _package_module(package, source_dir, path): path
        for package, source_dir in sources.items()
        for path in sorted(source_dir.rglob("*.py"))
    }
    known = set(paths)
    return {module: _imported_modules(path, module, known) for module, path in paths.items()}


def _package_module(package: str, source_dir: Path, path: Path) -> str:
    """The import name of ``path`` (a package's ``__init__.py`` is the package itself)."""
    parts = list(path.relative_to(source_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next((n for n in edges if n not in index or n in on_stack), None)
            if step is not None and step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph.get(step, ())))))
                continue
            if step is not None:
                low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def _one_circle(graph: dict[str, set[str]], members: Iterable[str]) -> list[str]:
    """One circle through the component ``members``: the shortest path back to its first module."""
    inside = set(members)
    start = min(inside)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & inside):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    raise AssertionError(f"no circle through {sorted(inside)}")  # a component of one has no circle


def import_cycles(sources: dict[str, Path]) -> list[str]:
    """Each circle of imports in ``sources``, as ``a -> b -> a`` (one circle per component of several
    modules, the component's other members named after it)."""
    graph = import_graph(sources)
    out = []
    for component in _components(graph):
        if len(component) > 1:
            circle = _one_circle(graph, component)
            rest = sorted(set(component) - set(circle))
            out.append(" -> ".join(circle) + (f" (with {', '.join(rest)})" if rest else ""))
    return sorted(out)


def test_no_module_imports_itself_round_a_circle() -> None:
    circles = import_cycles({name: ROOT / folder for name, folder in PACKAGES.items()})
    assert not circles, "\n".join(circles)


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_checker_fails_on_an_upward_and_a_forbidden_import(tmp_path: Path) -> None:
    kit, engine = tmp_path / "kit", tmp_path / "engine"
    _write(kit, "__init__.py", "")
    _write(kit, "_wire/__init__.py", "")
    _write(kit, "_wire/peer.py", "from relavium_conformance._run import runner\n")  # upward
    _write(kit, "_run/__init__.py", "")
    _write(kit, "_run/runner.py", "from relavium_conformance._wire.peer import x\n")  # downward: fine
    _write(kit, "_report/writers.py", "import relavium_reference._host.session\n")  # engine internal
    _write(engine, "__init__.py", "")
    _write(engine, "_rules/__init__.py", "")
    _write(engine, "_rules/plan.py", "def f():\n    import sqlite3\n")  # forbidden in a pure room
    _write(engine, "_model/errors.py", "X = 1\n")
    violations = check_tree({"relavium_conformance": kit, "relavium_reference": engine})
    found = {(v.module, v.rule.split(",")[0]) for v in violations}
    assert ("relavium_conformance._wire.peer", "_wire imports _run") in found
    assert ("relavium_conformance._report.writers", "the kit reaches an engine internal") in found
    assert ("relavium_reference._rules.plan", "a pure rule module does I/O or concurrency") in found
    assert len({v.module for v in violations}) == 3, "\n".join(map(str, violations))


def test_the_checkers_report_a_planted_circle_and_a_planted_upward_import(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    _write(kit, "__init__.py", "")
    _write(kit, "_corpus/__init__.py", "")
    _write(kit, "_corpus/cases.py", "from relavium_conformance._corpus import index\n")
    _write(kit, "_corpus/index.py", "def f():\n    from relavium_conformance._corpus.twins import g\n")
    _write(kit, "_corpus/twins.py", "from . import cases\n")  # closes cases -> index -> twins -> cases
    _write(
        kit,
        "_corpus/selection.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from relavium_conformance._corpus import choice\n",
    )
    _write(kit, "_corpus/choice.py", "from relavium_conformance._corpus import selection\n")  # typing only
    _write(kit, "_wire/__init__.py", "")
    _write(kit, "_wire/peer.py", "import relavium_conformance._judge.judge\n")  # upward
    _write(kit, "_judge/__init__.py", "")
    _write(kit, "_judge/judge.py", "from relavium_conformance._wire import peer\n")  # downward: fine
    sources = {"relavium_conformance": kit}
    corpus, kit_name = "relavium_conformance._corpus", "relavium_conformance"
    assert import_cycles(sources) == [  # the typing-only pair selection <-> choice is no circle
        f"{corpus}.cases -> {corpus}.index -> {corpus}.twins -> {corpus}.cases",
        f"{kit_name}._judge.judge -> {kit_name}._wire.peer -> {kit_name}._judge.judge",
    ]
    found = [str(v) for v in check_tree(sources)]
    assert found == [f"{kit_name}._wire.peer -> {kit_name}._judge.judge: _wire imports _judge, not below it"]


_MAY_IMPORT = re.compile(r"^May import:(.*?)(?:\n[ \t]*\n|\Z)", re.DOTALL | re.MULTILINE)
_ROOM_NAMED = re.compile(r"``(_[a-z_]+)``")
ROOM_DOCSTRING_PARTS = ("Lives here", "Must not", "May import:")


def room_docstring_problems(
    sources: dict[str, Path], kit_rooms: tuple[tuple[str, ...], ...] = KIT_ROOMS
) -> list[str]:
    """What the ``__init__`` docstrings of the rooms (and of their sub-packages) get wrong.

    Each says what lives there, what must not and, on a paragraph of its own starting ``May import:``,
    the rooms it may import, each as a ``_room`` literal (the engine, named by its dotted modules, is not
    read).  Every named room must be a room below it in the order (its own room may be named); every room
    its modules import must be named.
    """
    out: list[str] = []
    for package, source_dir in sources.items():
        out.extend(_single_module_room_problems(package, source_dir, kit_rooms))
        for init in sorted(source_dir.rglob("__init__.py")):
            folder = init.parent
            if folder == source_dir:
                continue
            parts = folder.relative_to(source_dir).parts
            where, room = ".".join([package, *parts]), parts[0]
            own_rank = _rank(package, room, kit_rooms)
            if own_rank is None:
                continue  # check_tree reports a room outside the plan
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            out.extend(
                f"{where}: the docstring does not say {part!r}"
                for part in ROOM_DOCSTRING_PARTS
                if part not in doc
            )
            found = _MAY_IMPORT.search(doc)
            named = set(_ROOM_NAMED.findall(found.group(1))) - {room} if found else set()
            for name in sorted(named):
                rank = _rank(package, name, kit_rooms)
                if rank is None or rank >= own_rank:
                    out.append(f"{where}: names {name}, which is not a room below {room}")
            used = _rooms_used(package, source_dir, folder.rglob("*.py"), kit_rooms)
            out.extend(
                f"{where}: imports {name}, which its docstring does not name"
                for name in sorted(used - named - {room})
            )
    return out


def _rooms_used(
    package: str, source_dir: Path, paths: Iterable[Path], kit_rooms: tuple[tuple[str, ...], ...]
) -> set[str]:
    """The rooms of ``package`` that the modules at ``paths`` import (the package itself is no room)."""
    used: set[str] = set()
    for path in paths:
        for imported in _imports(path, _module_name(package, source_dir, path)):
            target = _room(imported)
            if (
                imported != package
                and target is not None
                and target[0] == package
                and _rank(*target, kit_rooms=kit_rooms) is not None
            ):
                used.add(target[1])
    return used


def _single_module_room_problems(
    package: str, source_dir: Path, kit_rooms: tuple[tuple[str, ...], ...]
) -> Iterator[str]:
    """The same for a room that is one module (``_errors.py``, ``_connect.py``): its docstring names the
    rooms it may import (what lives there is the module itself)."""
    rooms = kit_rooms if package == "relavium_conformance" else ENGINE_ROOMS
    singles = {names[0] for names in rooms if len(names) == 1}
    for path in sorted(source_dir.glob("*.py")):
        room = path.stem
        if room not in singles:
            continue
        own_rank = _rank(package, room, kit_rooms)
        assert own_rank is not None
        where = f"{package}.{room}"
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found = _MAY_IMPORT.search(doc)
        if found is None:
            yield f"{where}: the docstring does not say 'May import:'"
        named = set(_ROOM_NAMED.findall(found.group(1))) - {room} if found else set()
        for name in sorted(named):
            rank = _rank(package, name, kit_rooms)
            if rank is None or rank >= own_rank:
                yield f"{where}: names {name}, which is not a room below {room}"
        used = _rooms_used(package, source_dir, [path], kit_rooms)
        yield from (
            f"{where}: imports {name}, which its docstring does not name"
            for name in sorted(used - named - {room})
        )


def test_every_room_says_what_lives_there_and_what_it_may_import() -> None:
    problems = room_docstring_problems({name: ROOT / folder for name, folder in PACKAGES.items()})
    assert not problems, "\n".join(problems)


def test_the_room_docstring_check_fails_on_a_wrong_or_missing_list(tmp_path: Path) -> None:
    kit = tmp_path / "kit"

    def room(may_import: str) -> str:
        return f'"""Lives here: x.\n\nMust not live here: y.\n\nMay import: {may_import}\n"""\n'

    _write(kit, "__init__.py", "")
    _write(kit, "_wire/__init__.py", room("``_errors``, ``_run`` (and below)."))  # _run is above
    _write(kit, "_corpus/__init__.py", '"""_corpus room."""\n')  # says nothing
    _write(kit, "_judge/__init__.py", room("``_wire``."))
    _write(kit, "_judge/judge.py", "from relavium_conformance._corpus import cases\nfrom . import events\n")
    _write(kit, "_run/__init__.py", room("``_judge``, ``_wire``, ``_run``."))  # its own room may be named
    _write(kit, "_run/sub/__init__.py", room("``_wire``,\n``_report``.\n\nNot read: ``_judge``."))
    _write(kit, "_run/sub/deep.py", "import relavium_conformance._judge.judge\n")
    _write(kit, "_errors.py", '"""Errors."""\n')  # a room of one module says nothing
    _write(kit, "_data.py", '"""Data.\n\nMay import: ``_errors``, ``_version``.\n"""\n')  # _version is above
    _write(
        kit, "_version.py", '"""V.\n\nMay import: ``_errors``.\n"""\nfrom relavium_conformance import _data\n'
    )
    kit_name = "relavium_conformance"
    assert room_docstring_problems({kit_name: kit}) == [
        f"{kit_name}._data: names _version, which is not a room below _data",
        f"{kit_name}._errors: the docstring does not say 'May import:'",
        f"{kit_name}._version: imports _data, which its docstring does not name",
        f"{kit_name}._corpus: the docstring does not say 'Lives here'",
        f"{kit_name}._corpus: the docstring does not say 'Must not'",
        f"{kit_name}._corpus: the docstring does not say 'May import:'",
        f"{kit_name}._judge: imports _corpus, which its docstring does not name",
        f"{kit_name}._run.sub: imports _judge, which its docstring does not name",
        f"{kit_name}._wire: names _run, which is not a room below _wire",
    ]


# A file name used in more than one room is a mirror on purpose, one of the families of
# docs/architecture.md ("Names shared between rooms"); a name that means two things is renamed instead.
_AREA = (
    "clause area: the break, broken-store or generated-case module of the area, named as its engine module"
)
_PROFILES = "the session-store profile mirrors the agent-session profile, part by part"
_CLI = "a sub-command beside the room that does its work"
MIRRORED_NAMES: dict[str, str] = {
    "auto_compaction.py": "one concern by layer: _rules decides, _host runs it",
    "budget.py": _AREA,
    "cases.py": _PROFILES,
    "commands.py": "one concern by layer: _model holds the shapes, _host runs the command",
    "compaction.py": _AREA,
    "coverage.py": _CLI,
    "events.py": "the kit's own check beside the engine's model, and the clause area",
    "execute.py": _PROFILES,
    "export.py": _AREA,
    "fuzz.py": _CLI,
    "history.py": _AREA,
    "interop.py": _CLI,
    "lifecycle.py": _AREA,
    "messages.py": _AREA,
    "overflow.py": _AREA,
    "projection.py": _AREA,
    "proofs.py": _PROFILES,
    "protocol.py": _PROFILES,
    "runner.py": _PROFILES,
    "selection.py": _CLI,
    "session.py": _AREA,
    "turn_cap.py": _AREA,
    "usage.py": _AREA,
    "vectors.py": "the vector suites' format (_corpus) beside their running (_run)",
    "workflow.py": "the kit's own reading of the exported workflow beside the engine's model of it",
}


def shared_file_names(folders: Iterable[Path]) -> set[str]:
    """The module file names (``__init__.py`` aside) found in more than one folder under ``folders``."""
    seen: dict[str, set[Path]] = {}
    for folder in folders:
        for path in folder.rglob("*.py"):
            if path.name != "__init__.py":
                seen.setdefault(path.name, set()).add(path.parent)
    return {name for name, where in seen.items() if len(where) > 1}


def test_a_file_name_is_shared_between_rooms_only_as_a_declared_mirror(tmp_path: Path) -> None:
    shared = shared_file_names(ROOT / folder for folder in PACKAGES.values())
    assert sorted(shared - MIRRORED_NAMES.keys()) == [], "a new shared name: rename it or say why it mirrors"
    assert sorted(MIRRORED_NAMES.keys() - shared) == [], "a declared mirror no longer shared: drop it"
    _write(tmp_path, "kit/_wire/model.py", "")
    _write(tmp_path, "kit/_store/model.py", "")
    _write(tmp_path, "kit/_store/runner.py", "")
    assert shared_file_names([tmp_path / "kit"]) == {"model.py"}  # the check sees a planted one


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_top_level_modules_and_rooms_stay_within_the_plan(package: str) -> None:
    source = ROOT / PACKAGES[package]
    rooms = [p for p in source.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    top = list(source.glob("*.py"))
    limit = 8 if package == "relavium_conformance" else 5
    assert len(top) <= limit, sorted(p.name for p in top)
    assert len(rooms) == (9 if package == "relavium_conformance" else 3), sorted(p.name for p in rooms)


def test_the_session_state_changes_in_one_place() -> None:
    """Every assignment of ``_state`` in the engine is inside ``AgentSession._enter``."""
    places = []
    for path in sorted((ROOT / "reference").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else ([node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else [])
                )
                for target in targets:
                    if isinstance(target, ast.Attribute) and target.attr == "_state":
                        places.append((path.name, function.name))
    assert places == [("session.py", "_enter")]
