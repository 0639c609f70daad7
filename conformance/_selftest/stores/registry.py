"""The shape of a broken session store, and the decorator that registers one.

A broken store is defined once, in the module of its first clause's area under
:mod:`relavium_conformance._selftest.stores`, and registered where it is defined by
:func:`store_break_of`.  :mod:`relavium_conformance._selftest.stores` imports every area module and
reads the registry back.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from relavium_conformance._errors import KitError
from relavium_conformance._reference.session_store_impl import (
    REFERENCE_STORE_PURE,
    ReferenceStoreImplementation,
    StoreKind,
    StorePure,
    store_capabilities,
)

__all__ = ["BrokenStore", "registered_stores", "store_break_of", "where_defined"]

_Target = TypeVar("_Target")


@dataclass(frozen=True)
class BrokenStore:
    name: str
    rule: str
    clauses: tuple[str, ...]
    kind: StoreKind = "sqlite"
    store: type[Any] | None = None
    pure: StorePure = REFERENCE_STORE_PURE
    capabilities: tuple[str, ...] | None = None
    per_instance_storage: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def implementation(self) -> ReferenceStoreImplementation:
        opener = None
        if self.store is not None:
            cls = self.store
            if self.kind == "sqlite":

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    where = tempfile.mkdtemp(prefix="broken-") if self.per_instance_storage else location
                    return cls.open(where, clock=clock)

            elif self.kind == "pg":

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    from relavium_conformance._reference.session_store_pg import open_kit_store

                    return open_kit_store(location, clock, store_class=cls)

            else:

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    return cls(clock=clock)

        return ReferenceStoreImplementation(
            self.kind,
            opener=opener,
            pure=self.pure,
            capabilities=self.capabilities
            if self.capabilities is not None
            else store_capabilities(self.kind),
            name=f"broken:{self.name}",
        )


_REGISTERED: dict[str, BrokenStore] = {}
_DEFINED_IN: dict[str, str] = {}  # broken store name -> the module its decorated definition lives in


def _broken_store(
    name: str, summary: str, clauses: tuple[str, ...], target: Any, how: dict[str, Any]
) -> BrokenStore:
    kind: StoreKind = how["kind"]
    if how["replaces"] is not None:
        if not hasattr(REFERENCE_STORE_PURE, how["replaces"]):
            raise KitError(f"store break {name}: the reference has no pure helper {how['replaces']!r}")
        pure = replace(REFERENCE_STORE_PURE, **{how["replaces"]: target})
        return BrokenStore(name, summary, clauses, kind=kind, pure=pure)
    if how["declares"]:
        return BrokenStore(name, summary, clauses, kind=kind, capabilities=tuple(target(kind)))
    if not isinstance(target, type):
        raise KitError(f"store break {name}: {target!r} is not a store class")
    declaring = how["declaring"]
    return BrokenStore(
        name,
        summary,
        clauses,
        kind=kind,
        store=target,
        per_instance_storage=how["per_instance_storage"],
        capabilities=None if declaring is None else tuple(declaring(kind)),
        extra={"processes": True} if how["processes"] else {},
    )


def store_break_of(
    *,
    name: str,
    summary: str,
    clauses: tuple[str, ...],
    kind: StoreKind = "sqlite",
    replaces: str | None = None,
    declares: bool = False,
    per_instance_storage: bool = False,
    declaring: Callable[[StoreKind], tuple[str, ...]] | None = None,
    processes: bool = False,
) -> Callable[[_Target], _Target]:
    """Register the decorated definition as the broken store ``name`` (of ``kind``) and return it
    unchanged.

    The definition is one of: a store class (opened as the reference opens its own; with
    ``per_instance_storage`` every opening gets a folder of its own), with ``replaces`` the function that
    takes the place of the reference store's pure helper of that name, or with ``declares`` a function
    answering, for the kind, the capability declaration the store makes instead of its own (a store
    class with ``declaring``: that function gives the class's declaration; with ``processes`` the
    selftest also runs it in processes of its own, for the cases that kill one).  Raises
    :class:`KitError` for a name registered twice or a definition of none of these kinds."""
    how: dict[str, Any] = {
        "kind": kind,
        "replaces": replaces,
        "declares": declares,
        "per_instance_storage": per_instance_storage,
        "declaring": declaring,
        "processes": processes,
    }

    def register(target: _Target) -> _Target:
        if name in _REGISTERED:
            raise KitError(f"store break {name} is registered twice")
        _REGISTERED[name] = _broken_store(name, summary, clauses, target, how)
        _DEFINED_IN[name] = getattr(target, "__module__", "")
        return target

    return register


def registered_stores() -> tuple[BrokenStore, ...]:
    """Every broken store registered so far, in the order of registration."""
    return tuple(_REGISTERED.values())


def where_defined() -> dict[str, str]:
    """Broken store name -> the module its registered definition lives in."""
    return dict(_DEFINED_IN)
