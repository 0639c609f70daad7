"""One live writer per session in one history.db (KD-DB-9): a second store is refused until the first lets go.

The lease is an exclusive ``flock`` a store takes on its first write of a session; it is released by
``release_writer`` (a cancelled session calls it through its persister), by ``close``, and by the
operating system when the holding process dies.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.reference.enginekit import make_session, run, text_call

from relavium_reference import SessionContext, SqlitePersister
from relavium_reference._host.history_store import HistoryStore, StoreError
from relavium_reference._model.errors import PersistError
from relavium_reference._model.messages import parse_agent_session_record
from relavium_reference._model.records import CostEntry, parse_completed_turn

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the lease is a POSIX flock")


def _record(session_id: str = "s-1") -> Any:
    return parse_agent_session_record(
        {
            "id": session_id,
            "agentSlug": "coder",
            "context": {"workingDir": "/w"},
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
        }
    )


def _turn(text: str) -> Any:
    return parse_completed_turn(
        {
            "user": {"role": "user", "content": [{"type": "text", "text": text}]},
            "terminal": {"role": "assistant", "content": [{"type": "text", "text": f"re {text}"}]},
        }
    )


def _busy(exc: BaseException) -> bool:
    cause = exc.__cause__ if isinstance(exc, PersistError) else exc
    return isinstance(cause, StoreError) and cause.code == "writer_busy"


def test_a_second_store_cannot_write_a_session_another_store_writes(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    with HistoryStore.open(db) as first, HistoryStore.open(db) as second:
        first.create_session(_record())
        first.commit_turn("s-1", _turn("one"))
        with pytest.raises(PersistError) as refused:
            second.commit_turn("s-1", _turn("braided"))
        assert _busy(refused.value)
        with pytest.raises(StoreError) as refused_cost:
            second.record_cost("s-1", CostEntry(model="m", cost_microcents=1))
        assert _busy(refused_cost.value)
        with pytest.raises(StoreError) as refused_marker:
            second.append_marker("s-1", dropped_through_sequence=0, text="")
        assert _busy(refused_marker.value)
        first.commit_turn("s-1", _turn("two"))
        texts = [m.text for m in second.load_messages("s-1")]  # reading needs no lease
        second.create_session(_record("s-2"))  # another session is free
        second.commit_turn("s-2", _turn("other"))
    assert texts == ["one", "re one", "two", "re two"]


def test_release_and_close_hand_the_lease_on(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    first = HistoryStore.open(db)
    second = HistoryStore.open(db)
    third = HistoryStore.open(db)
    try:
        first.create_session(_record())
        first.release_writer("s-1")
        second.commit_turn("s-1", _turn("after release"))
        with pytest.raises(PersistError):
            third.commit_turn("s-1", _turn("still held"))
        second.close()
        third.commit_turn("s-1", _turn("after close"))
        assert len(third.load_messages("s-1")) == 4
    finally:
        for store in (first, second, third):
            store.close()


def test_a_cancelled_session_releases_its_lease(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    with HistoryStore.open(db) as live, HistoryStore.open(db) as other:
        h = make_session(
            calls=[text_call("first reply")],
            persister=SqlitePersister(live),
            session_id="s-live",
            context=SessionContext(working_dir=str(tmp_path)),
        )

        async def start_and_send() -> None:
            await h.session.start()
            await h.session.send_message("hello")

        run(start_and_send())
        with pytest.raises(PersistError) as refused:
            other.commit_turn("s-live", _turn("a second live writer"))
        assert _busy(refused.value)
        run(h.session.cancel())
        other.commit_turn("s-live", _turn("resumed elsewhere"))
        assert [m.text for m in other.load_messages("s-live")] == [
            "hello",
            "first reply",
            "resumed elsewhere",
            "re resumed elsewhere",
        ]


_HOLDER = """
import sys
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._model.messages import parse_agent_session_record
store = HistoryStore.open(sys.argv[1])
stamp = "2026-01-01T00:00:00Z"
store.create_session(parse_agent_session_record({"id": "s-1", "agentSlug": "coder",
    "context": {"workingDir": "/w"}, "createdAt": stamp, "updatedAt": stamp}))
print("holding", flush=True)
sys.stdin.read()
"""


def test_a_killed_writer_leaves_no_stale_lease(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        with HistoryStore.open(db) as store:
            with pytest.raises(PersistError) as refused:
                store.commit_turn("s-1", _turn("while held"))
            assert _busy(refused.value)
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=60)
            store.commit_turn("s-1", _turn("after the crash"))
            assert len(store.load_messages("s-1")) == 2
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=60)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
