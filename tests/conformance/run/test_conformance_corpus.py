"""The corpus against every registered adapter (default: the in-process reference engine).

Add ``--relavium-adapter reference-stdio`` (or ``stdio:COMMAND``) to run it over stdio as well.
"""

from __future__ import annotations

from relavium_conformance.pytest_plugin import assert_case_passes


def test_conformance_case(conformance_adapter: str, conformance_case: str) -> None:
    assert_case_passes(conformance_adapter, conformance_case)
