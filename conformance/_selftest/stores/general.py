"""Broken stores of the module-wide rules (clauses SS-GEN-*): isSessionConflict and the durability
declaration.
"""

from __future__ import annotations

from relavium_conformance._reference.session_store_impl import StoreKind, store_capabilities
from relavium_conformance._selftest.stores.registry import store_break_of

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="declaration-contradictory",
    summary="declares durable and process-local at once",
    clauses=("SS-GEN-009",),
    declares=True,
)
def durable_and_process_local(kind: StoreKind) -> tuple[str, ...]:
    """The kind's own declaration with store:process-local added to it."""
    return (*store_capabilities(kind), "store:process-local")


@store_break_of(
    name="conflict-raises-on-unreadable",
    summary="isSessionConflict reads the value unguarded",
    clauses=("SS-GEN-005",),
    replaces="is_session_conflict",
)
def _conflict_unguarded(value: object) -> bool:
    return getattr(value, "code", None) == "conflict" and type(value).__name__ == "SessionError"


@store_break_of(
    name="conflict-by-message",
    summary="isSessionConflict trusts a value that mentions a conflict",
    clauses=("SS-GEN-006",),
    replaces="is_session_conflict",
)
def _conflict_by_message(value: object) -> bool:
    try:
        return "conflict" in str(value).lower() or getattr(value, "code", None) == "conflict"
    except Exception:
        return False


@store_break_of(
    name="conflict-never",
    summary="isSessionConflict is never true",
    clauses=("SS-GEN-003", "SS-GEN-004"),
    replaces="is_session_conflict",
)
def _conflict_never(value: object) -> bool:
    return False
