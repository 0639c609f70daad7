"""The second set of broken implementations (issue 10, points 3 and 12) is caught over stdio as well.

``test_kit_selftest.py`` runs every broken implementation in-process; these run the newer ones as a
subprocess (``selftest --serve NAME``) too, so a break that only an in-process adapter could see would
show up here.  A clause counts as proven only when a failure is booked on that very clause.
"""

from __future__ import annotations

import asyncio

import pytest

from relavium_conformance._corpus.cases import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.broken_cases2 import CASE_BREAKS
from relavium_conformance._selftest.broken_ownership import OWNERSHIP_BREAKS
from relavium_conformance._selftest.broken_pure2 import PURE_BREAKS_2
from relavium_conformance._selftest.broken_rules2 import SESSION_BREAKS
from relavium_conformance._selftest.broken_sessions import SIDE_BY_SIDE_BREAKS
from relavium_conformance._selftest.broken_wire2 import WIRE_BREAKS_2
from relavium_conformance._selftest.proofs import _statuses, check_broken
from relavium_conformance._wire.adapters import InProcessAdapter

SECOND_SET = (
    *SESSION_BREAKS,
    *WIRE_BREAKS_2,
    *PURE_BREAKS_2,
    *CASE_BREAKS,
    *SIDE_BY_SIDE_BREAKS,
    *OWNERSHIP_BREAKS,
)


def test_each_break_names_one_rule_and_few_clauses() -> None:
    names = [b.name for b in SECOND_SET]
    assert len(names) == len(set(names))
    assert all(1 <= len(b.clauses) <= 2 for b in SECOND_SET)


@pytest.mark.slow
@pytest.mark.parametrize("broken", SECOND_SET, ids=lambda b: b.name)
def test_broken_is_caught_in_process_and_over_stdio(broken) -> None:  # type: ignore[no-untyped-def]
    cases = [c for c in load_cases() if set(broken.clauses) & set(c.clauses)]

    async def verdict():  # type: ignore[no-untyped-def]
        reference = await _statuses(InProcessAdapter("reference", ReferenceImplementation), cases, 10.0)
        return await check_broken(broken, cases, reference, 10.0, stdio=True)

    found = asyncio.run(verdict())
    assert found.caught, found.explanation
    assert found.transports == ("in-process", "stdio")
    assert set(found.proven) == set(broken.clauses)
