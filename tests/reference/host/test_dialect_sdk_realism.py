"""Realism of the wire fixtures: the vendors' official SDKs parse every one as the engine's readers do.

Every recorded stream (``fixtures/wire/streams.yaml``) and every recorded error envelope
(``fixtures/wire/provider-errors.yaml``) is served through respx to the official Python SDK of its dialect
(the httpx-era ones, ``anthropic<1``, ``openai<3`` and ``google-genai<3``: respx patches httpx only, see
the wire facts §0).
The SDK must accept the bytes (no parse failure), and what it makes of them (the text, the tool calls and
their arguments, the stop reason, the usage; the error's status, type and code) must agree with what the
engine's own reader made of the same bytes.  A fixture the SDKs cannot read is not a recorded shape.

When an SDK is not installed, its fixtures are skipped with that reason (the test extra installs all three).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
import respx
from tests.reference.wirekit import ERRORS, STREAMS, mid_stream_body

from relavium_reference._host.dialect_client import reader_for
from relavium_reference._model.llm import (
    ReasoningEnd,
    StopChunk,
    StreamChunk,
    StreamErrorChunk,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
)
from relavium_reference._rules import dialect_anthropic, dialect_gemini, dialect_openai
from relavium_reference._rules.sse import decode_all

BASE = "http://127.0.0.1:4010"
_SDK = {"anthropic": "anthropic", "openai": "openai", "deepseek": "openai", "gemini": "google.genai"}
_WHY = {
    "anthropic": "the anthropic SDK is not installed (pip install -e '.[test]' installs anthropic<1)",
    "openai": "the openai SDK is not installed (pip install -e '.[test]' installs openai<3)",
    "google.genai": "google-genai is not installed (pip install -e '.[test]' installs google-genai<3)",
}


def _sdk(dialect: str) -> Any:
    name = _SDK[dialect]
    return pytest.importorskip(name, reason=_WHY[name])


def _ours(fixture: dict[str, Any]) -> list[StreamChunk]:
    reader = reader_for(fixture["dialect"])
    chunks: list[StreamChunk] = []
    for event in decode_all(fixture["body"].encode()):
        chunks.extend(reader.event(event))
    return chunks + reader.end()


def _summary(chunks: list[StreamChunk]) -> dict[str, Any]:
    """What both sides can say of one reply: text, tool calls (id, name, parsed arguments), the ending."""
    text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    names = {c.id: c.name for c in chunks if isinstance(c, ToolCallStart)}
    args: dict[str, str] = dict.fromkeys(names, "")
    for c in chunks:
        if isinstance(c, ToolCallDelta):
            args[c.id] += c.args_json_delta
    calls = [(key, names[key], json.loads(args[key] or "{}")) for key in names]
    last = chunks[-1]
    return {"text": text, "calls": calls, "last": last}


def _anthropic_stream(sdk: Any, body: bytes) -> tuple[Any, Exception | None]:
    client = sdk.Anthropic(api_key="k", base_url=BASE, max_retries=0)
    with respx.mock(assert_all_called=True) as router:
        router.post(BASE + "/v1/messages").mock(return_value=httpx.Response(200, content=body))
        try:
            with client.messages.stream(
                model="m", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                for _ in stream:
                    pass
                return stream.get_final_message(), None
        except sdk.APIStatusError as exc:
            return None, exc


def _check_anthropic(fixture: dict[str, Any], sdk: Any) -> None:
    ours = _summary(_ours(fixture))
    final, raised = _anthropic_stream(sdk, fixture["body"].encode())
    last = ours["last"]
    if raised is not None:  # a mid-stream error frame: the SDK raises it with the frame's type
        assert isinstance(last, StreamErrorChunk)
        assert raised.type == last.error.code  # type: ignore[attr-defined]
        return
    text = "".join(block.text for block in final.content if block.type == "text")
    calls = [(b.id, b.name, b.input) for b in final.content if b.type == "tool_use"]
    assert (text, calls) == (ours["text"], ours["calls"])
    if isinstance(last, StopChunk):
        usage = final.usage
        total_in = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        assert (total_in, usage.output_tokens) == (last.usage.input_tokens, last.usage.output_tokens)
        assert final.stop_reason in {
            k for k, v in dialect_anthropic._STOP_REASONS.items() if v is last.stop_reason
        }
    elif last.error.code == dialect_anthropic.NATIVE_CONTEXT_STOP:
        assert final.stop_reason == dialect_anthropic.NATIVE_CONTEXT_STOP
    else:  # the stream ended without message_stop: the SDK raises nothing and has no stop reason
        assert final.stop_reason is None


def _check_openai(fixture: dict[str, Any], sdk: Any) -> None:
    ours = _summary(_ours(fixture))
    client = sdk.OpenAI(api_key="k", base_url=BASE + "/v1", max_retries=0)
    text, reasoning, finish, usage = "", "", None, None
    calls: dict[int, list[Any]] = {}
    raised: Exception | None = None
    with respx.mock(assert_all_called=True) as router:
        route = router.post(BASE + "/v1/chat/completions")
        route.mock(return_value=httpx.Response(200, content=fixture["body"].encode()))
        try:
            for chunk in client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            ):
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                    finish = choice.finish_reason or finish
                    for call in choice.delta.tool_calls or ():
                        entry = calls.setdefault(call.index, [None, None, ""])
                        entry[0] = call.id or entry[0]
                        entry[1] = (call.function and call.function.name) or entry[1]
                        entry[2] += (call.function and call.function.arguments) or ""
        except sdk.APIError as exc:
            raised = exc
    last = ours["last"]
    assert text == ours["text"]
    assert [(i, n, json.loads(a or "{}")) for i, n, a in calls.values()] == ours["calls"]
    if raised is not None:
        assert isinstance(last, StreamErrorChunk)
        assert raised.type == last.error.code  # type: ignore[attr-defined]
    elif isinstance(last, StopChunk):
        assert usage is not None
        assert (usage.prompt_tokens, usage.completion_tokens) == (
            last.usage.input_tokens,
            last.usage.output_tokens,
        )
        assert dialect_openai._FINISH_REASONS[finish] is last.stop_reason
    else:  # no [DONE]: the SDK's iteration just ends
        assert last.error.kind.value == "transport"


def _gemini_client(sdk: Any) -> Any:
    # keep the client referenced while it streams: an unreferenced one closes its HTTP client (§3)
    return sdk.Client(api_key="k", http_options=sdk.types.HttpOptions(base_url=BASE))


def _gemini_stream(sdk: Any, reply: httpx.Response) -> tuple[list[Any], Exception | None]:
    client = _gemini_client(sdk)
    seen: list[Any] = []
    with respx.mock(assert_all_called=True) as router:
        router.post(url__regex=r".*/models/m:streamGenerateContent").mock(return_value=reply)
        try:
            for response in client.models.generate_content_stream(model="m", contents="hi"):
                seen.append(response)
        except sdk.errors.APIError as exc:
            return seen, exc
    return seen, None


def _check_gemini(fixture: dict[str, Any], sdk: Any) -> None:
    ours = _summary(_ours(fixture))
    seen, raised = _gemini_stream(sdk, httpx.Response(200, content=fixture["body"].encode()))
    text, calls, finish, usage = "", [], None, None
    signatures: list[str] = []
    for response in seen:
        usage = response.usage_metadata or usage
        for candidate in response.candidates or ():
            finish = candidate.finish_reason or finish
            for part in (candidate.content and candidate.content.parts) or ():
                if part.text and not part.thought:
                    text += part.text
                if part.function_call is not None:
                    calls.append((part.function_call.id, part.function_call.name, part.function_call.args))
                if part.thought_signature:  # bytes to the SDK (base64 on the wire), opaque text to the engine
                    signatures.append(base64.b64encode(part.thought_signature).decode())
    assert text == ours["text"]
    assert signatures == [c.signature for c in _ours(fixture) if isinstance(c, ReasoningEnd) and c.signature]
    assert [(n, a) for _, n, a in calls] == [(n, a) for _, n, a in ours["calls"]]
    assert all(
        i is None or i == ours_id for (i, _, _), (ours_id, _, _) in zip(calls, ours["calls"], strict=True)
    )
    last = ours["last"]
    if raised is not None:  # a mid-stream error frame: the SDK raises it with the frame's status name
        assert isinstance(last, StreamErrorChunk)
        assert raised.status == last.error.code  # type: ignore[attr-defined]
    elif finish is None:  # no finishReason: the SDK's iteration just ends
        assert isinstance(last, StreamErrorChunk)
        assert last.error.kind.value == "transport"
    else:
        assert usage is not None
        total_in = (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0)
        total_out = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        name = finish.value if hasattr(finish, "value") else str(finish)
        if isinstance(last, StopChunk):
            assert (total_in, total_out) == (last.usage.input_tokens, last.usage.output_tokens)
            assert name in dialect_gemini._FINISH_REASONS
        else:
            assert last.error.code == name


def _check_gemini_error(vector: dict[str, Any], sdk: Any) -> None:
    status, body = vector["status"], vector["body"]
    reply = (
        httpx.Response(200, content=mid_stream_body("gemini", body))
        if status is None
        else httpx.Response(status, json=body)
    )
    _, raised = _gemini_stream(sdk, reply)
    assert isinstance(raised, sdk.errors.APIError)
    inner = body["error"]
    assert (raised.code, raised.status, raised.message) == (inner["code"], inner["status"], inner["message"])
    if status is not None:
        expected = sdk.errors.ClientError if status < 500 else sdk.errors.ServerError
        assert isinstance(raised, expected)


@pytest.mark.parametrize("fixture", STREAMS, ids=[f["name"] for f in STREAMS])
def test_each_recorded_stream_parses_in_the_official_sdk_as_in_the_engine(fixture: dict[str, Any]) -> None:
    sdk = _sdk(fixture["dialect"])
    if fixture["dialect"] == "anthropic":
        _check_anthropic(fixture, sdk)
    elif fixture["dialect"] == "gemini":
        _check_gemini(fixture, sdk)
    else:
        _check_openai(fixture, sdk)


def _raised_by_sdk(vector: dict[str, Any], sdk: Any) -> Any:
    dialect, status, body = vector["dialect"], vector["status"], vector["body"]
    reply = (
        httpx.Response(200, content=mid_stream_body(dialect, body))
        if status is None
        else httpx.Response(status, json=body, headers={"x-should-retry": "false"})
    )
    with respx.mock(assert_all_called=True) as router:
        if dialect == "anthropic":
            client = sdk.Anthropic(api_key="k", base_url=BASE, max_retries=0)
            router.post(BASE + "/v1/messages").mock(return_value=reply)
            with pytest.raises(sdk.APIError) as info:
                for _ in client.messages.create(
                    model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=True
                ):
                    pass
        else:
            client = sdk.OpenAI(api_key="k", base_url=BASE + "/v1", max_retries=0)
            router.post(BASE + "/v1/chat/completions").mock(return_value=reply)
            with pytest.raises(sdk.APIError) as info:
                for _ in client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                ):
                    pass
    return info.value


@pytest.mark.parametrize("vector", ERRORS, ids=[v["name"] for v in ERRORS])
def test_each_recorded_error_is_the_error_the_official_sdk_raises(vector: dict[str, Any]) -> None:
    sdk = _sdk(vector["dialect"])
    if vector["dialect"] == "gemini":
        _check_gemini_error(vector, sdk)
        return
    raised = _raised_by_sdk(vector, sdk)
    inner = vector["body"].get("error", vector["body"])
    if vector["status"] is None:
        assert not isinstance(raised, sdk.APIStatusError) or raised.status_code == 200
    else:
        assert isinstance(raised, sdk.APIStatusError)
        assert raised.status_code == vector["status"]
    if vector["dialect"] == "anthropic":
        assert raised.body == vector["body"]
        assert raised.type == inner["type"]
    else:
        assert raised.body == inner
        assert raised.code == inner.get("code")
        assert raised.type == inner.get("type")
