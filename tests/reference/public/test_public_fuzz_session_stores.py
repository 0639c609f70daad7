"""Fuzzing the reference session stores differentially: the TTL (in-memory) store and the SQLite store
(over an in-memory database) are handed the same ids, owners and entries, and must accept or refuse
each the same way, with only documented errors (``RelaviumError``: the contract's ``SessionError`` or
``InvalidInputError`` for a text no store can keep, see ``reference/_rules/store_text.py``).

Each target runs 300 examples (no per-example deadline); the ids mix ordinary text with lone
surrogates, NUL and non-string values, the values that once made only the SQLite store raise.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference.fuzzkit import HOSTILE

from relavium_reference import InvalidInputError, RelaviumError
from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import _SCHEMA, SqliteSessionStore
from relavium_reference._model.session_store_shapes import SessionError, SessionPlacement

STORE_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Text with every code point class, surrogates included, plus the values that broke one store.
_ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=12)
IDS = (
    _ANY_TEXT
    | st.sampled_from(["s-1", "\ud800", "a\udfffb", "\x00", "x\x00y", "", "\U0001f600", "\ud83d\ude00"])
    | st.sampled_from([None, 1, b"s-1", ["s"], object()])
)


def _clock() -> int:
    return 1_700_000_000_000


def _sqlite_store() -> SqliteSessionStore:
    store = SqliteSessionStore(sqlite3.connect(":memory:", isolation_level=None), _clock)
    with store._write() as db:
        for statement in _SCHEMA:
            db.execute(statement)
    return store


def _outcome(run: Any) -> str:
    """``ok``, or the documented refusal's kind; anything else escapes and fails the test."""
    try:
        asyncio.run(run())
    except InvalidInputError:
        return "invalid_input"
    except SessionError as error:
        return f"session_error:{error.code}"
    return "ok"


_OPERATIONS = st.sampled_from(
    [
        "acquire",
        "touch",
        "release",
        "forget",
        "pin",
        "unpin",
        "owner_of",
        "incarnation_of",
        "fork",
        "register",
        "note_task_run",
        "placed",
    ]
)


async def _apply(store: Any, operation: str, first: Any, second: Any) -> None:
    match operation:
        case "acquire":
            await store.acquire(first)
        case "placed":
            await store.acquire(None, placement=SessionPlacement(scope=second, handle=first))
        case "fork":
            await store.fork(first, second)
        case "register":
            await store.register(first, second)
        case "note_task_run":
            await store.note_task_run(first, second)
        case _:
            await getattr(store, operation)(first)


@STORE_FUZZ
@given(st.lists(st.tuples(_OPERATIONS, IDS, IDS), min_size=1, max_size=6))
def test_both_stores_accept_and_refuse_the_same_ids(steps: list[tuple[str, Any, Any]]) -> None:
    ttl, durable = TtlSessionStore(clock=_clock), _sqlite_store()
    for operation, first, second in steps:
        seen = [
            _outcome(lambda s=store, o=operation, a=first, b=second: _apply(s, o, a, b))  # type: ignore[misc]
            for store in (ttl, durable)
        ]
        assert seen[0] == seen[1], (operation, first, second, seen)
    asyncio.run(durable.dispose())


_ENTRY_VALUES = HOSTILE | _ANY_TEXT | st.sampled_from([{1: "a"}, {"a": {2: 3}}, float("nan"), {b"k": 1}])


@st.composite
def _entries(draw: st.DrawFn) -> list[Any]:
    entries: list[Any] = []
    for number in range(draw(st.integers(min_value=1, max_value=3))):
        entry: Any = {"id": f"e{number}", "parentId": None, "type": "message"}
        for key in draw(st.lists(st.sampled_from(["id", "parentId", "type", "data", "meta"]), max_size=2)):
            entry[key] = draw(_ENTRY_VALUES)
        entries.append(draw(st.just(entry) | HOSTILE) if draw(st.booleans()) else entry)
    return entries


@STORE_FUZZ
@given(_entries())
def test_both_stores_accept_and_refuse_the_same_entries(entries: list[Any]) -> None:
    ttl, durable = TtlSessionStore(clock=_clock), _sqlite_store()

    async def append(store: Any) -> None:
        acquired = await store.acquire("s-1")
        await acquired.session.append(entries)

    seen = [_outcome(lambda s=store: append(s)) for store in (ttl, durable)]
    assert seen[0] == seen[1], (entries, seen)
    asyncio.run(durable.dispose())


@pytest.mark.parametrize("make", [lambda: TtlSessionStore(clock=_clock), _sqlite_store])
def test_a_lone_surrogate_id_is_refused_by_both_stores_naming_the_problem(make: Any) -> None:
    with pytest.raises(InvalidInputError, match="lone surrogate") as refused:
        asyncio.run(make().acquire("a\ud800"))
    assert refused.value.location == "sessionId"
    assert isinstance(refused.value, RelaviumError)
