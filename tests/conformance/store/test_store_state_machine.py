"""The store state machine, run against both reference stores in-process (and able to fail)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from relavium_conformance._reference.session_store_impl import (
    ReferenceStoreImplementation,
    store_capabilities,
)
from relavium_conformance._selftest.stores import BROKEN_STORES
from relavium_conformance._store.protocol import declaration_of
from relavium_conformance._store.state_machine import store_machine
from relavium_conformance._wire.adapters import Adapter, InProcessAdapter

SETTINGS = settings(
    max_examples=10,
    stateful_step_count=15,
    deadline=None,
    report_multiple_bugs=False,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _factory(make: object) -> object:
    def factory() -> Adapter:
        return InProcessAdapter("model", lambda _cb: make())  # type: ignore[operator]

    return factory


@pytest.mark.parametrize("kind", ["sqlite", "ttl"])
def test_the_reference_stores_agree_with_the_model(kind: str) -> None:
    machine = store_machine(
        _factory(lambda: ReferenceStoreImplementation(kind)),  # type: ignore[arg-type]
        declaration_of(store_capabilities(kind)),  # type: ignore[arg-type]
    )
    run_state_machine_as_test(machine, settings=SETTINGS)


@pytest.mark.parametrize("name", ["forget-deletes", "register-overwrites", "fork-drops-ownership"])
def test_the_model_catches_a_broken_store(name: str) -> None:
    [broken] = [b for b in BROKEN_STORES if b.name == name]
    machine = store_machine(
        _factory(broken.implementation), declaration_of(store_capabilities("sqlite")), ("s1",)
    )  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=100))
