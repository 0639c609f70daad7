"""pytest plugin of the kit (registered through the ``pytest11`` entry point).

Parts:

* **clause citations**: a test cites the clauses it checks with ``@pytest.mark.clauses("AS-LIFE-001", ...)``
  (the marker is registered, so ``--strict-markers`` accepts it); collection fails with a clear error when
  a cited id is malformed or names no clause of the catalogue (:func:`check_clause_markers`).
* **conformance cases as test items**: a test that takes the arguments ``conformance_adapter`` and
  ``conformance_case`` becomes one item per (adapter, case).  Each item executes only its own case, so
  ``-k``, ``--lf`` and ``-x`` narrow the work the way they do for any test.  Ids read
  ``<alias>::<case id>`` (``reference::lifecycle/abort-mid-stream``): the alias is short and never a
  command line.  Every item carries ``clauses(...)`` and ``conformance(area=...)``,
  ``conformance(clause=...)``, ``conformance(capability=...)`` marks (``-m "conformance(area='resume')"``),
  and its clause ids and area as keywords (``-k AS-LIFE-017``).  A ``--relavium-baseline`` file turns its
  known failures into ``xfail(strict=True)``: a known failure that passes again fails the run, as a stale
  baseline entry does in ``relavium-conformance run``.

An adapter is opened once per session (one subprocess for ``stdio:``) and serves every item that names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "assert_case_passes",
    "case_verdict",
    "check_clause_markers",
    "failure_text",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_unconfigure",
]

CLAUSES_MARKER = "clauses(*ids): the specification clauses a test checks (ids must exist in the catalogue)"
CONFORMANCE_MARKER = (
    "conformance(area=, clause=, capability=): a conformance case's area, one clause it checks or one "
    "capability it needs (select with -m \"conformance(area='lifecycle')\")"
)


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", CLAUSES_MARKER)
    config.addinivalue_line("markers", CONFORMANCE_MARKER)
    _STATE.configure(
        extra_dirs=[Path(p) for p in (_option(config, "relavium_cases") or [])],
        timeout=float(_option(config, "relavium_timeout") or 15.0),
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    _STATE.shutdown()


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the plugin's options were not added (plugin loaded late)
        return None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        case_id = callspec.params.get("conformance_case") if callspec is not None else None
        if isinstance(case_id, str):
            case = _STATE.case(case_id)
            item.extra_keyword_matches.update({case.area, *case.clauses, *case.capabilities})
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


# -- conformance cases, one item per (adapter, case) ---------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("relavium-conformance")
    group.addoption(
        "--relavium-adapter",
        action="append",
        default=None,
        metavar="NAME",
        help="run conformance cases against this adapter (repeatable; default: reference): reference, "
        "reference-stdio, stdio:COMMAND, python:MODULE:FACTORY; ALIAS=NAME sets the id's alias",
    )
    group.addoption(
        "--relavium-cases",
        action="append",
        default=None,
        metavar="DIR",
        help="also run the golden transcripts under DIR (a port's own cases, the kit's format)",
    )
    group.addoption(
        "--relavium-baseline",
        default=None,
        metavar="FILE",
        help="known failures (the baseline file of relavium-conformance run): xfail(strict=True)",
    )
    group.addoption(
        "--relavium-timeout", default=None, metavar="S", help="seconds per operation (default 15)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not {"conformance_adapter", "conformance_case"} <= set(metafunc.fixturenames):
        return
    from relavium_conformance._connect import adapter_alias

    adapters = metafunc.config.getoption("relavium_adapter") or ["reference"]
    baseline_file = metafunc.config.getoption("relavium_baseline")
    known = _known_failures(Path(baseline_file)) if baseline_file else {}
    params = []
    for adapter in adapters:
        alias = adapter_alias(adapter)
        for case in _STATE.cases():
            marks: list[Any] = [pytest.mark.clauses(*case.clauses), pytest.mark.conformance(area=case.area)]
            marks += [pytest.mark.conformance(clause=clause) for clause in case.clauses]
            marks += [pytest.mark.conformance(capability=cap) for cap in case.capabilities]
            if case.id in known:
                marks.append(pytest.mark.xfail(reason=f"baseline: {known[case.id]}", strict=True))
            params.append(pytest.param(adapter, case.id, id=f"{alias}::{case.id}", marks=marks))
    metafunc.parametrize(("conformance_adapter", "conformance_case"), params)


def _known_failures(path: Path) -> dict[str, str]:
    from relavium_conformance._errors import KitUsageError
    from relavium_conformance._report.baseline import load_baseline

    try:
        baseline = load_baseline(path)
    except KitUsageError as exc:
        raise pytest.UsageError(f"--relavium-baseline {path}: {exc}") from None
    return {entry.case: entry.reason for entry in baseline.known_failures}


@dataclass
class _State:
    """The plugin's session: the cases, the adapters it opened, and the one event loop they live on."""

    extra_dirs: list[Path] = field(default_factory=list)
    timeout: float = 15.0
    _cases: dict[str, Any] | None = None
    _sessions: dict[str, Any] = field(default_factory=dict)

    def configure(self, *, extra_dirs: list[Path], timeout: float) -> None:
        self.extra_dirs, self.timeout, self._cases = extra_dirs, timeout, None

    def cases(self) -> list[Any]:
        if self._cases is None:
            from relavium_conformance._corpus.selection import gather_cases
            from relavium_conformance._errors import KitUsageError

            try:
                self._cases = {case.id: case for case in gather_cases(self.extra_dirs)}
            except KitUsageError as exc:
                raise pytest.UsageError(f"relavium-conformance: {exc}") from None
        return list(self._cases.values())

    def case(self, case_id: str) -> Any:
        for case in self.cases():
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def run_one(self, adapter_name: str, case_id: str) -> Any:
        from relavium_conformance._connect import resolve_adapter
        from relavium_conformance._run.kept import CaseSession

        if adapter_name not in self._sessions:
            adapter = resolve_adapter(adapter_name, timeout=self.timeout)
            self._sessions[adapter_name] = CaseSession(adapter, timeout=self.timeout)
        return self._sessions[adapter_name].run_one(self.case(case_id))

    def shutdown(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()


_STATE = _State()


def case_verdict(adapter: str, case_id: str) -> object:
    """The :class:`CaseResult` of ``case_id`` under ``adapter``: that case alone is executed."""
    return _STATE.run_one(adapter, case_id)


def failure_text(result: Any) -> str:
    """A failed or errored case as a reader wants it: status, case, each clause with its summary, and
    every difference (expected and actual as JSON, never Python reprs)."""
    import json

    from relavium_conformance._corpus.catalogue import load_catalogue

    summaries = {clause.id: clause.summary for clause in load_catalogue().clauses}
    lines = [f"{result.status.value.upper()} {result.id}: {result.reason}"]
    lines += [f"  {cid}: {summaries.get(cid, '(not in the catalogue)')}" for cid in result.clauses]
    for difference in result.differences:
        lines.append(f"  at {difference.path}: {difference.message}")
        if difference.expected is not None or difference.actual is not None:
            expected = json.dumps(difference.expected, ensure_ascii=False, sort_keys=True)
            actual = json.dumps(difference.actual, ensure_ascii=False, sort_keys=True)
            lines.append(f"    expected {expected}, got {actual}")
    if result.stderr_tail:
        lines.append("  stderr (last lines):")
        lines += [f"    {line}" for line in result.stderr_tail.splitlines()]
    return "\n".join(lines)


def assert_case_passes(adapter: str, case_id: str) -> None:
    """Fail the calling test with the case's clauses and differences unless it passed; skip (with the
    reason) if the implementation does not declare a capability the case needs."""
    from relavium_conformance._report.results import CaseResult, CaseStatus

    result = case_verdict(adapter, case_id)
    assert isinstance(result, CaseResult)
    if result.status is CaseStatus.UNSUPPORTED:
        pytest.skip(f"unsupported: {result.reason}")
    if result.status is not CaseStatus.PASSED:
        pytest.fail(failure_text(result), pytrace=False)
