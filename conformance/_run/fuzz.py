"""Fuzzing any adapter: the generated cases (``_corpus/generated/``, one module per area) run against an
implementation, a failure is shrunk by Hypothesis, and the smallest failing case comes back as a golden
transcript.  ``area`` narrows generation to one area; a fixed ``seed`` gives the same cases (and, against
the same implementation, the same verdicts) run after run: no verdict depends on timing.

The run is an ordinary :class:`RunResult`: every example tried before the first failure is a passed case
``generated/example-<n>``, the shrunk failure is a failed (or errored) case ``generated/<name>``; shrink
attempts in between are not reported.  The adapter is opened once for all examples.

Needs Hypothesis (the ``strategies`` extra).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import CaseResult, CaseStatus, ImplementationInfo, RunResult
from relavium_conformance._run.kept import CaseSession
from relavium_conformance._wire.adapters import Adapter
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = ["PROFILES", "FuzzOutcome", "fuzz"]

#: examples per profile (``--profile``); ``--examples`` overrides
PROFILES = {"quick": 25, "default": 100, "thorough": 500}


class _NotStarted(Exception):
    """The implementation could not be started: no example can say anything."""


@dataclass
class FuzzOutcome:
    run: RunResult
    examples: int  # examples executed, shrink attempts included
    failure: Case | None = None  # the shrunk failing case, renamed for the corpus
    notes: list[str] = field(default_factory=list)


def _renamed(case: Case, prefix: str) -> Case:
    from relavium_conformance._corpus.generated import case_to_yaml

    digest = hashlib.sha256(case_to_yaml(case).encode("utf-8")).hexdigest()[:10]
    return case.model_copy(update={"id": f"generated/{prefix}-{digest}", "source": None})


def fuzz(
    adapter: Adapter,
    *,
    examples: int = PROFILES["default"],
    seed: int | None = None,
    timeout: float = 15.0,
    name_prefix: str = "fuzz",
    area: str | None = None,
    shrink: bool = True,
) -> FuzzOutcome:
    """Run up to ``examples`` generated cases (of ``area``, or of every area); shrink (unless ``shrink`` is
    False: the selftest only asks whether a failure is found) and return the first failure found.  An
    unknown area is a :class:`KitUsageError`."""
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as fixed_seed
        from hypothesis.errors import Unsatisfiable

        from relavium_conformance._corpus.generated import generated_cases
    except ModuleNotFoundError as exc:
        raise KitUsageError(
            f"fuzzing needs Hypothesis ({exc.name} is missing): "
            "pip install 'relavium-conformance[strategies]'"
        ) from None
    cases = generated_cases(area)  # an unknown area fails here, before the implementation starts
    started_at, clock = datetime.now(UTC), time.perf_counter()
    search = _Search(CaseSession(adapter, timeout=timeout))

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        phases=tuple(Phase) if shrink else (Phase.explicit, Phase.generate),
    )
    @given(case=cases)
    def check(case: Case) -> None:
        search.check(case)

    if seed is not None:
        check = fixed_seed(seed)(check)
    notes: list[str] = []
    try:
        check()
    except Unsatisfiable:  # every case drawn needed an undeclared capability
        notes.append(f"no generated case can run: {search.unsupported_reason}")
    except _NotStarted:
        pass
    except Exception as exc:  # the shrunk failure (or Hypothesis' report that it stopped reproducing)
        if not isinstance(exc, AssertionError):
            notes.append(f"hypothesis: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    finally:
        hello = search.session.adapter.hello
        search.session.close()
    if search.unsupported and not notes:
        notes.append(
            f"{search.unsupported} generated cases were skipped (their areas need capabilities the "
            f"implementation does not declare: {search.unsupported_reason})"
        )
    results = list(search.passed)
    failure: Case | None = None
    if search.last is not None:
        case, result = search.last
        failure = _renamed(case, name_prefix)
        results.append(result.model_copy(update={"id": failure.id}))
    run = RunResult.build(
        implementation=_implementation(adapter, hello),
        cases=results,
        catalogue=load_catalogue().clauses,
        started_at=started_at,
        duration_ms=(time.perf_counter() - clock) * 1000,
    )
    examples = search.examples - search.unsupported  # the skipped ones never reached the implementation
    return FuzzOutcome(run=run, examples=examples, failure=failure, notes=notes)


@dataclass
class _Search:
    """What the property check saw: the examples it ran, those that passed before any failure, and the
    last failing (or unstartable) case with its result, which Hypothesis leaves as the shrunk one."""

    session: CaseSession
    passed: list[CaseResult] = field(default_factory=list)
    examples: int = 0
    failed: bool = False
    last: tuple[Case, CaseResult] | None = None
    unsupported: int = 0  # cases skipped: they need a capability the implementation does not declare
    unsupported_reason: str = ""

    def check(self, case: Case) -> None:
        """Run one generated case: passing returns, anything else raises for Hypothesis to shrink."""
        self.examples += 1
        result = self.session.run_one(case, snapshots=False, clause_table=False)
        if result.handshake_failed:
            self.last = (case, result)
            raise _NotStarted(result.reason)
        if result.status is CaseStatus.UNSUPPORTED:  # an area this implementation does not declare
            self.unsupported += 1
            self.unsupported_reason = result.reason or "a capability is not declared"
            from hypothesis import reject

            reject()
        if result.status is CaseStatus.PASSED:
            if not self.failed:
                self.passed.append(
                    result.model_copy(update={"id": f"generated/example-{len(self.passed) + 1}"})
                )
            return
        self.failed, self.last = True, (case, result)
        raise AssertionError(result.reason)


def _implementation(adapter: Adapter, hello: HelloResult | None) -> ImplementationInfo:
    return ImplementationInfo(
        name=hello.implementation.name if hello else "unknown",
        adapter=adapter.name,
        version=hello.implementation.version if hello else None,
        language=hello.implementation.language if hello else None,
        capabilities=tuple(hello.capabilities) if hello else (),
    )
