"""The session-store contract's pure helpers."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._model.session_store_shapes import SessionError, SessionErrorCode
from relavium_reference._rules.session_store_helpers import (
    bounded_tail,
    has_conversation_content,
    has_session_fork,
    is_session_conflict,
)


def entry(entry_id: str, kind: str = "message", **extra: Any) -> dict[str, Any]:
    return {"id": entry_id, "parentId": None, "type": kind, **extra}


def test_bounded_tail_floors_at_the_latest_compaction() -> None:
    path = [
        entry("a"),
        entry("b"),
        entry("c1", "compaction", firstKeptEntryId="b"),
        entry("d"),
        entry("c2", "compaction", firstKeptEntryId="d"),
        entry("e"),
    ]
    before = copy.deepcopy(path)
    tail, floor = bounded_tail(path)
    assert floor == "d"
    assert [e["id"] for e in tail] == ["d", "c2", "e"]
    assert path == before


def test_bounded_tail_without_compaction_or_off_path_floor_returns_all() -> None:
    path = [entry("a"), entry("b")]
    assert bounded_tail(path) == (path, None)
    off = [entry("a"), entry("c", "compaction", firstKeptEntryId="zz")]
    assert bounded_tail(off) == (off, None)


@given(st.lists(st.sampled_from(["message", "compaction", "session_info"]), max_size=12))
def test_bounded_tail_is_a_suffix(kinds: list[str]) -> None:
    path = [entry(f"e{i}", k, firstKeptEntryId=f"e{max(i - 1, 0)}") for i, k in enumerate(kinds)]
    tail, floor = bounded_tail(path)
    assert tail == path[len(path) - len(tail) :]
    if floor is None:
        assert tail == path
    else:
        assert tail[0]["id"] == floor


def test_has_conversation_content_counts_messages_only() -> None:
    assert not has_conversation_content([entry("a", "session_info"), entry("b", "model_change")])
    assert has_conversation_content([entry("a", "session_info"), entry("b")])
    assert not has_conversation_content([])


class Unreadable:
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError("no reading me")


def test_is_session_conflict_is_guarded_and_keeps_the_class_test() -> None:
    assert is_session_conflict(SessionError(SessionErrorCode.CONFLICT, "lost the leaf"))
    assert not is_session_conflict(SessionError(SessionErrorCode.NOT_FOUND, "conflict"))
    assert not is_session_conflict(RuntimeError("write conflict"))
    assert not is_session_conflict(Unreadable())
    assert not is_session_conflict(None)
    assert not is_session_conflict({"code": "conflict"})


def test_has_session_fork() -> None:
    assert has_session_fork(TtlSessionStore())
    assert not has_session_fork(object())
    assert not has_session_fork(Unreadable())
