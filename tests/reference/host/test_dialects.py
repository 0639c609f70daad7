"""The engine's HTTP dialects: the pure readers on every recorded stream, and the httpx shell under respx.

respx stands in for the vendors (never the network): each recorded stream is served in small pieces, so the
readers are exercised on SSE frames split anywhere; each recorded error envelope is served with its status
(or, for a stream error frame, inside a 200 stream); connection failures are raised by the transport.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx
from hypothesis import given
from hypothesis import strategies as st
from tests.reference.wirekit import ERRORS, STREAMS, matches, mid_stream_body, seam

from relavium_reference._host.dialect_client import (
    HTTP_DIALECTS,
    HttpEndpoint,
    HttpProvider,
    http_resolver,
    reader_for,
)
from relavium_reference._model.llm import (
    LlmMessage,
    LlmRequest,
    LlmTextPart,
    LlmToolCallPart,
    LlmToolResultPart,
    StreamChunk,
    StreamErrorChunk,
    ToolDef,
)
from relavium_reference._model.vocabulary import LlmErrorKind, ProviderId
from relavium_reference._rules import dialect_anthropic, dialect_gemini, dialect_openai
from relavium_reference._rules.sse import SseDecoder, SseEvent, decode_all

BASE = {
    "anthropic": "http://127.0.0.1:4010",
    "openai": "http://127.0.0.1:4011/v1",
    "deepseek": "http://127.0.0.1:4012",
    "gemini": "http://127.0.0.1:4013",
}
PATH = {
    "anthropic": "/v1/messages",
    "openai": "/chat/completions",
    "deepseek": "/chat/completions",
    "gemini": dialect_gemini.stream_path("model-a"),
}


def _reader(dialect: str) -> Any:
    return reader_for(dialect)  # type: ignore[arg-type]


def _request(**extra: Any) -> LlmRequest:
    return LlmRequest(
        model="model-a",
        system="You help.",
        messages=[LlmMessage(role="user", content=[LlmTextPart(text="hi")])],
        **extra,
    )


async def _collect(provider: HttpProvider, request: LlmRequest | None = None) -> list[StreamChunk]:
    return [chunk async for chunk in provider.stream(request or _request())]


def _pieces(body: bytes, size: int) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        for start in range(0, len(body), size):
            yield body[start : start + size]

    return gen()


def _serve(router: respx.MockRouter, dialect: str, respond: Any) -> respx.Route:
    return router.post(BASE[dialect] + PATH[dialect]).mock(side_effect=respond)


def _provider(dialect: str, **kw: Any) -> HttpProvider:
    return HttpProvider(HttpEndpoint(dialect=dialect, base_url=BASE[dialect], api_key="k", **kw))  # type: ignore[arg-type]


# -- the pure readers ------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", STREAMS, ids=[f["name"] for f in STREAMS])
def test_each_recorded_stream_reads_as_its_seam_chunks(fixture: dict[str, Any]) -> None:
    reader = _reader(fixture["dialect"])
    chunks: list[StreamChunk] = []
    for event in decode_all(fixture["body"].encode()):
        chunks.extend(reader.event(event))
    chunks.extend(reader.end())
    assert matches(seam(chunks), fixture["chunks"]), seam(chunks)


def test_the_fixtures_cover_every_dialect_and_every_ending() -> None:
    for dialect in ("anthropic", "openai", "gemini"):
        mine = [f for f in STREAMS if f["dialect"] == dialect]
        endings = {f["chunks"][-1]["type"] for f in mine}
        assert endings == {"stop", "error"}, dialect
        assert any(c["type"] == "tool_call_start" for f in mine for c in f["chunks"]), dialect
        assert any(
            c["error"]["kind"] == "transport" for f in mine for c in f["chunks"] if c["type"] == "error"
        )


@given(st.data())
def test_sse_decoding_does_not_depend_on_where_the_reads_end(data: st.DataObject) -> None:
    fixture = data.draw(st.sampled_from(STREAMS))
    body = fixture["body"].encode()
    if data.draw(st.booleans()):
        body = body.replace(b"\n", b"\r\n")
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=len(body) - 1), max_size=40)))
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
        events.extend(decoder.feed(body[start:end]))
    events.extend(decoder.close())
    assert events == decode_all(fixture["body"].encode())


def test_sse_fields_follow_the_event_stream_rules() -> None:
    body = b"\xef\xbb\xbf: comment\nevent: a\ndata:x\ndata: y\nid: 7\nretry: 10\n\ndata\n\nevent: dropped\n\n"
    assert decode_all(body) == [SseEvent("a", "x\ny", "7"), SseEvent("message", "", "7")]
    assert decode_all(b"data: tail-without-blank-line") == []


# -- requests in each dialect ------------------------------------------------------------------------


def _tool_round_request() -> LlmRequest:
    return LlmRequest(
        model="model-a",
        system="You help.",
        max_tokens=512,
        tools=[ToolDef(name="echo", description="say it", parameters={"type": "object"})],
        messages=[
            LlmMessage(role="user", content=[LlmTextPart(text="go")]),
            LlmMessage(
                role="assistant",
                content=[LlmTextPart(text="ok"), LlmToolCallPart(id="c1", name="echo", args={"x": 1})],
            ),
            LlmMessage(
                role="tool", content=[LlmToolResultPart(tool_call_id="c1", result="42", is_error=True)]
            ),
        ],
    )


def test_anthropic_request_body() -> None:
    body = dialect_anthropic.build_request(_tool_round_request())
    assert body == {
        "model": "model-a",
        "max_tokens": 512,
        "stream": True,
        "system": "You help.",
        "tools": [{"name": "echo", "description": "say it", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "c1", "name": "echo", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "42", "is_error": True}],
            },
        ],
    }


def test_openai_request_body() -> None:
    body = dialect_openai.build_request(_tool_round_request())
    assert body == {
        "model": "model-a",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 512,
        "tools": [
            {
                "type": "function",
                "function": {"name": "echo", "description": "say it", "parameters": {"type": "object"}},
            }
        ],
        "messages": [
            {"role": "system", "content": "You help."},
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "ok",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": '{"x": 1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ],
    }


# -- the httpx shell, under respx ----------------------------------------------------------------------


@pytest.mark.parametrize("fixture", STREAMS, ids=[f["name"] for f in STREAMS])
def test_each_recorded_stream_over_http_in_small_pieces(fixture: dict[str, Any]) -> None:
    dialect = fixture["dialect"]
    body = fixture["body"].encode()

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_pieces(body, 5))

    with respx.mock(assert_all_called=True) as router:
        route = _serve(router, dialect, respond)
        chunks = asyncio.run(_collect(_provider(dialect)))
    assert matches(seam(chunks), fixture["chunks"]), seam(chunks)
    sent = route.calls.last.request
    if dialect == "gemini":  # the model and the streaming choice are in the URL
        assert sent.url.path == "/v1beta/models/model-a:streamGenerateContent"
        assert sent.url.params["alt"] == "sse"
        assert sent.headers["x-goog-api-key"] == "k"
        return
    assert json.loads(sent.content)["stream"] is True
    assert json.loads(sent.content)["model"] == "model-a"
    if dialect == "anthropic":
        assert sent.headers["x-api-key"] == "k"
        assert sent.headers["anthropic-version"] == dialect_anthropic.API_VERSION
    else:
        assert sent.headers["authorization"] == "Bearer k"


_HTTP_ERRORS = [v for v in ERRORS if v["dialect"] in HTTP_DIALECTS]


@pytest.mark.clauses("AS-OVF-002")
@pytest.mark.parametrize("vector", _HTTP_ERRORS, ids=[v["name"] for v in _HTTP_ERRORS])
def test_each_recorded_error_envelope_over_http_is_classified(vector: dict[str, Any]) -> None:
    dialect = vector["dialect"]
    # no base URL: the vendor's own (respx answers for it; nothing leaves the process)
    endpoint = HttpEndpoint(dialect=dialect, base_url=vector.get("base_url"), api_key="k")

    def respond(request: httpx.Request) -> httpx.Response:
        if vector["status"] is None:
            return httpx.Response(200, content=mid_stream_body(dialect, vector["body"]))
        return httpx.Response(vector["status"], json=vector["body"], headers={"x-should-retry": "false"})

    with respx.mock(assert_all_called=True) as router:
        router.post(endpoint.url + PATH[dialect]).mock(side_effect=respond)
        chunks = asyncio.run(_collect(HttpProvider(endpoint)))
    assert len(chunks) == 1
    assert isinstance(chunks[0], StreamErrorChunk)
    error = chunks[0].error
    assert error.kind is LlmErrorKind(vector["kind"])
    assert (error.provider, error.status) == (dialect, vector["status"])
    assert error.evidence == vector["evidence"]  # KD-OVF-3: official or downgraded, and only on an overflow


def test_a_body_that_is_not_json_is_still_classified_by_status() -> None:
    with respx.mock() as router:
        _serve(router, "openai", lambda request: httpx.Response(429, text="<html>slow down</html>"))
        chunks = asyncio.run(_collect(_provider("openai")))
    assert [c.error.kind for c in chunks if isinstance(c, StreamErrorChunk)] == [LlmErrorKind.RATE_LIMIT]


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (httpx.ConnectError("refused"), LlmErrorKind.TRANSPORT),
        (httpx.ReadTimeout("slow"), LlmErrorKind.TIMEOUT),
        (
            httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
            LlmErrorKind.TRANSPORT,
        ),
    ],
)
def test_a_failed_connection_is_a_transport_error_chunk(raised: Exception, kind: LlmErrorKind) -> None:
    for dialect in ("anthropic", "openai", "gemini"):
        with respx.mock() as router:
            _serve(router, dialect, raised)
            chunks = asyncio.run(_collect(_provider(dialect)))
        assert [c.error.kind for c in chunks if isinstance(c, StreamErrorChunk)] == [kind]


def test_a_drop_after_content_keeps_the_content_then_fails() -> None:
    async def dropping() -> AsyncIterator[bytes]:
        yield b'data: {"choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}\n\n'
        raise httpx.RemoteProtocolError("peer closed connection")

    with respx.mock() as router:
        _serve(router, "openai", lambda request: httpx.Response(200, content=dropping()))
        chunks = asyncio.run(_collect(_provider("openai")))
    assert seam(chunks)[0] == {"type": "text_delta", "text": "par"}
    assert isinstance(chunks[1], StreamErrorChunk)
    assert chunks[1].error.kind is LlmErrorKind.TRANSPORT
    assert len(chunks) == 2


def test_a_native_context_stop_keeps_its_usage_and_an_endpoint_s_evidence() -> None:
    [fixture] = [f for f in STREAMS if f["name"] == "anthropic-native-context-window-stop"]
    for official, evidence in ((True, "official"), (False, "downgraded")):
        with respx.mock() as router:
            _serve(router, "anthropic", lambda request: httpx.Response(200, content=fixture["body"].encode()))
            chunks = asyncio.run(_collect(_provider("anthropic", official=official)))
        last = chunks[-1]
        assert isinstance(last, StreamErrorChunk)
        assert last.error.evidence == evidence
        assert last.usage is not None
        assert (last.usage.input_tokens, last.usage.output_tokens) == (199000, 1000)


def test_the_official_flag_decides_authority_before_the_base_url() -> None:
    assert HttpEndpoint(dialect="anthropic").authoritative
    assert not HttpEndpoint(dialect="anthropic", base_url="http://127.0.0.1:1").authoritative
    assert HttpEndpoint(dialect="anthropic", base_url="http://127.0.0.1:1", official=True).authoritative
    assert not HttpEndpoint(dialect="openai", official=False).authoritative


def test_the_resolver_refuses_a_provider_without_an_endpoint() -> None:
    resolve = http_resolver({"openai": HttpEndpoint(dialect="openai", base_url=BASE["openai"])})
    assert isinstance(resolve(ProviderId.OPENAI, "m"), HttpProvider)
    with pytest.raises(LookupError):
        resolve(ProviderId.ANTHROPIC, "m")
