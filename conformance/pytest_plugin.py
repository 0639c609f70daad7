"""pytest plugin of the kit (registered through the ``pytest11`` entry point).

Parts:

* **clause citations**: a test cites the clauses it checks with ``@pytest.mark.clauses("AS-LIFE-001", ...)``;
  collection fails with a clear error when a cited id is malformed or names no clause of the catalogue
  (:func:`check_clause_markers`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

__all__ = [
    "assert_case_passes",
    "case_verdict",
    "check_clause_markers",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_generate_tests",
]


def check_clause_markers(items: Sequence[pytest.Item]) -> list[str]:
    """One line per ``clauses`` marker citation that names no clause (empty when all are known)."""
    from relavium_conformance._corpus.catalogue import clause_ids

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
    if not any(item.get_closest_marker("clauses") for item in items):
        return  # nothing cites a clause: do not even load the catalogue
    from relavium_conformance._errors import KitUsageError

    try:
        problems = check_clause_markers(items)
    except KitUsageError as exc:
        raise pytest.UsageError(f"the clause catalogue cannot be loaded: {exc}") from None
    if problems:
        raise pytest.UsageError(
            "tests cite clauses that are not in the catalogue (fixtures/clauses/):\n  "
            + "\n  ".join(problems)
        )


# -- conformance cases, once per registered adapter --------------------------------------------------
#
# A test that takes the arguments ``conformance_adapter`` and ``conformance_case`` is run once per
# (adapter, case).  Adapters come from ``--relavium-adapter NAME`` (repeatable: ``reference``,
# ``reference-stdio``, ``stdio:COMMAND``; default ``reference``).  The checks are the kit's library
# functions: the whole suite runs once per adapter (cached for the session) and each test reports its
# case's verdict, so an adapter's subprocess is started once, not once per case.

_RUNS: dict[str, object] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("relavium-conformance")
    group.addoption(
        "--relavium-adapter",
        action="append",
        default=None,
        metavar="NAME",
        help="run conformance cases against this adapter (repeatable; default: reference)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not {"conformance_adapter", "conformance_case"} <= set(metafunc.fixturenames):
        return
    from relavium_conformance._corpus.cases import load_cases

    adapters = metafunc.config.getoption("relavium_adapter") or ["reference"]
    pairs = [(adapter, case.id) for adapter in adapters for case in load_cases()]
    metafunc.parametrize(
        ("conformance_adapter", "conformance_case"), pairs, ids=[f"{a}::{c}" for a, c in pairs]
    )


def case_verdict(adapter: str, case_id: str) -> object:
    """The :class:`CaseResult` of ``case_id`` under ``adapter`` (the suite runs once per adapter)."""
    from relavium_conformance._connect import resolve_adapter
    from relavium_conformance._corpus.cases import load_cases
    from relavium_conformance._run.runner import RunOutcome, run_cases_sync

    if adapter not in _RUNS:
        _RUNS[adapter] = run_cases_sync(resolve_adapter(adapter), load_cases())
    outcome = _RUNS[adapter]
    assert isinstance(outcome, RunOutcome)
    for result in outcome.run.cases:
        if result.id == case_id:
            return result
    raise KeyError(case_id)


def assert_case_passes(adapter: str, case_id: str) -> None:
    """Fail the calling test with the case's differences unless it passed; skip (with the reason) if
    the implementation does not declare a capability the case needs."""
    from relavium_conformance._report.results import CaseResult, CaseStatus

    result = case_verdict(adapter, case_id)
    assert isinstance(result, CaseResult)
    if result.status is CaseStatus.UNSUPPORTED:
        pytest.skip(f"unsupported: {result.reason}")
    if result.status is not CaseStatus.PASSED:
        lines = [f"{result.status.value}: {result.reason}"]
        lines += [
            f"  {d.path}: {d.message} (expected {d.expected!r}, got {d.actual!r})" for d in result.differences
        ]
        pytest.fail("\n".join(lines), pytrace=False)
