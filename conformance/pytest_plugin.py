"""pytest plugin of the kit (registered through the ``pytest11`` entry point).

Parts:

* **clause citations**: a test cites the clauses it checks with ``@pytest.mark.clauses("AS-LIFE-001", ...)``;
  collection fails with a clear error when a cited id is malformed or names no clause of the catalogue
  (:func:`check_clause_markers`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

__all__ = ["check_clause_markers", "pytest_collection_modifyitems"]


def check_clause_markers(items: Sequence[pytest.Item]) -> list[str]:
    """One line per ``clauses`` marker citation that names no clause (empty when all are known)."""
    from ._catalogue import clause_ids

    known = clause_ids()
    problems: list[str] = []
    for item in items:
        for marker in item.iter_markers(name="clauses"):
            if not marker.args:
                problems.append(f"{item.nodeid}: @pytest.mark.clauses cites no clause id")
            for cited in marker.args:
                if not isinstance(cited, str):
                    problems.append(f"{item.nodeid}: clause id {cited!r} is not a string")
                elif cited not in known:
                    problems.append(f"{item.nodeid}: unknown clause id {cited}")
    return problems


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    problems = check_clause_markers(items)
    if problems:
        raise pytest.UsageError(
            "tests cite clauses that are not in the catalogue (fixtures/clauses/):\n  "
            + "\n  ".join(problems)
        )
