"""Adapter names: how a name on the command line (or in the pytest plugin) becomes an adapter.

``reference`` (the in-process reference engine), ``reference-stdio`` (the reference engine as a
subprocess, through the stdio protocol), ``stdio:COMMAND`` (any program).  This sits above the
transports and the reference adapter, so the transports never import the engine.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from relavium_conformance._errors import KitUsageError
from relavium_conformance._wire.adapters import (
    Adapter,
    InProcessAdapter,
    InProcessImplementation,
    StdioAdapter,
)
from relavium_conformance._wire.protocol import Callback

__all__ = ["reference_stdio_command", "resolve_adapter"]


def _reference_factory(callback: Callback) -> InProcessImplementation:
    from relavium_conformance._reference.impl import ReferenceImplementation

    return ReferenceImplementation(callback)


def reference_stdio_command() -> list[str]:
    return [sys.executable, "-m", "relavium_conformance", "stdio-server"]


def resolve_adapter(
    name: str, *, validate: Callable[..., None] | None = None, timeout: float = 30.0
) -> Adapter:
    """``reference`` | ``reference-stdio`` | ``stdio:COMMAND``."""
    if name == "reference":
        return InProcessAdapter("reference", _reference_factory)
    if name == "reference-stdio":
        return StdioAdapter(name, reference_stdio_command(), validate=validate, request_timeout=timeout)
    if name.startswith("stdio:") and name[len("stdio:") :].strip():
        return StdioAdapter(name, name[len("stdio:") :], validate=validate, request_timeout=timeout)
    raise KitUsageError(f"unknown adapter {name!r}: use reference, reference-stdio or stdio:COMMAND")
