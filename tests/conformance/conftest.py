"""Results several test modules judge, computed once per test session.

A whole ``selftest`` (about 45 CPU-seconds) and the SQLite reference store's run of every store case
(about 12) are each read by tests in two modules.  Each is a session fixture, and every test reading it
carries ``xdist_group`` with the fixture's name (``whole-selftest``, ``sqlite-store-run``):
``--dist loadgroup`` (pyproject's addopts) sends a group to one pytest-xdist worker, so the fixture runs
once, not once per worker that meets it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest


@pytest.fixture(scope="session")
def whole_selftest() -> Any:
    """``run_selftest()`` as the ``selftest`` command runs it: every break, alternative, broken store and
    misbehaving program."""
    from relavium_conformance._selftest.proofs import run_selftest

    return asyncio.run(run_selftest())


@pytest.fixture(scope="session")
def sqlite_store_run() -> Any:
    """The in-process SQLite reference store on every store case, its replica cases played by processes
    of its ``-stdio`` twin."""
    from relavium_conformance._connect import replica_factory, resolve_adapter
    from relavium_conformance._store.cases import load_store_cases
    from relavium_conformance._store.runner import run_store_cases

    run, _hello = asyncio.run(
        run_store_cases(
            lambda: resolve_adapter("reference", timeout=60.0),
            load_store_cases(),
            timeout=60.0,
            replicas=replica_factory("reference", timeout=60.0),
        )
    )
    return run
