"""Turn core through a real session: streaming, tool rounds, the tool-round guard, projection, usage."""

from __future__ import annotations

from pydantic import ValidationError
from tests.reference.enginekit import error_call, make_session, run, text_call, tool_call

from relavium_reference import ErrorCode, SessionStopReason, SessionTurnCompleted


async def _start_and_send(h, *texts):  # type: ignore[no-untyped-def]
    await h.session.start()
    return [await h.session.send_message(t) for t in texts]


def test_streamed_text_becomes_tokens_and_the_reply() -> None:
    h = make_session(
        calls=[
            {
                "chunks": [
                    {"type": "text_delta", "text": "Hel"},
                    {"type": "text_delta", "text": "lo"},
                    {"type": "stop", "stopReason": "stop", "usage": {"inputTokens": 3, "outputTokens": 2}},
                ]
            }
        ]
    )
    [result] = run(_start_and_send(h, "hi"))
    assert result.status == "completed"
    assert result.text == "Hello"
    assert [e.token for e in h.of_type("agent:token")] == ["Hel", "lo"]  # type: ignore[union-attr]
    assert h.types(session_only=True) == ["session:started", "session:turn_started", "session:turn_completed"]


def test_exactly_one_turn_completed_per_turn_with_real_usage() -> None:
    h = make_session(
        calls=[
            text_call("a", input_tokens=11, output_tokens=4),
            tool_call("c1", "echo"),
            text_call("b", input_tokens=20, output_tokens=6),
        ]
    )
    run(_start_and_send(h, "one", "two"))
    completed = h.of_type("session:turn_completed")
    assert len(completed) == 2
    assert isinstance(completed[1], SessionTurnCompleted)
    assert completed[0].tokens_used.input == 11  # type: ignore[union-attr]
    assert (completed[1].tokens_used.input, completed[1].tokens_used.output) == (27, 9)  # type: ignore[union-attr]


def test_tool_round_trip_feeds_the_result_back_in_the_same_turn() -> None:
    h = make_session(calls=[tool_call("c1", "echo", '{"x": 1}', preamble="Checking."), text_call("done")])
    [result] = run(_start_and_send(h, "use the tool"))
    assert result.text == "done"
    second = h.provider.requests[1].request["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["content"][1] == {"type": "tool_call", "id": "c1", "name": "echo", "args": {"x": 1}}
    assert second[2]["content"][0]["toolCallId"] == "c1"
    assert second[2]["content"][0]["result"] == "echo:{'x': 1}"
    [completed] = h.of_type("session:turn_completed")
    assert completed.tool_history[0].name == "echo"  # type: ignore[union-attr,index]


def test_only_text_crosses_into_the_next_turn() -> None:
    h = make_session(
        calls=[
            tool_call("c1", "echo", preamble="Let me see."),
            text_call("first answer"),
            text_call("second answer"),
        ]
    )
    run(_start_and_send(h, "q1", "q2"))
    third = h.provider.requests[2].request["messages"]
    assert third == [
        {"role": "user", "content": [{"type": "text", "text": "q1"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
        {"role": "user", "content": [{"type": "text", "text": "q2"}]},
    ]


def test_tool_round_guard_ends_the_turn_with_turn_limit() -> None:
    h = make_session(
        calls=[tool_call("c1", "echo"), tool_call("c2", "echo"), tool_call("c3", "echo")], max_tool_turns=2
    )
    [result] = run(_start_and_send(h, "loop"))
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code is ErrorCode.TURN_LIMIT
    [completed] = h.of_type("session:turn_completed")
    assert completed.stop_reason is SessionStopReason.ERROR  # type: ignore[union-attr]
    assert len(h.of_type("agent:tool_result")) == 2  # the third request for tools is not dispatched
    assert h.session.exchanges == ()  # the failed turn rolled its user back


def test_default_tool_round_guard_is_sixteen() -> None:
    h = make_session(calls=[tool_call(f"c{i}", "echo") for i in range(17)] + [text_call("x")])
    [result] = run(_start_and_send(h, "loop"))
    assert result.error is not None
    assert result.error.code is ErrorCode.TURN_LIMIT
    assert len(h.of_type("agent:tool_result")) == 16


def test_mutating_a_captured_request_cannot_change_the_transcript() -> None:
    refused: list[str] = []

    class Mutating:
        """Tries every change a provider could make: only the request's own lists give way."""

        def __init__(self, inner):  # type: ignore[no-untyped-def]
            self.inner = inner

        def stream(self, request):  # type: ignore[no-untyped-def]
            out = self.inner.stream(request)
            for message in request.messages:
                for part in message.content:
                    if getattr(part, "text", None) is not None:
                        try:
                            part.text = "MUTATED"
                        except ValidationError:
                            refused.append("part")
                try:
                    message.content.clear()
                except AttributeError:
                    refused.append("content")
            request.messages.clear()
            return out

    from relavium_reference import ScriptedProvider

    inner = ScriptedProvider(
        {"calls": [text_call("a1"), tool_call("c", "echo"), text_call("a2"), text_call("a3")]}
    )
    h = make_session(Mutating(inner))
    run(_start_and_send(h, "q1", "q2", "q3"))
    assert [(e.user, e.assistant) for e in h.session.exchanges] == [("q1", "a1"), ("q2", "a2"), ("q3", "a3")]
    last = inner.requests[-1].request["messages"]
    assert [m["content"][0]["text"] for m in last] == ["q1", "a1", "q2", "a2", "q3"]
    assert {"part", "content"} <= set(refused)  # the shared values are frozen, not copied


def test_empty_final_text_still_completes_the_turn() -> None:
    h = make_session(calls=[text_call(""), text_call("next")])
    results = run(_start_and_send(h, "q1", "q2"))
    assert results[0].status == "completed"
    assert results[0].text == ""
    assert h.session.exchanges[0].assistant == ""
    second = h.provider.requests[1].request["messages"]
    assert second == [
        {"role": "user", "content": [{"type": "text", "text": "q1"}, {"type": "text", "text": "q2"}]}
    ]


def test_failed_turn_reports_code_and_rolls_back_the_user() -> None:
    h = make_session(calls=[error_call("auth"), text_call("later")])
    results = run(_start_and_send(h, "bad", "good"))
    assert results[0].status == "failed"
    assert results[0].error is not None
    assert results[0].error.code is ErrorCode.PROVIDER_AUTH
    assert "scripted failure" not in results[0].error.message  # never the provider's own text
    assert [m["content"][0]["text"] for m in h.provider.requests[1].request["messages"]] == ["good"]


def test_unknown_tool_gets_an_error_result_and_the_unknown_marker() -> None:
    h = make_session(calls=[tool_call("c1", "nope"), text_call("ok")])
    run(_start_and_send(h, "x"))
    [result] = h.of_type("agent:tool_result")
    assert result.success is False  # type: ignore[union-attr]
    [completed] = h.of_type("session:turn_completed")
    assert completed.tool_history[0].name == "unknown_tool"  # type: ignore[union-attr,index]


def test_system_prompt_and_advertised_tools_reach_the_request() -> None:
    h = make_session(calls=[text_call("a")])
    run(_start_and_send(h, "x"))
    request = h.provider.requests[0].request
    assert request["system"] == "You help."
    assert [t["name"] for t in request["tools"]] == ["echo", "write_file"]


def test_a_failing_sink_is_an_observer_failure_not_a_provider_error() -> None:
    from tests.reference.enginekit import AGENT

    from relavium_reference import AgentSession, ScriptedProvider, SessionContext, SessionDeps

    class SinkBroke(Exception):
        pass

    seen: list[str] = []

    def sink(event):  # type: ignore[no-untyped-def]
        seen.append(event.type)
        if event.type == "agent:token":
            raise SinkBroke("observer")

    provider = ScriptedProvider({"calls": [text_call("hello")]})
    session = AgentSession(
        agent=AGENT,
        context=SessionContext(working_dir="."),
        deps=SessionDeps(resolve_provider=lambda _p, _m: provider, emit=sink),
    )

    async def scenario() -> None:
        await session.start()
        await session.send_message("q")

    import pytest

    with pytest.raises(SinkBroke):  # the raw observer failure reaches the caller
        run(scenario())
    assert seen[-1] == "session:turn_completed"  # after the fixed terminal
    assert session.turns_used == 1  # the engaged turn is counted


def test_a_provider_that_raises_is_classified_not_raised() -> None:
    class Raising:
        def stream(self, request):  # type: ignore[no-untyped-def]
            async def chunks():  # type: ignore[no-untyped-def]
                yield TextDelta(text="x")
                raise RuntimeError("socket closed")

            return chunks()

    from relavium_reference._model.llm import TextDelta

    h = make_session(Raising())
    [result] = run(_start_and_send(h, "q"))
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code is ErrorCode.INTERNAL
