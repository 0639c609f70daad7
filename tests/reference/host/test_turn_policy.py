"""setTurnPolicy: advertise filter and approval hook, snapshotted at turn start, inert once cancelled."""

from __future__ import annotations

import asyncio

from tests.reference.enginekit import GatedProvider, make_session, run, text_call, tool_call

from relavium_reference import ApprovalRequest, TurnPolicy
from relavium_reference._model.llm import StopChunk, TextDelta, ToolCallEnd, ToolCallStart, Usage


def _approve_all() -> TurnPolicy:
    async def yes(_request: ApprovalRequest) -> bool:
        return True

    return TurnPolicy(confirm=yes)


def test_advertise_filter_narrows_the_request_tools() -> None:
    h = make_session(calls=[text_call("a")])
    h.session.set_turn_policy(TurnPolicy(advertise=lambda name: name != "write_file"))

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("x")

    run(scenario())
    assert [t["name"] for t in h.provider.requests[0].request["tools"]] == ["echo"]


def test_governed_tool_without_confirm_is_denied_fail_closed() -> None:
    h = make_session(calls=[tool_call("c1", "write_file", '{"path": "a.txt"}'), text_call("done")])

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("write")

    run(scenario())
    [approval] = h.of_type("agent:approval_requested")
    assert approval.action == "fs_write"  # type: ignore[union-attr]
    assert approval.preview.path == "a.txt"  # type: ignore[union-attr]
    [result] = h.of_type("agent:tool_result")
    assert result.success is False  # type: ignore[union-attr]


def test_approved_governed_tool_runs() -> None:
    h = make_session(calls=[tool_call("c1", "write_file", '{"path": "a.txt"}'), text_call("done")])
    h.session.set_turn_policy(_approve_all())

    async def scenario() -> None:
        await h.session.start()
        await h.session.send_message("write")

    run(scenario())
    [result] = h.of_type("agent:tool_result")
    assert result.success is True  # type: ignore[union-attr]


def test_policy_change_mid_turn_applies_to_the_next_turn() -> None:
    usage = Usage(input_tokens=1, output_tokens=1)
    calls = [
        [TextDelta(text="thinking")],
        [
            ToolCallStart(id="c1", name="write_file"),
            ToolCallEnd(id="c1"),
            StopChunk(stop_reason="tool_use", usage=usage),
        ],
        [TextDelta(text="done"), StopChunk(stop_reason="stop", usage=usage)],
        [
            ToolCallStart(id="c2", name="write_file"),
            ToolCallEnd(id="c2"),
            StopChunk(stop_reason="tool_use", usage=usage),
        ],
        [TextDelta(text="done2"), StopChunk(stop_reason="stop", usage=usage)],
    ]
    provider = GatedProvider([calls[0] + calls[1], calls[2], calls[3], calls[4]])
    h = make_session(provider)

    async def pump(task: asyncio.Task[object]) -> None:
        while not task.done():
            provider.gate.set()
            await asyncio.sleep(0)

    async def scenario() -> None:
        await h.session.start()
        first = asyncio.create_task(h.session.send_message("one"))
        await provider.waiting.wait()
        h.session.set_turn_policy(_approve_all())  # stored now, read at the next turn start
        await pump(first)
        second = asyncio.create_task(h.session.send_message("two"))
        await pump(second)

    run(scenario())
    results = [e.success for e in h.of_type("agent:tool_result")]  # type: ignore[union-attr]
    assert results == [False, True]


def test_set_turn_policy_after_cancel_is_inert() -> None:
    h = make_session(calls=[])
    policy = _approve_all()

    async def scenario() -> None:
        await h.session.start()
        await h.session.cancel()
        h.session.set_turn_policy(policy)

    run(scenario())
    assert h.session.turn_policy is not policy
