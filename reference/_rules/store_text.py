"""What text a session store keeps: the one check every reference store applies to the ids and owner
names it is handed, so the in-memory, SQLite and PostgreSQL stores accept and refuse the same values.

A store text is a ``str`` that UTF-8 can encode and that holds no NUL: a lone surrogate code point (half
of a UTF-16 pair, which Python strings may carry) has no UTF-8 form, and PostgreSQL text cannot hold
NUL, so a durable store could not keep either.  The in-memory store could, but then a host moving from
one store to another would see an id that worked stop working; every store refuses them instead, with
:class:`InvalidInputError` naming the argument and the problem (never the value).  No I/O.
"""

from __future__ import annotations

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.session_store_shapes import SessionPlacement

__all__ = [
    "check_acquire",
    "check_store_text",
    "owner_problem",
    "store_text_problem",
    "task_run_keepable",
]


def store_text_problem(value: object) -> str | None:
    """Why ``value`` cannot be a store text, or ``None`` when it can."""
    if not isinstance(value, str):
        return "must be a string"
    if "\x00" in value:
        return "must not hold NUL"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must not hold a lone surrogate (UTF-8 cannot encode it)"
    return None


def check_store_text(value: object, location: str) -> str:
    """``value`` when it is a store text; else :class:`InvalidInputError` at ``location``."""
    problem = store_text_problem(value)
    if problem is not None:
        raise InvalidInputError(f"a session store {location} {problem}", location=location)
    assert isinstance(value, str)
    return value


def check_acquire(session_id: object, placement: object) -> None:
    """The texts ``acquire`` is handed: the id (when given) and a placement's names (when declared)."""
    if session_id is not None:
        check_store_text(session_id, "sessionId")
    if placement is None:
        return
    if not isinstance(placement, SessionPlacement):
        raise InvalidInputError("a session placement must be a SessionPlacement", location="placement")
    for name, value in (
        ("scope", placement.scope),
        ("parentSessionId", placement.parent_session_id),
        ("rootSessionId", placement.root_session_id),
        ("handle", placement.handle),
    ):
        if value is not None:
            check_store_text(value, f"placement.{name}")


def task_run_keepable(session_id: object, task_id: object, run_id: object) -> bool:
    """Whether ``note_task_run`` can record these texts (a best-effort note that cannot is dropped)."""
    texts = (session_id, task_id) if run_id is None else (session_id, task_id, run_id)
    return all(store_text_problem(value) is None for value in texts)


def owner_problem(owner: object) -> str | None:
    """Why a string owner cannot be kept (a non-string owner is the contract's ``invalid_owner``)."""
    return store_text_problem(owner) if isinstance(owner, str) else None
