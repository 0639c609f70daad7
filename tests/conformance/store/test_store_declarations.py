"""Store declarations: a store that rejects requireExisting, and optional methods judged one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from relavium_conformance._reference.session_store_impl import (
    ReferenceStoreImplementation,
    store_capabilities,
)
from relavium_conformance._report.results import CaseResult, CaseStatus, RunResult, aggregate_clauses
from relavium_conformance._selftest.stores import BROKEN_STORES
from relavium_conformance._selftest.stores.lifecycle import RejectsRequireExisting, rejecting_declaration
from relavium_conformance._store.cases import AnyStoreCase, StoreCase, load_store_cases
from relavium_conformance._store.execute import OPTION_CLAUSE
from relavium_conformance._store.protocol import FACES, REJECTS_REQUIRE_EXISTING, declaration_of
from relavium_conformance._store.runner import run_store_cases
from relavium_conformance._wire.adapters import Adapter, InProcessAdapter

METHOD_FACES = frozenset(FACES) - {"replicas"}

NEEDS_TWO_METHODS = {
    # clause -> why no case can judge it with one optional method alone
    "SS-FORK-001": "forkedFrom is a field of the list() summary",
    "SS-FORK-002": "forkedFrom is a field of the list() summary",
    "SS-FORK-011": "a fork's ownership is read with ownerOf",
    "SS-FORK-012": "a fork's ownership is read with ownerOf",
    "SS-FORK-013": "a fork's ownership is read with ownerOf",
    "SS-PLACE-001": "the partition is seen by listPlaced showing and list() leaving out a placed session",
    "SS-PLACE-002": "the partition is seen by listPlaced showing and list() leaving out a placed session",
    "SS-PLACE-006": "placed sessions stay off list(); listPlaced proves they exist",
    "SS-PLACE-008": "placed sessions stay off list() after a restart; listPlaced proves they exist",
    "SS-PLACE-011": "placed sessions stay off list() after a restart; listPlaced proves they exist",
    "SS-PLACE-012": "placed sessions stay off list(); listPlaced proves they exist",
    "SS-PLACE-018": "placed sessions stay off list(); listPlaced proves they exist",
    "SS-RUN-003": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-008": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-010": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-011": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-018": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-019": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-022": "what noteTaskRun records is read in the list() summary",
    "SS-RUN-024": "what noteTaskRun records is read in the list() summary",
}


def _run(
    make: type[object] | None, capabilities: tuple[str, ...], cases: Sequence[AnyStoreCase]
) -> RunResult:
    def opener(location: str, clock: object) -> object:
        assert make is not None
        return make.open(location, clock=clock)  # type: ignore[attr-defined]

    def factory() -> Adapter:
        return InProcessAdapter(
            "declared",
            lambda _cb: ReferenceStoreImplementation(
                "sqlite",
                opener=opener if make else None,
                capabilities=capabilities,
            ),
        )

    run, _hello = asyncio.run(run_store_cases(factory, cases, timeout=30.0))
    return run


def _local(cases: Sequence[AnyStoreCase]) -> list[AnyStoreCase]:
    return [c for c in cases if not c.in_processes]  # in-process: no processes of their own


def test_the_declaration_word_reads_as_a_refusal_of_the_option() -> None:
    plain = declaration_of(store_capabilities("sqlite"))
    rejecting = declaration_of((*store_capabilities("sqlite"), REJECTS_REQUIRE_EXISTING))
    assert not plain.rejects_require_existing
    assert "requireExisting" in plain.needs()
    assert rejecting.rejects_require_existing
    assert "requireExisting" not in rejecting.needs()
    assert "rejects-requireExisting" in rejecting.needs()


def test_a_store_that_declares_it_rejects_require_existing_passes() -> None:
    cases = _local(load_store_cases())
    run = _run(RejectsRequireExisting, rejecting_declaration("sqlite"), cases)
    failures = {c.id: c.reason for c in run.cases if c.is_failure}
    assert not failures, failures
    by_id = {c.id: c for c in run.cases}
    assert by_id["store/require-existing-missing"].status is CaseStatus.UNSUPPORTED
    assert by_id["store/placement-ordinary-require-existing"].status is CaseStatus.UNSUPPORTED
    narrowed = [c for c in run.cases if c.clauses == (OPTION_CLAUSE,) and c.warnings]
    users = [c for c in cases if isinstance(c, StoreCase) and c.uses_require_existing and not c.scenario]
    assert {c.id for c in narrowed} == {c.id for c in users} - {
        "store/require-existing-missing",
        "store/placement-ordinary-require-existing",
        "store/require-existing-never-creates",  # written error: any, run as it is
    }
    clauses = {c.id: c.status for c in run.clauses}
    assert clauses[OPTION_CLAUSE] == "passed"
    assert clauses["SS-LIFE-006"] == "unsupported"  # the check itself: declared not implemented
    # every clause once judged only by cases with the option is judged by one without it now
    for clause in (
        "SS-FORK-004",
        "SS-FORK-006",
        "SS-FORK-009",
        "SS-FORK-014",
        "SS-GEN-007",
        "SS-LIFE-003",
        "SS-LIFE-004",
        "SS-LIFE-005",
        "SS-LIFE-012",
        "SS-LIFE-016",
        "SS-PLACE-003",
        "SS-PLACE-014",
        "SS-PLACE-015",
        "SS-PLACE-016",
        "SS-REG-005",
        "SS-INC-002",
    ):
        assert clauses[clause] == "passed", (clause, clauses[clause])


def test_the_same_store_not_declaring_it_fails_the_require_existing_cases() -> None:
    cases = _local(load_store_cases())
    run = _run(RejectsRequireExisting, store_capabilities("sqlite"), cases)
    failed = {c.id for c in run.cases if c.is_failure}
    users = {c.id for c in cases if c.uses_require_existing and not c.in_processes}
    assert "store/require-existing-missing" in failed
    # every case that uses the option, and only those, fails; the one written to accept a refusal passes
    assert failed == users - {"store/require-existing-never-creates"}
    assert len(failed) == 12
    assert "store/require-existing-never-creates" not in failed  # a refusal is what it allows


def test_a_declared_rejection_that_answers_the_option_fails_on_ss_life_007() -> None:
    [broken] = [b for b in BROKEN_STORES if b.name == "declared-rejection-creates"]
    cases = [
        c
        for c in load_store_cases()
        if c.id in ("store/require-existing-never-creates", "store/durable-restart")
    ]
    run, _hello = asyncio.run(
        run_store_cases(lambda: InProcessAdapter("broken", lambda _cb: broken.implementation()), cases)
    )
    assert [c.status for c in run.cases] == [CaseStatus.FAILED, CaseStatus.FAILED]
    assert all(set(c.booked_clauses()) == {OPTION_CLAUSE} for c in run.cases)


def test_a_clause_of_an_optional_method_is_judged_without_another_undeclared_one() -> None:
    """For each clause the kit judges with an optional method, some citing case needs that method
    alone (besides declarations such as durable or clock), unless the clause truly reads two."""
    citing: dict[str, list[frozenset[str]]] = {}
    for case in load_store_cases():
        for clause in case.clauses:
            citing.setdefault(clause, []).append(frozenset(case.needs) & METHOD_FACES)
    tangled = {
        clause: sorted(sorted(f) for f in faces)
        for clause, faces in citing.items()
        if min(len(f) for f in faces) > 1 and clause not in NEEDS_TWO_METHODS
    }
    assert not tangled, tangled


def test_omitting_forget_leaves_fork_and_incarnation_judged() -> None:
    without = tuple(w for w in store_capabilities("sqlite") if w != "store:forget")
    run = _run(None, without, _local(load_store_cases()))
    clauses = {c.id: c.status for c in run.clauses}
    for clause in ("SS-FORK-004", "SS-FORK-006", "SS-INC-001", "SS-INC-002", "SS-INC-004"):
        assert clauses[clause] in ("passed", "unsupported"), clauses[clause]
    assert clauses["SS-FORK-004"] == "passed"
    assert clauses["SS-INC-002"] == "passed"
    assert clauses["SS-LIFE-012"] == "unsupported"  # forget's own clause names the missing method
    [forget] = [c for c in run.cases if c.id == "store/forget-keeps-history"]
    assert forget.reason is not None
    assert "store:forget" in forget.reason


def test_a_clause_whose_every_case_was_unsupported_is_unsupported_never_passed() -> None:
    def result(case_id: str, status: CaseStatus) -> CaseResult:
        reason = None if status is CaseStatus.PASSED else "needs undeclared store capability store:forget"
        return CaseResult(
            id=case_id, title="t", area="store", status=status, clauses=("SS-FORK-006",), reason=reason
        )

    class Clause:
        id = "SS-FORK-006"
        status = "testable"

    [alone] = aggregate_clauses([result("store/a", CaseStatus.UNSUPPORTED)], [Clause()])
    assert alone.status == "unsupported"
    [mixed] = aggregate_clauses(
        [result("store/a", CaseStatus.UNSUPPORTED), result("store/b", CaseStatus.PASSED)], [Clause()]
    )
    assert mixed.status != "passed"


def test_the_kit_reopens_in_claim_form_only_for_a_store_that_rejects_the_option() -> None:
    from relavium_conformance._store.execute import ConnectionPool, StoreWorld

    pool = ConnectionPool(
        lambda: InProcessAdapter("unused", lambda _cb: ReferenceStoreImplementation("sqlite"))
    )
    plain = StoreWorld(pool, "/nowhere", declaration_of(store_capabilities("sqlite")), 1.0)
    rejecting = StoreWorld(pool, "/nowhere", declaration_of(rejecting_declaration("sqlite")), 1.0)
    assert plain.reopen("s") == {"sessionId": "s", "requireExisting": True}
    assert rejecting.reopen("s") == {"sessionId": "s"}
    assert rejecting.refuses_option
    assert not plain.refuses_option
    processes = {c.id for c in load_store_cases() if c.in_processes}
    assert "store/durable-kill-restart" in processes
    assert all(c.startswith("store/replica-") for c in processes - {"store/durable-kill-restart"})


def _declared_factory(make: type[object], capabilities: tuple[str, ...]) -> object:
    def opener(location: str, clock: object) -> object:
        return make.open(location, clock=clock)  # type: ignore[attr-defined]

    def factory() -> Adapter:
        return InProcessAdapter(
            "declared",
            lambda _cb: ReferenceStoreImplementation("sqlite", opener=opener, capabilities=capabilities),
        )

    return factory


def test_generated_programs_judge_the_option_as_the_store_declares_it() -> None:
    """A store declaring store:rejects-requireExisting: generation expects the option refused (SS-LIFE-007),
    so the compliant one passes, and one that answers it is found, the case replaying as a failure (not
    unsupported: the history's model judges the declared refusal itself)."""
    from relavium_conformance._store.generation import catch_by_generation, fuzz_store

    declared = rejecting_declaration("sqlite")
    declaration = declaration_of(declared)
    compliant = fuzz_store(
        _declared_factory(RejectsRequireExisting, declared), declaration, examples=60, seed=0
    )
    assert compliant.failure is None, compliant.message
    [broken] = [b for b in BROKEN_STORES if b.name == "declared-rejection-creates"]

    def broken_factory() -> Adapter:
        return InProcessAdapter(broken.name, lambda _cb: broken.implementation())

    found = catch_by_generation(broken_factory, declaration_of(tuple(broken.implementation().capabilities)))
    assert found is not None
    replay, _hello = asyncio.run(run_store_cases(broken_factory, [found.case]))
    assert [c.status for c in replay.cases] == [CaseStatus.FAILED], replay.cases
