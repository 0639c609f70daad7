"""One exception root: every exception class the two packages define derives from ``RelaviumError``.

A caller that catches ``RelaviumError`` catches whatever the kit or the engine raises on purpose.  The one
allowance is a private signal (a class whose name starts with ``_``): one that its module raises must also
be caught in that module, so it never reaches a caller.  A private class the module never raises is a
value, not a signal (the kit's stand-in for another library's error, for instance).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import relavium_conformance
import relavium_reference
from relavium_reference import RelaviumError


def _modules() -> list[ModuleType]:
    out = []
    for package in (relavium_reference, relavium_conformance):
        out.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.rsplit(".", 1)[-1] == "__main__":  # runs the command line when imported
                continue
            out.append(importlib.import_module(info.name))
    return out


def _exception_classes() -> list[tuple[ModuleType, type[BaseException]]]:
    found = []
    for module in _modules():
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found.append((module, value))
    return found


def _names_in(tree: ast.AST, kind: type[ast.AST]) -> set[str]:
    """Every bare name inside the ``raise`` statements (or ``except`` clauses) of ``tree``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and kind is ast.Raise and node.exc is not None:
            names |= {n.id for n in ast.walk(node.exc) if isinstance(n, ast.Name)}
        if isinstance(node, ast.ExceptHandler) and kind is ast.ExceptHandler and node.type is not None:
            names |= {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
    return names


CLASSES = _exception_classes()


def test_the_packages_define_exception_classes() -> None:
    names = {cls.__qualname__ for _module, cls in CLASSES}
    assert {"KitError", "OperationError", "DataMissingError", "SessionStateError"} <= names


@pytest.mark.parametrize(
    "cls",
    [cls for _module, cls in CLASSES if not cls.__name__.startswith("_")],
    ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
)
def test_every_public_exception_derives_from_the_root(cls: type[BaseException]) -> None:
    assert issubclass(cls, RelaviumError), [base.__name__ for base in cls.__mro__]


def test_a_private_signal_is_caught_where_it_is_raised() -> None:
    loose = []
    for module, cls in CLASSES:
        if not cls.__name__.startswith("_") or issubclass(cls, RelaviumError):
            continue
        tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
        raised, caught = _names_in(tree, ast.Raise), _names_in(tree, ast.ExceptHandler)
        if cls.__name__ in raised and cls.__name__ not in caught:
            loose.append(f"{module.__name__}.{cls.__name__}")
    assert loose == []


def test_the_check_of_private_signals_can_fail() -> None:
    raised = ast.parse("class _Signal(Exception): ...\ndef f():\n    raise _Signal('x')\n")
    caught = ast.parse("try:\n    f()\nexcept (_Signal, KeyError):\n    pass\n")
    assert "_Signal" in _names_in(raised, ast.Raise)
    assert "_Signal" not in _names_in(raised, ast.ExceptHandler)
    assert "_Signal" in _names_in(caught, ast.ExceptHandler)
