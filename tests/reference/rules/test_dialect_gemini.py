"""The Gemini dialect's own rules: the request body, the URL, and the stream facts the fixtures do not show.

The recorded streams and error envelopes of ``fixtures/wire/`` run through every dialect in
``test_dialects.py`` (pure readers and the httpx shell under respx); this module checks what is
particular to Gemini: the model in the path, results paired with their calls by name, usage as a running
total, a tool call ending on ``STOP``, a blocked prompt, an unknown finish reason.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx
from tests.reference.wirekit import seam

from relavium_reference._host.dialect_client import HttpEndpoint, HttpProvider
from relavium_reference._model.llm import (
    LlmMessage,
    LlmReasoningPart,
    LlmRequest,
    LlmTextPart,
    LlmToolCallPart,
    LlmToolResultPart,
    StopChunk,
    StreamChunk,
    StreamErrorChunk,
    ToolDef,
)
from relavium_reference._model.vocabulary import LlmErrorKind, ProviderId, StopReason
from relavium_reference._rules import dialect_gemini
from relavium_reference._rules.dialect_errors import error_from_reply
from relavium_reference._rules.overflow import classify_provider_error
from relavium_reference._rules.sse import decode_all

BASE = "http://127.0.0.1:4013"


def _read(body: str) -> list[StreamChunk]:
    reader = dialect_gemini.GeminiStream()
    chunks: list[StreamChunk] = []
    for event in decode_all(body.encode()):
        chunks.extend(reader.event(event))
    return chunks + reader.end()


def _data(*objects: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(obj)}\n\n" for obj in objects)


def _candidate(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def test_the_request_names_the_model_in_the_path_and_pairs_results_with_their_calls() -> None:
    request = LlmRequest(
        model="models/gemini-2.5-flash",
        system="You help.",
        max_tokens=512,
        tools=[ToolDef(name="echo", description="say it", parameters={"type": "object"})],
        messages=[
            LlmMessage(role="user", content=[LlmTextPart(text="go")]),
            LlmMessage(
                role="assistant",
                content=[
                    LlmReasoningPart(text="hm"),
                    LlmTextPart(text="ok"),
                    LlmToolCallPart(id="c1", name="echo", args={"x": 1}),
                    LlmToolCallPart(id="c2", name="shout", args=None),
                ],
            ),
            LlmMessage(
                role="tool",
                content=[
                    LlmToolResultPart(tool_call_id="c1", result="42"),
                    LlmToolResultPart(tool_call_id="c2", result={"why": "no"}, is_error=True),
                ],
            ),
            LlmMessage(role="user", content=[LlmTextPart(text="and?")]),
        ],
    )
    assert (
        dialect_gemini.stream_path(request.model)
        == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert dialect_gemini.build_request(request) == {
        "systemInstruction": {"parts": [{"text": "You help."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "echo", "description": "say it", "parametersJsonSchema": {"type": "object"}}
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 512},
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "hm", "thought": True},
                    {"text": "ok"},
                    {"functionCall": {"id": "c1", "name": "echo", "args": {"x": 1}}},
                    {"functionCall": {"id": "c2", "name": "shout", "args": {}}},
                ],
            },
            {
                "role": "user",  # the results and the next user text merge: Gemini alternates the roles
                "parts": [
                    {"functionResponse": {"id": "c1", "name": "echo", "response": {"output": "42"}}},
                    {"functionResponse": {"id": "c2", "name": "shout", "response": {"error": {"why": "no"}}}},
                    {"text": "and?"},
                ],
            },
        ],
    }


def test_usage_is_a_running_total_never_a_sum() -> None:
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}
    body = _data(
        {**_candidate([{"text": "a"}]), "usageMetadata": {**usage, "candidatesTokenCount": 1}},
        {**_candidate([{"text": "b"}]), "usageMetadata": {**usage, "candidatesTokenCount": 2}},
        {**_candidate([{"text": "c"}], "STOP"), "usageMetadata": usage},
    )
    last = _read(body)[-1]
    assert isinstance(last, StopChunk)
    assert (last.usage.input_tokens, last.usage.output_tokens) == (10, 3)


def test_a_max_tokens_stop_without_a_candidates_count_keeps_the_prompt_and_thoughts() -> None:
    usage = {"promptTokenCount": 82088, "totalTokenCount": 90280, "thoughtsTokenCount": 8192}
    last = _read(_data({**_candidate([{"text": ""}], "MAX_TOKENS"), "usageMetadata": usage}))[-1]
    assert isinstance(last, StopChunk)
    assert last.stop_reason is StopReason.LENGTH
    assert (last.usage.input_tokens, last.usage.output_tokens) == (82088, 8192)


def test_function_calls_without_ids_get_distinct_ones_and_end_the_reply_as_tool_use() -> None:
    call = {"functionCall": {"name": "echo", "args": {"x": 1}}}
    chunks = seam(_read(_data(_candidate([call]), _candidate([call], "STOP"))))
    starts = [c["id"] for c in chunks if c["type"] == "tool_call_start"]
    assert starts == ["call-0", "call-1"]
    assert chunks[-1]["stopReason"] == "tool_use"


def test_a_blocked_prompt_is_a_content_filter_stop() -> None:
    body = _data(
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 5}}
    )
    [stop] = _read(body)
    assert isinstance(stop, StopChunk)
    assert stop.stop_reason is StopReason.CONTENT_FILTER
    assert stop.usage.input_tokens == 5


def test_an_unknown_finish_reason_is_a_failure_that_names_it() -> None:
    [failure] = _read(_data(_candidate([], "MALFORMED_FUNCTION_CALL")))
    assert isinstance(failure, StreamErrorChunk)
    assert (failure.error.kind, failure.error.code) == (LlmErrorKind.UNKNOWN, "MALFORMED_FUNCTION_CALL")


def test_the_reply_ends_at_its_finish_reason_and_ignores_what_follows() -> None:
    body = _data(_candidate([{"text": "done"}], "STOP"), _candidate([{"text": "late"}]))
    assert [c["type"] for c in seam(_read(body))] == ["text_delta", "stop"]


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (
            400,
            {
                "code": 400,
                "message": "The input token count (5) exceeds the maximum number of tokens allowed (4).",
                "status": "INVALID_ARGUMENT",
            },
            LlmErrorKind.CONTEXT_OVERFLOW,
        ),
        # the same words with another status, or another status name, are no overflow
        (
            429,
            {
                "code": 429,
                "message": "The input token count (5) exceeds the maximum number of tokens allowed (4).",
                "status": "RESOURCE_EXHAUSTED",
            },
            LlmErrorKind.RATE_LIMIT,
        ),
        (
            400,
            {
                "code": 400,
                "message": "The input token count (5) exceeds the maximum number of tokens allowed (4).",
                "status": "FAILED_PRECONDITION",
            },
            LlmErrorKind.BAD_REQUEST,
        ),
        (
            400,
            {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            },
            LlmErrorKind.BAD_REQUEST,
        ),
    ],
)
def test_only_the_token_count_invalid_argument_is_an_overflow(
    status: int, error: dict[str, Any], kind: LlmErrorKind
) -> None:
    assert classify_provider_error("gemini", status, {"error": error}) is kind
    classified = error_from_reply("gemini", status, {"error": error})
    assert (classified.code, classified.status) == (error["status"], status)  # the google.rpc status name


def test_a_drop_after_content_keeps_the_content_then_fails() -> None:
    async def dropping() -> AsyncIterator[bytes]:
        yield _data(_candidate([{"text": "par"}])).encode()
        raise httpx.RemoteProtocolError("peer closed connection")

    async def collect() -> list[StreamChunk]:
        provider = HttpProvider(HttpEndpoint(dialect="gemini", base_url=BASE, api_key="k"))
        return [c async for c in provider.stream(LlmRequest(model="g", messages=[]))]

    with respx.mock() as router:
        router.post(url__regex=r".*:streamGenerateContent").mock(
            side_effect=lambda request: httpx.Response(200, content=dropping())
        )
        chunks = asyncio.run(collect())
    assert seam(chunks)[0] == {"type": "text_delta", "text": "par"}
    assert [c.error.kind for c in chunks if isinstance(c, StreamErrorChunk)] == [LlmErrorKind.TRANSPORT]


def test_a_thought_signature_comes_back_on_the_part_it_came_on() -> None:
    """Read a signed reply, build the next request of the turn from what the seam kept (all reasoning
    first, as a tool round commits it): the call gets its signature back, the signed thought keeps its own."""
    body = _data(
        _candidate([{"text": "Weighing", "thought": True, "thoughtSignature": "sig-thought"}]),
        _candidate([{"text": "Checking."}]),
        _candidate(
            [
                {"functionCall": {"name": "echo", "args": {"x": 1}}, "thoughtSignature": "sig-call"},
                {"functionCall": {"name": "echo", "args": {"x": 2}}},
            ],
            "STOP",
        ),
    )
    chunks = seam(_read(body))
    assert chunks[:4] == [
        {"type": "reasoning_start", "id": "reasoning-0"},
        {"type": "reasoning_delta", "id": "reasoning-0", "text": "Weighing"},
        {"type": "reasoning_end", "id": "reasoning-0", "signature": "sig-thought"},
        {"type": "text_delta", "text": "Checking."},
    ]
    assert chunks[4:6] == [
        {"type": "reasoning_start", "id": "signature-0"},
        {"type": "reasoning_end", "id": "signature-0", "signature": "sig-call"},
    ]
    assert chunks[-1]["stopReason"] == "tool_use"
    assistant = LlmMessage(
        role="assistant",
        content=[
            LlmReasoningPart(text="Weighing", signature="sig-thought"),
            LlmReasoningPart(text="", signature="sig-call"),
            LlmTextPart(text="Checking."),
            LlmToolCallPart(id="call-0", name="echo", args={"x": 1}),
            LlmToolCallPart(id="call-1", name="echo", args={"x": 2}),
        ],
    )
    request = LlmRequest(
        model="g", messages=[LlmMessage(role="user", content=[LlmTextPart(text="go")]), assistant]
    )
    [_, model] = dialect_gemini.build_request(request)["contents"]
    assert model["parts"] == [
        {"text": "Weighing", "thought": True, "thoughtSignature": "sig-thought"},
        {"text": "Checking."},
        {"functionCall": {"id": "call-0", "name": "echo", "args": {"x": 1}}, "thoughtSignature": "sig-call"},
        {"functionCall": {"id": "call-1", "name": "echo", "args": {"x": 2}}},
    ]


def test_a_signature_on_a_final_empty_text_goes_back_on_the_reply_s_text() -> None:
    body = _data(
        _candidate([{"text": "Answer."}]), _candidate([{"text": "", "thoughtSignature": "sig-end"}], "STOP")
    )
    chunks = seam(_read(body))
    assert {"type": "reasoning_end", "id": "signature-0", "signature": "sig-end"} in chunks
    assistant = LlmMessage(
        role="assistant",
        content=[LlmReasoningPart(text="", signature="sig-end"), LlmTextPart(text="Answer.")],
    )
    body_out = dialect_gemini.build_request(LlmRequest(model="g", messages=[assistant]))
    assert body_out["contents"] == [
        {"role": "model", "parts": [{"text": "Answer.", "thoughtSignature": "sig-end"}]}
    ]


def test_a_signed_function_call_gets_its_signature_back_in_the_turn_s_next_request() -> None:
    """End to end through a session: the engine keeps the signature the reader turned into reasoning, and
    the next request of the same turn carries it on the function call (Gemini refuses it otherwise)."""
    from tests.reference.enginekit import AGENT, make_session

    signed = _candidate(
        [{"functionCall": {"name": "echo", "args": {"x": 1}}, "thoughtSignature": "c2lnLWNhbGw="}], "STOP"
    )
    replies = [_data(signed), _data(_candidate([{"text": "done"}], "STOP"))]
    sent: list[dict[str, Any]] = []

    def respond(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, content=replies[len(sent) - 1].encode())

    provider = HttpProvider(HttpEndpoint(dialect="gemini", base_url=BASE, api_key="k"))
    harness = make_session(
        provider, agent=AGENT.model_copy(update={"provider": ProviderId.GEMINI, "model": "g"})
    )

    async def scenario() -> Any:
        await harness.session.start()
        return await harness.session.send_message("go")

    with respx.mock() as router:
        router.post(url__regex=r".*/models/g:streamGenerateContent").mock(side_effect=respond)
        result = asyncio.run(scenario())
    assert result.status == "completed"
    assert len(sent) == 2
    model = [c for c in sent[1]["contents"] if c["role"] == "model"]
    assert model[-1]["parts"] == [
        {
            "functionCall": {"id": "call-0", "name": "echo", "args": {"x": 1}},
            "thoughtSignature": "c2lnLWNhbGw=",
        }
    ]
