"""``selftest``: proof that the kit's cases bite and that the runner survives a misbehaving program.

1. Every deliberately broken implementation (``_broken.py``) is run against the cases that cite the
   clauses it breaks.  It is **caught** when at least one of those cases fails or errors, while the
   reference engine passes all of them (so the failure is the break's doing, not the case's).
2. The reference stdio server is run in each misbehaving mode (crash, hang, garbage line, stderr noise,
   wrong protocol version): the run must finish, every case must have a result, the broken ones must be
   ``errored`` with a reason, and after a restart the next case must pass.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relavium_conformance._corpus.cases import AnyCase, Case, load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseStatus, RunResult
from relavium_conformance._run.parallel import fork_available, map_in_processes
from relavium_conformance._run.runner import run_cases
from relavium_conformance._selftest.broken import BROKEN_IMPLEMENTATIONS, BrokenImplementation
from relavium_conformance._selftest.compliant import COMPLIANT_ALTERNATIVES, CompliantAlternative
from relavium_conformance._wire.adapters import InProcessAdapter, StdioAdapter

__all__ = [
    "AlternativeVerdict",
    "BrokenVerdict",
    "MisbehaviourVerdict",
    "SelftestReport",
    "check_alternative",
    "check_broken",
    "run_selftest",
]


@dataclass(frozen=True)
class BrokenVerdict:
    name: str
    rule: str
    clauses: tuple[str, ...]
    cases: tuple[str, ...]
    failed: tuple[str, ...]
    reference_failed: tuple[str, ...]
    proven: tuple[str, ...] = ()  # the broken clauses on which some failure was booked
    transports: tuple[str, ...] = ("in-process",)  # where it was caught (every one it was run on)

    @property
    def caught(self) -> bool:
        return bool(self.cases) and bool(self.failed) and not self.reference_failed and bool(self.proven)

    @property
    def explanation(self) -> str:
        if not self.cases:
            return "no case cites " + ", ".join(self.clauses)
        if self.reference_failed:
            return "the reference fails these cases too: " + ", ".join(self.reference_failed)
        if not self.failed:
            return f"all {len(self.cases)} citing cases still pass"
        if not self.proven:
            return "its cases fail, but on other clauses than " + ", ".join(self.clauses)
        return f"{len(self.failed)} of {len(self.cases)} citing cases fail: " + ", ".join(self.failed)


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
    outcome = await run_cases(adapter, cases, timeout=timeout, snapshots=False)
    return outcome.run


def serve_command(name: str) -> list[str]:
    """The command serving the broken implementation or alternative ``name`` over stdio."""
    return [sys.executable, "-m", "relavium_conformance", "selftest", "--serve", name]


async def check_broken(
    broken: BrokenImplementation,
    cases: Sequence[AnyCase],
    reference: RunResult,
    timeout: float,
    *,
    stdio: bool = False,
) -> BrokenVerdict:
    """Run the cases citing ``broken``'s clauses against it (in-process; with ``stdio`` also as a
    subprocess): caught when some of them fail on a broken clause, on every transport, while the
    reference passes them all."""
    citing = _citing(cases, broken.clauses)
    failed: tuple[str, ...] = ()
    proven: set[str] = set(broken.clauses)
    transports: list[str] = []
    adapters: list[InProcessAdapter | StdioAdapter] = []
    if citing:
        adapters.append(InProcessAdapter(f"broken:{broken.name}", broken.factory()))
        if stdio:
            adapters.append(StdioAdapter(f"broken:{broken.name}", serve_command(broken.name)))
    for adapter in adapters:
        run = await _statuses(adapter, citing, timeout)
        failures = [c for c in run.cases if c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)]
        failed = tuple(dict.fromkeys([*failed, *(c.id for c in failures)]))
        proven &= {clause for c in failures for clause in c.booked_clauses()}
        transports.append("stdio" if isinstance(adapter, StdioAdapter) else "in-process")
    ids = {c.id for c in citing}
    # a case the reference itself cannot run (an undeclared capability) proves nothing either way
    reference_failed = tuple(
        c.id for c in reference.cases if c.id in ids and c.status in (CaseStatus.FAILED, CaseStatus.ERRORED)
    )
    return BrokenVerdict(
        name=broken.name,
        rule=broken.rule,
        clauses=broken.clauses,
        cases=tuple(sorted(ids)),
        failed=failed,
        reference_failed=reference_failed,
        proven=tuple(sorted(proven)) if adapters else (),
        transports=tuple(transports),
    )


async def check_alternative(
    alternative: CompliantAlternative, cases: Sequence[AnyCase], reference: RunResult, timeout: float
) -> AlternativeVerdict:
    """Run the whole corpus against ``alternative``: whatever the reference passes, it must pass."""
    adapter = InProcessAdapter(f"alternative:{alternative.name}", alternative.factory())
    run = await _statuses(adapter, cases, timeout)
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


async def run_selftest(
    *,
    timeout: float = 10.0,
    misbehaviour_timeout: float = 3.0,
    on_progress: Callable[[str], None] | None = None,
    include_misbehaviours: bool = True,
    include_alternatives: bool = True,
    stdio: bool = False,
    jobs: int = 1,
) -> SelftestReport:
    """``jobs`` above 1 judges the broken implementations on that many forked kit processes
    (:mod:`relavium_conformance._run.parallel`): the same verdicts, in the same order."""
    cases = load_cases()
    reference = await _statuses(InProcessAdapter("reference", ReferenceImplementation), cases, timeout)
    report = SelftestReport()

    def judge(broken: BrokenImplementation) -> BrokenVerdict:
        return asyncio.run(check_broken(broken, cases, reference, timeout, stdio=stdio))

    from relavium_conformance._reference.stdio_server import MISBEHAVIOURS

    parallel = jobs > 1 and fork_available()
    if parallel:
        verdicts = map_in_processes(judge, BROKEN_IMPLEMENTATIONS, jobs)
    else:
        verdicts = [
            await check_broken(b, cases, reference, timeout, stdio=stdio) for b in BROKEN_IMPLEMENTATIONS
        ]
    for broken, verdict in zip(BROKEN_IMPLEMENTATIONS, verdicts, strict=True):
        report.broken.append(verdict)
        if on_progress:
            on_progress(f"{'caught' if verdict.caught else 'MISSED'}  {broken.name}: {verdict.explanation}")
    sending = [
        c
        for c in cases
        if isinstance(c, Case) and c.capabilities == ("core",) and any(s.op == "send" for s in c.steps)
    ][:2]
    later: list[_Later] = [
        *(
            ("alternative", alternative)
            for alternative in (COMPLIANT_ALTERNATIVES if include_alternatives else ())
        ),
        ("store", None),
        *(("misbehaviour", mode) for mode in (MISBEHAVIOURS if include_misbehaviours else ())),
    ]

    def check(item: _Later) -> Any:
        return _check_later(item, cases, reference, timeout, misbehaviour_timeout, sending)

    if parallel:  # the same checks, each in a forked process of its own; reported in this order
        outcomes = map_in_processes(lambda item: asyncio.run(check(item)), later, jobs)
    else:
        outcomes = [await check(item) for item in later]
    for (kind, _what), outcome in zip(later, outcomes, strict=True):
        _record(report, kind, outcome, on_progress)
    return report


_Later = tuple[str, Any]
"""One check after the broken implementations: a compliant alternative, the store profile's own
selftest (one item) or a misbehaving program."""


async def _check_later(
    item: _Later,
    cases: Sequence[AnyCase],
    reference: RunResult,
    timeout: float,
    misbehaviour_timeout: float,
    sending: Sequence[AnyCase],
) -> Any:
    from relavium_conformance._selftest.store_proofs import run_store_selftest

    kind, what = item
    if kind == "alternative":
        return await check_alternative(what, cases, reference, timeout)
    if kind == "store":
        return (await run_store_selftest(timeout=timeout)).broken
    return await check_misbehaviour(what, sending, misbehaviour_timeout)


def _record(
    report: SelftestReport, kind: str, outcome: Any, on_progress: Callable[[str], None] | None
) -> None:
    if kind == "alternative":
        report.alternatives.append(outcome)
        lines = [
            f"{'accepted' if outcome.accepted else 'REFUSED'}  compliant alternative {outcome.name}: "
            f"{outcome.explanation}"
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
