"""``selftest``: proof that the kit's cases bite and that the runner survives a misbehaving program.

1. Every deliberately broken implementation (:mod:`relavium_conformance._selftest.breaks`) is run
   against the cases that cite the clauses it breaks.  It is **caught** when at least one of those
   cases fails or errors, while the reference engine passes all of them (so the failure is the break's
   doing, not the case's).
2. The reference stdio server is run in each misbehaving mode (crash, hang, garbage line, stderr noise,
   wrong protocol version): the run must finish, every case must have a result, the broken ones must be
   ``errored`` with a reason, and after a restart the next case must pass.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relavium_conformance._corpus.boundary_breaks import BOUNDARY_BREAKS, PROOF_EXAMPLES, PROOF_SEED
from relavium_conformance._corpus.cases import AnyCase, Case
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseResult, CaseStatus, RunResult
from relavium_conformance._run.parallel import fork_available, map_in_processes_meanwhile
from relavium_conformance._run.runner import run_cases, run_sync
from relavium_conformance._selftest.breaks import BROKEN_IMPLEMENTATIONS, BrokenImplementation
from relavium_conformance._selftest.compliant import COMPLIANT_ALTERNATIVES, CompliantAlternative
from relavium_conformance._selftest.verdicts import BrokenVerdict
from relavium_conformance._wire.adapters import InProcessAdapter, StdioAdapter

__all__ = [
    "MISBEHAVIOUR_TIMEOUT",
    "SELFTEST_TIMEOUT",
    "AlternativeVerdict",
    "BrokenVerdict",
    "MisbehaviourVerdict",
    "SelftestReport",
    "check_alternative",
    "check_broken",
    "run_selftest",
    "sending_cases",
]

SELFTEST_TIMEOUT = 10.0  # s, per operation of a case
MISBEHAVIOUR_TIMEOUT = 3.0  # s, per request to a misbehaving program (a hang ends there)


@dataclass(frozen=True)
class AlternativeVerdict:
    """A compliant alternative must pass every case the reference passes (warnings allowed)."""

    name: str
    behaviour: str
    failed: tuple[str, ...]
    warned: int  # cases that passed with a warning

    @property
    def accepted(self) -> bool:
        return not self.failed

    @property
    def explanation(self) -> str:
        if self.failed:
            return "the kit refuses a compliant behaviour in: " + ", ".join(self.failed)
        return f"every case passes ({self.warned} with a warning)"


@dataclass(frozen=True)
class MisbehaviourVerdict:
    mode: str
    ok: bool
    detail: str


@dataclass
class SelftestReport:
    broken: list[BrokenVerdict] = field(default_factory=list)
    misbehaviours: list[MisbehaviourVerdict] = field(default_factory=list)
    alternatives: list[AlternativeVerdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            all(v.caught for v in self.broken)
            and all(m.ok for m in self.misbehaviours)
            and all(a.accepted for a in self.alternatives)
        )

    def proofs(self) -> dict[str, list[str]]:
        """Clause id -> names of the broken implementations whose citing cases proved they bite.

        A clause is proven by a broken implementation that breaks it only when a failure was booked on
        that very clause (its own cases failed, or a generic check booked on it), on every transport run.
        """
        out: dict[str, list[str]] = {}
        for verdict in self.broken:
            if verdict.caught:
                for clause in verdict.proven:
                    out.setdefault(clause, []).append(verdict.name)
        return out


def _citing(cases: Sequence[AnyCase], clauses: Sequence[str]) -> tuple[AnyCase, ...]:
    wanted = set(clauses)
    return tuple(c for c in cases if wanted & set(c.clauses))


async def _statuses(
    adapter: InProcessAdapter | StdioAdapter, cases: Sequence[AnyCase], timeout: float
) -> RunResult:
    outcome = await run_cases(adapter, cases, timeout=timeout, snapshots=False, clause_table=False)
    return outcome.run


def serve_command(name: str) -> list[str]:
    """The command serving the broken implementation or alternative ``name`` over stdio."""
    return [sys.executable, "-m", "relavium_conformance", "selftest", "--serve", name]


@dataclass(frozen=True)
class _BrokenRuns:
    """What a broken implementation's citing cases showed, before the reference's run is consulted."""

    cases: tuple[str, ...]  # the citing case ids, sorted
    failed: tuple[str, ...]
    proven: tuple[str, ...]
    transports: tuple[str, ...]
    not_run: tuple[str, ...]


def _until_proven(clauses: Sequence[str]) -> Callable[[Sequence[CaseResult]], bool]:
    """True once the failures among ``results`` book every one of ``clauses``: further cases can add
    failures, never a proof (``proven`` is at most ``clauses``), so a run may stop there."""
    wanted = set(clauses)

    def proven(results: Sequence[CaseResult]) -> bool:
        booked: set[str] = set()
        for result in results:
            if result.status in (CaseStatus.FAILED, CaseStatus.ERRORED):
                booked.update(result.booked_clauses())
        return wanted <= booked

    return proven


async def _run_broken(
    broken: BrokenImplementation, cases: Sequence[AnyCase], timeout: float, *, stdio: bool, every_case: bool
) -> _BrokenRuns:
    citing = _citing(cases, broken.clauses)
    failed: tuple[str, ...] = ()
    proven: set[str] = set(broken.clauses)
    transports: list[str] = []
    not_run: set[str] = set()
    adapters: list[InProcessAdapter | StdioAdapter] = []
    if citing:
        adapters.append(InProcessAdapter(f"broken:{broken.name}", broken.factory()))
        if stdio:
            adapters.append(StdioAdapter(f"broken:{broken.name}", serve_command(broken.name)))
    stop = None if every_case else _until_proven(broken.clauses)
    for adapter in adapters:
        outcome = await run_cases(
            adapter, citing, timeout=timeout, snapshots=False, stop=stop, clause_table=False
        )
        run = outcome.run
        failures = [c for c in run.cases if c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)]
        failed = tuple(dict.fromkeys([*failed, *(c.id for c in failures)]))
        proven &= {clause for c in failures for clause in c.booked_clauses()}
        transports.append("stdio" if isinstance(adapter, StdioAdapter) else "in-process")
        not_run |= {c.id for c in citing} - {c.id for c in run.cases}
    generated: tuple[str, ...] = ()
    if not failed and broken.name in BOUNDARY_BREAKS:  # a boundary only generated cases reach
        found = await asyncio.to_thread(_generated_failure, broken)
        if found is not None:
            failed, generated = (found.id,), (found.id,)
            proven = set(broken.clauses) & set(found.booked_clauses())
            transports.append("generated")
    return _BrokenRuns(
        cases=tuple(sorted({*(c.id for c in citing), *generated})),
        failed=failed,
        proven=tuple(sorted(proven)) if adapters or generated else (),
        transports=tuple(transports),
        not_run=tuple(sorted(not_run)),
    )


def _generated_failure(broken: BrokenImplementation) -> CaseResult | None:
    """The first generated case of the break's area that fails it, at the proof's fixed seed (no
    shrinking: only whether one is found within the default number of examples)."""
    from relavium_conformance._errors import KitUsageError
    from relavium_conformance._run.fuzz import fuzz

    adapter = InProcessAdapter(f"broken:{broken.name}", broken.factory())
    area = BOUNDARY_BREAKS[broken.name]
    try:
        outcome = fuzz(adapter, examples=PROOF_EXAMPLES, seed=PROOF_SEED, area=area, shrink=False)
    except KitUsageError:  # no Hypothesis (the strategies extra): the break stays missed
        return None
    failures = [c for c in outcome.run.cases if c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)]
    return failures[0] if failures else None


def _broken_verdict(broken: BrokenImplementation, runs: _BrokenRuns, reference: RunResult) -> BrokenVerdict:
    ids = set(runs.cases)
    # a case the reference itself cannot run (an undeclared capability) proves nothing either way
    reference_failed = tuple(
        c.id for c in reference.cases if c.id in ids and c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)
    )
    return BrokenVerdict(
        name=broken.name,
        rule=broken.rule,
        clauses=broken.clauses,
        cases=runs.cases,
        failed=runs.failed,
        reference_failed=reference_failed,
        proven=runs.proven,
        transports=runs.transports,
        not_run=runs.not_run,
    )


async def check_broken(
    broken: BrokenImplementation,
    cases: Sequence[AnyCase],
    reference: RunResult,
    timeout: float,
    *,
    stdio: bool = False,
    every_case: bool = False,
) -> BrokenVerdict:
    """Run the cases citing ``broken``'s clauses against it (in-process; with ``stdio`` also as a
    subprocess): caught when some of them fail on a broken clause, on every transport, while the
    reference passes them all.  A transport's run stops once every broken clause has a proving
    failure (the rest are ``not_run``), unless ``every_case``."""
    runs = await _run_broken(broken, cases, timeout, stdio=stdio, every_case=every_case)
    return _broken_verdict(broken, runs, reference)


async def check_alternative(
    alternative: CompliantAlternative, cases: Sequence[AnyCase], reference: RunResult, timeout: float
) -> AlternativeVerdict:
    """Run the whole corpus against ``alternative``: whatever the reference passes, it must pass."""
    return _alternative_verdict(alternative, await _run_alternative(alternative, cases, timeout), reference)


async def _run_alternative(
    alternative: CompliantAlternative, cases: Sequence[AnyCase], timeout: float
) -> RunResult:
    adapter = InProcessAdapter(f"alternative:{alternative.name}", alternative.factory())
    return await _statuses(adapter, cases, timeout)


def _alternative_verdict(
    alternative: CompliantAlternative, run: RunResult, reference: RunResult
) -> AlternativeVerdict:
    passing = {c.id for c in reference.cases if c.status is CaseStatus.PASSED}
    failed = tuple(c.id for c in run.cases if c.id in passing and c.status is not CaseStatus.PASSED)
    return AlternativeVerdict(
        name=alternative.name,
        behaviour=alternative.behaviour,
        failed=failed,
        warned=sum(1 for c in run.cases if c.warnings),
    )


def _server(mode: str, marker: Path | None) -> list[str]:
    command = [sys.executable, "-m", "relavium_conformance", "stdio-server", "--misbehave", mode]
    if marker is not None:
        command += ["--once-marker", str(marker)]
    return command


async def check_misbehaviour(mode: str, cases: Sequence[AnyCase], timeout: float) -> MisbehaviourVerdict:
    """Run two sending cases against a server misbehaving in ``mode``; judge the runner's survival."""
    with tempfile.TemporaryDirectory(prefix="relavium-selftest-") as folder:
        marker = Path(folder) / "misbehaved" if mode in ("crash", "hang", "garbage") else None
        adapter = StdioAdapter(f"misbehaving:{mode}", _server(mode, marker), request_timeout=timeout)
        run = (await run_cases(adapter, cases, timeout=timeout, snapshots=False)).run
    statuses = [c.status for c in run.cases]
    reasons = [c.reason or "" for c in run.cases]
    if len(statuses) != len(cases):
        return MisbehaviourVerdict(mode, False, f"{len(statuses)} results for {len(cases)} cases")
    if mode == "stderr-noise":
        ok = all(s is CaseStatus.PASSED for s in statuses)
        return MisbehaviourVerdict(
            mode, ok, "noise on stderr did not disturb the protocol" if ok else str(reasons)
        )
    if mode == "wrong-version":
        ok = all(
            s is CaseStatus.ERRORED and c.handshake_failed for s, c in zip(statuses, run.cases, strict=True)
        )
        detail = reasons[0] if reasons else ""
        return MisbehaviourVerdict(
            mode, ok, f"every case errored at the handshake: {detail}" if ok else str(reasons)
        )
    if len(statuses) < 2:
        return MisbehaviourVerdict(mode, False, "needs at least two sending cases to show the restart")
    first_errored = statuses[0] is CaseStatus.ERRORED and bool(reasons[0])
    ok = first_errored and all(s is CaseStatus.PASSED for s in statuses[1:])
    detail = f"first case errored ({reasons[0]}); after a restart the rest passed"
    return MisbehaviourVerdict(
        mode, ok, detail if ok else f"statuses {[s.value for s in statuses]}: {reasons}"
    )


def sending_cases(cases: Sequence[AnyCase]) -> list[Case]:
    """The two core cases that send a message: what each misbehaving program is run against (the first
    meets the misbehaviour, the second shows the restart)."""
    return [
        c
        for c in cases
        if isinstance(c, Case) and c.capabilities == ("core",) and any(s.op == "send" for s in c.steps)
    ][:2]


async def run_selftest(
    *,
    timeout: float = SELFTEST_TIMEOUT,
    misbehaviour_timeout: float = MISBEHAVIOUR_TIMEOUT,
    on_progress: Callable[[str], None] | None = None,
    include_misbehaviours: bool = True,
    include_alternatives: bool = True,
    stdio: bool = False,
    jobs: int = 1,
    every_case: bool = False,
    clauses: Collection[str] | None = None,
) -> SelftestReport:
    """Judge every broken implementation, compliant alternative, the store profile's breaks and the
    misbehaving programs.  ``jobs`` above 1 spreads the reference run, the broken implementations, the
    alternatives and the store selftest over that many forked kit processes
    (:mod:`relavium_conformance._run.parallel`), the longest first, while the misbehaving programs
    (which mostly wait on their subprocesses) run in this process: the same verdicts, in the same order,
    reported once all are in.  ``every_case`` runs every citing case of each broken implementation
    (the full ``failed`` lists) instead of stopping once each clause it breaks has a proving failure.
    ``clauses`` narrows the breaks to those citing one of them, and the store profile's item to a set that
    holds a store clause: a verdict proves only clauses its break cites, so the proofs of those clauses
    are a whole selftest's (``run --select ... --with-proofs`` asks for no more)."""
    from relavium_conformance._reference.stdio_server import MISBEHAVIOURS

    cases = load_cases()
    sending = sending_cases(cases)
    wanted = None if clauses is None else frozenset(clauses)
    breaks = [b for b in BROKEN_IMPLEMENTATIONS if wanted is None or wanted & set(b.clauses)]
    with_store = wanted is None or any(clause.startswith("SS-") for clause in wanted)
    # the reference is compared only on the cases a break runs (its citing cases) unless an alternative,
    # judged on every case, needs all of them
    judged = (
        cases
        if wanted is None or include_alternatives
        else _citing(cases, [c for b in breaks for c in b.clauses])
    )
    work: list[_Work] = [
        ("reference", judged),
        *(("broken", broken) for broken in breaks),
        *(("alternative", alt) for alt in (COMPLIANT_ALTERNATIVES if include_alternatives else ())),
        *((("store", None),) if with_store else ()),
    ]
    modes = tuple(MISBEHAVIOURS if include_misbehaviours else ())
    report = SelftestReport()

    async def do(item: _Work) -> Any:
        return await _do(item, cases, timeout, stdio=stdio, every_case=every_case)

    async def misbehaving() -> list[MisbehaviourVerdict]:
        return [await check_misbehaviour(mode, sending, misbehaviour_timeout) for mode in modes]

    if jobs > 1 and fork_available():
        order = sorted(range(len(work)), key=lambda index: -_weight(work[index], cases))
        outcomes, misbehaviours = await map_in_processes_meanwhile(
            lambda item: run_sync(do(item)), work, jobs, misbehaving, order=order
        )
        reference = outcomes[0]
        for item, outcome in zip(work[1:], outcomes[1:], strict=True):
            _record(report, item, outcome, reference, on_progress)
    else:  # one process: reported as each is judged
        reference = await do(work[0])
        for item in work[1:]:
            _record(report, item, await do(item), reference, on_progress)
        misbehaviours = await misbehaving()
    for verdict in misbehaviours:
        _record(report, ("misbehaviour", verdict.mode), verdict, reference, on_progress)
    return report


_Work = tuple[str, Any]
"""One piece of the selftest: the reference run, a broken implementation, a compliant alternative, the
store profile's own selftest (one item) or (recorded only) a misbehaving program's verdict."""


def _weight(item: _Work, cases: Sequence[AnyCase]) -> int:
    """A rough cost of ``item`` in cases run (the scheduling order only: verdicts do not depend on it)."""
    kind, what = item
    if kind == "broken":
        return len(_citing(cases, what.clauses))
    return len(cases) if kind in ("reference", "alternative") else len(cases) // 3


async def _do(item: _Work, cases: Sequence[AnyCase], timeout: float, *, stdio: bool, every_case: bool) -> Any:
    from relavium_conformance._selftest.stores.proofs import run_store_selftest

    kind, what = item
    if kind == "reference":  # on the cases given with the item
        return await _statuses(InProcessAdapter("reference", ReferenceImplementation), what, timeout)
    if kind == "broken":
        return await _run_broken(what, cases, timeout, stdio=stdio, every_case=every_case)
    if kind == "alternative":
        return await _run_alternative(what, cases, timeout)
    return (await run_store_selftest(timeout=timeout)).broken


def _record(
    report: SelftestReport,
    item: _Work,
    outcome: Any,
    reference: RunResult,
    on_progress: Callable[[str], None] | None,
) -> None:
    kind, what = item
    if kind == "broken":
        verdict = _broken_verdict(what, outcome, reference)
        report.broken.append(verdict)
        lines = [f"{'caught' if verdict.caught else 'MISSED'}  {verdict.name}: {verdict.explanation}"]
    elif kind == "alternative":
        accepted = _alternative_verdict(what, outcome, reference)
        report.alternatives.append(accepted)
        lines = [
            f"{'accepted' if accepted.accepted else 'REFUSED'}  compliant alternative {accepted.name}: "
            f"{accepted.explanation}"
        ]
    elif kind == "store":
        report.broken.extend(outcome)
        lines = [f"{'caught' if v.caught else 'MISSED'}  store {v.name}: {v.explanation}" for v in outcome]
    else:
        report.misbehaviours.append(outcome)
        word = "survived" if outcome.ok else "FAILED"
        lines = [f"{word}  misbehaving program ({outcome.mode}): {outcome.detail}"]
    if on_progress:
        for line in lines:
            on_progress(line)
