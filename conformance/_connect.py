"""Adapter names: how a command line, a pytest option or a script names the implementation to test.

* ``reference``: the reference engine, in-process;
* ``reference-stdio``: the reference engine as a subprocess, through the stdio protocol;
* ``reference-ttl``, ``reference-ttl-stdio``: the same with the in-memory TTL session store beside the
  engine instead of the durable SQLite store (both reference adapters serve both profiles);
* ``reference-pg``, ``reference-pg-stdio``: the same with the PostgreSQL session store, on the server
  the libpq connection string in ``RELAVIUM_PG_DSN`` names (unset or unreachable: not started, exit 3);
* ``stdio:COMMAND``: any program speaking the protocol on stdin/stdout (split like a shell would);
* ``broken:NAME``: one of the kit's deliberately broken implementations or stores (``selftest`` lists them),
  in-process: to see what a failure looks like, or to prove a check bites;
* ``python:package.module:factory``: a Python port, in-process.  ``factory`` is called with the kit's
  callback and returns an object with ``hello_result()`` and ``async handle(method, params)`` (see
  ``docs/adapters.md``); ``factory`` may be a dotted attribute path (``module:Class.make``).

Any name may carry a short alias in front, ``ALIAS=NAME`` (``echo=stdio:node echo-adapter.mjs``): the
alias is what reports and pytest ids show.  Without one, :func:`adapter_alias` derives a short name that
never contains a machine path.

This module sits above the rooms: it is the one place that knows the kit's own reference engine
(``_reference/``) as an adapter, so the transports in ``_wire/`` stay free of it.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference``, ``_run``, ``_store``, ``_selftest`` (the rooms below it; tests/test_layering.py holds
the order).
"""

from __future__ import annotations

import importlib
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from relavium_conformance._errors import KitUsageError

if TYPE_CHECKING:  # the adapters load when one is resolved: naming them (``--help``, ``run --list``) is cheap
    from relavium_conformance._reference.session_store_impl import StoreKind
    from relavium_conformance._wire.adapters import Adapter, InProcessImplementation
    from relavium_conformance._wire.protocol import Callback

__all__ = [
    "ADAPTER_NAMES_HELP",
    "REFERENCE_ADAPTERS",
    "adapter_alias",
    "python_factory",
    "reference_stdio_command",
    "replica_factory",
    "resolve_adapter",
    "split_alias",
]

ADAPTER_NAMES_HELP = (
    "reference (in-process), reference-stdio, reference-ttl[-stdio] (the TTL session store), "
    "reference-pg[-stdio] (the PostgreSQL session store, on RELAVIUM_PG_DSN), "
    "stdio:COMMAND (any program), python:MODULE:FACTORY (a Python port, in-process) or broken:NAME "
    "(a broken engine of the selftest); ALIAS=NAME names it"
)

REFERENCE_ADAPTERS: dict[str, StoreKind] = {
    "reference": "sqlite",
    "reference-stdio": "sqlite",
    "reference-ttl": "ttl",
    "reference-ttl-stdio": "ttl",
    "reference-pg": "pg",
    "reference-pg-stdio": "pg",
}
"""The reference adapters and the session store each serves beside the engine."""

_ALIAS = re.compile(r"^(?P<alias>[A-Za-z0-9_.-]+)=(?P<name>.+)$")
_PYTHON = re.compile(r"^python:(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_][\w.]*)$")


def split_alias(name: str) -> tuple[str | None, str]:
    """``ALIAS=NAME`` -> (alias, name); a plain name -> (None, name)."""
    matched = _ALIAS.match(name)
    if matched is None:
        return None, name
    return matched["alias"], matched["name"]


def adapter_alias(name: str) -> str:
    """A short, stable name for reports and test ids: no command line, no machine path."""
    alias, bare = split_alias(name)
    if alias is not None:
        return alias
    if bare in REFERENCE_ADAPTERS:
        return bare
    python = _PYTHON.match(bare)
    if python is not None:
        return f"python:{python['module'].rsplit('.', 1)[-1]}"
    if bare.startswith("stdio:"):
        try:
            words = shlex.split(bare[len("stdio:") :])
        except ValueError:
            words = bare[len("stdio:") :].split()
        programs = [w for w in words if not w.startswith("-") and "=" not in w]
        # the script a runtime runs names the port better than the runtime (node echo-adapter.mjs)
        chosen = programs[-1] if programs else "program"
        return f"stdio:{PurePath(chosen).stem or 'program'}"
    return bare


def reference_stdio_command(store: StoreKind = "sqlite") -> list[str]:
    return [sys.executable, "-m", "relavium_conformance", "stdio-server", "--store", store]


def _reference_factory(store: StoreKind) -> Callable[[Callback], InProcessImplementation]:
    """The engine beside one reference store: one implementation serving both profiles."""

    def make(callback: Callback) -> InProcessImplementation:
        from relavium_conformance._reference.session_store_impl import both_profiles_factory

        return both_profiles_factory(store)(callback)

    return make


def replica_factory(
    name: str, *, validate: Callable[..., None] | None = None, timeout: float = 30.0
) -> Callable[[], Adapter] | None:
    """Connections of the named implementation that each run in a process of their own (the store
    profile's replica cases), or ``None`` when the name gives no way to start one: a ``stdio:`` program
    is its own replica; an in-process reference adapter's replicas are its ``-stdio`` twin."""
    from relavium_conformance._wire.adapters import StdioAdapter

    alias, bare = split_alias(name)
    label = alias or bare
    store = REFERENCE_ADAPTERS.get(bare)
    if store is not None:
        command = reference_stdio_command(store)
        return lambda: StdioAdapter(label, command, validate=validate, request_timeout=timeout)
    if bare.startswith("stdio:") and bare[len("stdio:") :].strip():
        program = bare[len("stdio:") :]
        return lambda: StdioAdapter(label, program, validate=validate, request_timeout=timeout)
    return None


def python_factory(spec: str) -> Callable[[Callback], InProcessImplementation]:
    """The factory named by ``module:attr`` (or ``python:module:attr``), imported now."""
    matched = _PYTHON.match(spec if spec.startswith("python:") else f"python:{spec}")
    if matched is None:
        raise KitUsageError(f"a Python adapter is named python:package.module:factory, not {spec!r}")
    try:
        target: Any = importlib.import_module(matched["module"])
    except ImportError as exc:
        raise KitUsageError(
            f"cannot import {matched['module']!r} for the Python adapter: {exc} "
            "(is it installed, or on PYTHONPATH?)"
        ) from None
    for part in matched["attr"].split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise KitUsageError(f"{matched['module']!r} has no attribute {matched['attr']!r}") from None
    if not callable(target):
        raise KitUsageError(f"{matched['module']}:{matched['attr']} is not callable")
    factory: Callable[[Callback], InProcessImplementation] = target
    return factory


def resolve_adapter(
    name: str, *, validate: Callable[..., None] | None = None, timeout: float = 30.0
) -> Adapter:
    """The adapter a name stands for (see the module documentation for the forms)."""
    from relavium_conformance._wire.adapters import InProcessAdapter, StdioAdapter

    alias, bare = split_alias(name)
    label = alias or bare  # what reports show as the adapter
    store = REFERENCE_ADAPTERS.get(bare)
    if store is not None and bare.endswith("-stdio"):
        command = reference_stdio_command(store)
        return StdioAdapter(label, command, validate=validate, request_timeout=timeout)
    if store is not None:
        return InProcessAdapter(label, _reference_factory(store))
    if bare.startswith("stdio:") and bare[len("stdio:") :].strip():
        return StdioAdapter(label, bare[len("stdio:") :], validate=validate, request_timeout=timeout)
    if bare.startswith("python:"):
        return InProcessAdapter(label, python_factory(bare))
    if bare.startswith("broken:"):
        from relavium_conformance._selftest.breaks import broken_by_name

        try:
            broken = broken_by_name(bare[len("broken:") :])
        except KeyError:
            return _broken_store(label, bare[len("broken:") :])
        return InProcessAdapter(label, broken.factory())
    raise KitUsageError(f"unknown adapter {name!r}{_did_you_mean(bare)}: use {ADAPTER_NAMES_HELP}")


def _broken_store(label: str, name: str) -> Adapter:
    """``broken:NAME`` for a broken session store of the selftest (``_selftest/stores/``), in-process."""
    from relavium_conformance._selftest.stores import BROKEN_STORES
    from relavium_conformance._wire.adapters import InProcessAdapter

    found = [b for b in BROKEN_STORES if b.name == name]
    if not found:
        raise KitUsageError(f"no broken implementation is named {name!r}")
    return InProcessAdapter(label, lambda _callback: found[0].implementation())


def _did_you_mean(bare: str) -> str:
    """`` (did you mean X?)`` for a mistyped adapter name or ``KIND:`` prefix, or nothing."""
    import difflib  # (only a mistyped name needs it)

    kinds = ("stdio:", "python:", "broken:")
    head, colon, rest = bare.partition(":")
    if colon:
        close = difflib.get_close_matches(head + colon, kinds, n=1, cutoff=0.6)
        return f" (did you mean {close[0]}{rest}?)" if close else ""
    close = difflib.get_close_matches(bare, list(REFERENCE_ADAPTERS), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
