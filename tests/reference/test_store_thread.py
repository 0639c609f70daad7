"""The store thread: every history.db call of a persister runs on one thread, in order, off the loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from relavium_reference import SessionStore, SqlitePersister
from relavium_reference._host.store_thread import StoreThread
from relavium_reference._model.budget import UsagePending, UsageResolved
from relavium_reference._model.messages import parse_agent_session_record
from relavium_reference._model.vocabulary import ProviderId


def test_calls_run_in_order_on_one_thread_that_is_not_the_loops() -> None:
    async def scenario() -> tuple[list[int], set[int], int]:
        thread = StoreThread()
        seen: list[int] = []
        idents: set[int] = set()

        def call(index: int) -> int:
            idents.add(threading.get_ident())
            seen.append(index)
            return index * 2

        results = await asyncio.gather(*(thread.run(call, i) for i in range(50)))
        thread.close()
        assert results == [i * 2 for i in range(50)]
        return seen, idents, threading.get_ident()

    seen, idents, loop_ident = asyncio.run(scenario())
    assert seen == list(range(50))
    assert len(idents) == 1
    assert loop_ident not in idents


def test_an_exception_comes_back_to_the_awaiting_task() -> None:
    def boom() -> None:
        raise ValueError("refused")

    async def scenario() -> None:
        thread = StoreThread()
        with pytest.raises(ValueError, match="refused"):
            await thread.run(boom)
        assert await thread.run(lambda: 7) == 7  # the thread survives a failed call
        thread.close()

    asyncio.run(scenario())


def test_a_persister_and_its_usage_writer_share_one_store_thread(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "history.db")
    idents: set[int] = set()
    original = store.usage_write

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        idents.add(threading.get_ident())
        return original(*args, **kwargs)

    store.usage_write = recording  # type: ignore[method-assign]

    async def scenario() -> None:
        persister = SqlitePersister(store)
        await persister.create_session(
            parse_agent_session_record(
                {
                    "id": "s1",
                    "agentSlug": "coder",
                    "context": {"workingDir": "/w"},
                    "createdAt": "2026-03-01T10:00:00Z",
                    "updatedAt": "2026-03-01T10:00:00Z",
                }
            )
        )
        writer = persister.usage_writer("s1", {})
        await writer.open("fresh")
        for attempt in (1, 2):
            await writer.pending(
                UsagePending(attempt=attempt, purpose="turn", provider=ProviderId.OPENAI, model="m")
            )
            await writer.resolved(
                UsageResolved(attempt=attempt, purpose="turn", model="m", input_tokens=1, output_tokens=1)
            )

    try:
        asyncio.run(scenario())
    finally:
        store.close()
    assert len(idents) == 1
    assert threading.get_ident() not in idents
