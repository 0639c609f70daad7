"""The kit's loopback HTTP server (capability ``wire``), over real loopback sockets (no respx here).

What it sends is checked three ways: the raw bytes (status line, chunked framing with every SSE frame split
across two chunks, the zero chunk, or none when the script drops the connection), what the engine's own
dialect readers make of them (the same seam chunks the script holds), and what the vendors' official SDKs
make of them (skipped, with the reason, when the SDKs are absent).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case, WireStep
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import Difference
from relavium_conformance._run.dialect_render import ERROR_PAYLOADS, render
from relavium_conformance._run.dialect_server import DialectServer
from relavium_conformance._wire.model import kit_parse
from relavium_reference._host.dialect_client import reader_for
from relavium_reference._model.llm import StreamChunk
from relavium_reference._model.vocabulary import LlmErrorKind
from relavium_reference._rules.dialect_errors import error_from_reply
from relavium_reference._rules.sse import decode_all

TOOL_ROUND: list[dict[str, Any]] = [
    {"type": "text_delta", "text": "Let me look."},
    {"type": "tool_call_start", "id": "call_1", "name": "echo"},
    {"type": "tool_call_delta", "id": "call_1", "argsJsonDelta": '{"x": '},
    {"type": "tool_call_delta", "id": "call_1", "argsJsonDelta": "1}"},
    {"type": "tool_call_end", "id": "call_1"},
    {"type": "stop", "stopReason": "tool_use", "usage": {"inputTokens": 12, "outputTokens": 7}},
]
TEXT: list[dict[str, Any]] = [
    {"type": "text_delta", "text": "hé"},
    {"type": "text_delta", "text": "llo"},
    {"type": "stop", "stopReason": "length", "usage": {"inputTokens": 3, "outputTokens": 2}},
]


class _Observed:
    def __init__(self) -> None:
        self.provider_requests: list[dict[str, Any]] = []
        self.violations: list[Difference] = []


def _reader(dialect: str) -> Any:
    return reader_for(dialect)  # type: ignore[arg-type]


def _read(dialect: str, body: bytes) -> list[dict[str, Any]]:
    reader = _reader(dialect)
    chunks: list[StreamChunk] = []
    for event in decode_all(body):
        chunks.extend(reader.event(event))
    chunks.extend(reader.end())
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in chunks]


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "deepseek"])
@pytest.mark.parametrize("script", [TOOL_ROUND, TEXT], ids=["tool-round", "text"])
def test_a_rendered_stream_reads_back_as_its_script(dialect: str, script: list[dict[str, Any]]) -> None:
    reply = render(dialect, script, "m")
    assert reply.status == 200
    assert not reply.disconnect
    assert _read(dialect, b"".join(reply.frames)) == script


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "deepseek", "gemini"])
def test_every_renderable_error_kind_classifies_as_that_kind(dialect: str) -> None:
    for kind in ERROR_PAYLOADS[dialect]:
        reply = render(dialect, [{"type": "error", "error": {"kind": kind}}], "m")
        error = error_from_reply(dialect, reply.status, json.loads(reply.body))  # type: ignore[arg-type]
        assert error.kind is LlmErrorKind(kind), (dialect, kind)
    assert render(dialect, [{"type": "error", "error": {"kind": "transport"}}], "m").silent
    with pytest.raises(KitUsageError):
        render(dialect, [{"type": "error", "error": {"kind": "content_filter"}}], "m")


def test_a_mid_stream_error_is_a_frame_after_the_content() -> None:
    script = [{"type": "text_delta", "text": "par"}, {"type": "error", "error": {"kind": "overloaded"}}]
    for dialect in ("anthropic", "openai", "gemini"):
        chunks = _read(dialect, b"".join(render(dialect, script, "m").frames))
        assert chunks[0] == {"type": "text_delta", "text": "par"}
        assert chunks[1]["error"]["kind"] == "overloaded"
        assert len(chunks) == 2


async def _exchange(
    steps: Sequence[Any], dialect: str = "anthropic", path: str | None = None
) -> tuple[bytes, _Observed]:
    """One raw HTTP/1.1 exchange with the server, read to the end of the connection."""
    observed = _Observed()
    queue = [steps]
    server = await DialectServer.start(
        {dialect: "official"}, observed, lambda: queue.pop(0) if queue else None
    )
    try:
        base = server.endpoints()[0]["baseUrl"]
        host, port = base.removeprefix("http://").split("/", 1)[0].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        body = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
        target = path or (
            "/anthropic/v1/messages" if dialect == "anthropic" else "/openai/v1/chat/completions"
        )
        writer.write(
            f"POST {target} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            f"x-api-key: k\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        raw = await reader.read()
        writer.close()
        return raw, observed
    finally:
        await server.close()


def _dechunk(raw: bytes) -> tuple[list[bytes], bool]:
    """The chunks of a chunked body, and whether the zero chunk ended it."""
    _, _, rest = raw.partition(b"\r\n\r\n")
    chunks: list[bytes] = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks, True
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return chunks, False


def test_a_stream_is_chunked_with_every_frame_split_across_two_chunks() -> None:
    raw, observed = asyncio.run(_exchange(TEXT))
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in raw.split(b"\r\n\r\n", 1)[0]
    chunks, ended = _dechunk(raw)
    assert ended
    frames = render("anthropic", TEXT, "m").frames
    assert len(chunks) == 2 * len(frames)
    assert all(not chunk.endswith(b"\n\n") for chunk in chunks[::2])  # no first half is a whole frame
    assert b"".join(chunks) == b"".join(frames)
    [request] = observed.provider_requests
    assert request == {
        "provider": "anthropic",
        "model": "m",
        "http": {
            "method": "POST",
            "path": "/v1/messages",
            "headers": {"content-type": "application/json", "x-api-key": "k"},
            "body": {"model": "m", "stream": True, "messages": []},
        },
    }
    assert observed.violations == []


def test_a_disconnect_leaves_the_chunked_body_unfinished() -> None:
    steps = [{"type": "text_delta", "text": "half"}, WireStep(wire="disconnect")]
    raw, _ = asyncio.run(_exchange(steps))
    chunks, ended = _dechunk(raw)
    assert not ended
    assert b"half" in b"".join(chunks)


def test_a_written_out_reply_is_sent_verbatim_with_its_status() -> None:
    body = {"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}}
    step = kit_parse(WireStep, {"wire": {"status": 429, "body": body}})
    raw, _ = asyncio.run(_exchange([step], dialect="openai"))
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429 ")
    assert json.loads(payload) == body


def test_unknown_paths_and_unscripted_requests_are_violations() -> None:
    raw, observed = asyncio.run(_exchange(TEXT, path="/anthropic/v1/complete"))
    assert raw.startswith(b"HTTP/1.1 404 ")
    assert "no provider endpoint" in observed.violations[0].message

    async def twice() -> _Observed:
        observed = _Observed()
        server = await DialectServer.start({"openai": "custom"}, observed, lambda: None)
        try:
            [endpoint] = server.endpoints()
            assert endpoint["official"] is False
            assert endpoint["baseUrl"].endswith("/openai/v1")
            async with httpx.AsyncClient() as client:
                reply = await client.post(endpoint["baseUrl"] + "/chat/completions", json={"model": "m"})
            assert reply.status_code == 400
        finally:
            await server.close()
        return observed

    observed = asyncio.run(twice())
    assert "was not scripted" in observed.violations[0].message


def test_a_wire_case_is_consistent() -> None:
    base = {"id": "wire/x", "title": "t", "clauses": ["AS-CAP-020"], "steps": [{"op": "start"}]}
    ok = {**base, "capabilities": ["core", "wire"], "setup": {"wire": {"openai": "official"}}}
    assert kit_parse(Case, ok).setup.wire == {"openai": "official"}
    with pytest.raises(Exception, match="capability wire"):
        kit_parse(Case, {**base, "setup": {"wire": {"openai": "official"}}})
    with pytest.raises(Exception, match=r"needs setup\.wire"):
        kit_parse(Case, {**base, "capabilities": ["core", "wire"], "provider": [[{"wire": "disconnect"}]]})
    with pytest.raises(Exception, match="without do or hold"):
        kit_parse(Case, {**ok, "provider": [[{"do": "abort"}, {"type": "text_delta", "text": "x"}]]})


# -- the official SDKs read what the kit renders ------------------------------------------------------


@pytest.mark.parametrize("script", [TOOL_ROUND, TEXT], ids=["tool-round", "text"])
def test_the_anthropic_sdk_reads_the_rendered_stream(script: list[dict[str, Any]]) -> None:
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (test extra)")

    async def run() -> Any:
        observed = _Observed()
        queue = [script]
        server = await DialectServer.start({"anthropic": "official"}, observed, lambda: queue.pop(0))
        try:
            base = server.endpoints()[0]["baseUrl"]
            client = anthropic.AsyncAnthropic(api_key="k", base_url=base, max_retries=0)
            async with client.messages.stream(
                model="m", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                return await stream.get_final_message()
        finally:
            await server.close()

    final = asyncio.run(run())
    stop = script[-1]
    assert final.usage.input_tokens == stop["usage"]["inputTokens"]
    assert final.usage.output_tokens == stop["usage"]["outputTokens"]
    text = "".join(s["text"] for s in script if s["type"] == "text_delta")
    assert "".join(b.text for b in final.content if b.type == "text") == text


def test_the_openai_sdk_reads_the_rendered_stream() -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed (test extra)")

    async def run() -> list[Any]:
        observed = _Observed()
        queue = [TOOL_ROUND]
        server = await DialectServer.start({"openai": "official"}, observed, lambda: queue.pop(0))
        try:
            client = openai.AsyncOpenAI(api_key="k", base_url=server.endpoints()[0]["baseUrl"], max_retries=0)
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            return [chunk async for chunk in stream]
        finally:
            await server.close()

    chunks = asyncio.run(run())
    arguments = "".join(
        call.function.arguments or ""
        for chunk in chunks
        for choice in chunk.choices
        for call in choice.delta.tool_calls or ()
    )
    assert json.loads(arguments) == {"x": 1}
    assert chunks[-1].usage.prompt_tokens == 12
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def _scripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A seam script the dialects can carry: text runs and tool calls in any order, then a stop."""
    steps: list[dict[str, Any]] = []
    for index in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            steps += [
                {"type": "text_delta", "text": t} for t in draw(st.lists(_TEXT, min_size=1, max_size=3))
            ]
        else:
            call = f"call_{index}"
            pieces = draw(st.lists(_TEXT, max_size=3))
            steps.append(
                {"type": "tool_call_start", "id": call, "name": draw(st.sampled_from(["echo", "f"]))}
            )
            steps += [{"type": "tool_call_delta", "id": call, "argsJsonDelta": p} for p in pieces]
            steps.append({"type": "tool_call_end", "id": call})
    usage = {"inputTokens": draw(st.integers(0, 10**6)), "outputTokens": draw(st.integers(0, 10**6))}
    reason = draw(st.sampled_from(["stop", "length", "tool_use", "content_filter"]))
    return [*steps, {"type": "stop", "stopReason": reason, "usage": usage}]


def _expected(dialect: str, script: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script as the engine reads it back: OpenAI closes every tool call at the end of the reply,
    and a text run right after a text run is one block (the seam keeps each delta either way)."""
    if dialect == "anthropic":
        return script
    opened = [s for s in script if s["type"] == "tool_call_end"]
    body = [s for s in script if s["type"] not in ("tool_call_end", "stop")]
    return [*body, *opened, script[-1]]


@settings(max_examples=60)
@given(dialect=st.sampled_from(["anthropic", "openai", "deepseek"]), script=_scripts())
def test_any_script_survives_rendering_and_reading_back(dialect: str, script: list[dict[str, Any]]) -> None:
    reply = render(dialect, script, "m")
    assert _read(dialect, b"".join(reply.frames)) == _expected(dialect, script)


def test_a_recorded_failure_is_served_as_recorded() -> None:
    from relavium_conformance._corpus.cases import ProviderErrorStep
    from relavium_conformance._corpus.provider_errors import provider_error

    step = ProviderErrorStep(provider_error="anthropic-prompt-too-long")
    reply = render("anthropic", [step], "m")
    recorded = provider_error("anthropic-prompt-too-long")
    assert (reply.status, json.loads(reply.body)) == (recorded.status, recorded.body)
    frame = ProviderErrorStep(provider_error="openai-server-error-mid-stream")  # status null: a frame
    chunks = _read("openai", b"".join(render("openai", [frame], "m").frames))
    assert chunks[-1]["error"]["kind"] == "overloaded"


def test_the_native_context_stop_is_a_200_stream_with_its_usage() -> None:
    script = [
        {"type": "text_delta", "text": "so far"},
        {
            "type": "error",
            "error": {"kind": "context_overflow", "code": "model_context_window_exceeded"},
            "usage": {"inputTokens": 1800, "outputTokens": 200},
        },
    ]
    reply = render("anthropic", script, "m")
    assert reply.status == 200
    chunks = _read("anthropic", b"".join(reply.frames))
    assert chunks[0] == {"type": "text_delta", "text": "so far"}
    assert chunks[1]["error"]["code"] == "model_context_window_exceeded"
    assert chunks[1]["usage"] == {"inputTokens": 1800, "outputTokens": 200}


# -- Gemini: whole function calls, usage on every chunk, the model in the path ----------------------------


def _gemini_expected(script: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script as the engine reads Gemini back: a call's fragments arrive as one argument object, and
    a STOP after a call is tool_use (Gemini has no tool-use finish reason; ``tool_use`` without calls is
    STOP)."""
    out: list[dict[str, Any]] = []
    args: dict[str, str] = {}
    for step in script:
        if step["type"] == "tool_call_delta":
            args[step["id"]] += step["argsJsonDelta"]
        elif step["type"] == "tool_call_start":
            args[step["id"]] = ""
            out.append(step)
        elif step["type"] == "tool_call_end":
            joined = json.dumps(json.loads(args[step["id"]] or "{}"), ensure_ascii=False)
            out += [{"type": "tool_call_delta", "id": step["id"], "argsJsonDelta": joined}, step]
        elif step["type"] == "stop":
            reason = step["stopReason"]
            if reason in ("stop", "tool_use"):
                reason = "tool_use" if args else "stop"
            out.append({**step, "stopReason": reason})
        else:
            out.append(step)
    return out


@pytest.mark.parametrize("script", [TOOL_ROUND, TEXT], ids=["tool-round", "text"])
def test_a_rendered_gemini_stream_reads_back_as_its_script(script: list[dict[str, Any]]) -> None:
    reply = render("gemini", script, "m")
    assert (reply.status, reply.disconnect) == (200, False)
    assert _read("gemini", b"".join(reply.frames)) == _gemini_expected(script)
    usages = [json.loads(e.data)["usageMetadata"] for e in decode_all(b"".join(reply.frames))]
    stop = script[-1]["usage"]
    assert all(u["promptTokenCount"] == stop["inputTokens"] for u in usages)  # a running total on each
    assert usages[-1]["candidatesTokenCount"] == stop["outputTokens"]


def test_a_gemini_function_call_must_be_one_json_object() -> None:
    script = [
        {"type": "tool_call_start", "id": "c", "name": "f"},
        {"type": "tool_call_delta", "id": "c", "argsJsonDelta": "[1"},
        {"type": "tool_call_end", "id": "c"},
        {"type": "stop", "stopReason": "tool_use"},
    ]
    with pytest.raises(KitUsageError, match="whole"):
        render("gemini", script, "m")


@st.composite
def _gemini_scripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Like :func:`_scripts`, but every call's fragments join into one JSON object (Gemini's only form)."""
    steps: list[dict[str, Any]] = []
    for index in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            steps += [
                {"type": "text_delta", "text": t} for t in draw(st.lists(_TEXT, min_size=1, max_size=3))
            ]
            continue
        call = f"call_{index}"
        args = json.dumps(draw(st.dictionaries(_TEXT, st.integers() | _TEXT, max_size=3)))
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(args) - 1)), max_size=3)))
        pieces = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True) if args[a:b]]
        steps.append({"type": "tool_call_start", "id": call, "name": "echo"})
        steps += [{"type": "tool_call_delta", "id": call, "argsJsonDelta": p} for p in pieces]
        steps.append({"type": "tool_call_end", "id": call})
    usage = {"inputTokens": draw(st.integers(0, 10**6)), "outputTokens": draw(st.integers(0, 10**6))}
    reason = draw(st.sampled_from(["stop", "length", "tool_use", "content_filter"]))
    return [*steps, {"type": "stop", "stopReason": reason, "usage": usage}]


@settings(max_examples=60)
@given(script=_gemini_scripts())
def test_any_gemini_script_survives_rendering_and_reading_back(script: list[dict[str, Any]]) -> None:
    assert _read("gemini", b"".join(render("gemini", script, "m").frames)) == _gemini_expected(script)


def test_a_gemini_request_is_booked_with_the_model_of_its_path() -> None:
    path = "/gemini/v1beta/models/gemini-kit-1:streamGenerateContent?alt=sse"
    raw, observed = asyncio.run(_exchange(TEXT, dialect="gemini", path=path))
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n")
    [request] = observed.provider_requests
    assert (request["provider"], request["model"]) == ("gemini", "gemini-kit-1")
    assert request["http"]["path"] == "/v1beta/models/gemini-kit-1:streamGenerateContent?alt=sse"
    assert observed.violations == []
    for wrong in ("/gemini/v1beta/models/m:generateContent", "/gemini/v1beta/models/m:streamGenerateContent"):
        raw, observed = asyncio.run(_exchange(TEXT, dialect="gemini", path=wrong))
        assert raw.startswith(b"HTTP/1.1 404 ")  # not streamed, or not as SSE
        assert "no provider endpoint" in observed.violations[0].message


def test_the_gemini_sdk_reads_the_rendered_stream() -> None:
    genai = pytest.importorskip(
        "google.genai",
        reason="google-genai is not installed (pip install -e '.[test]' installs google-genai<3)",
    )

    async def run() -> tuple[list[Any], _Observed]:
        observed = _Observed()
        queue = [TOOL_ROUND]
        server = await DialectServer.start({"gemini": "official"}, observed, lambda: queue.pop(0))
        try:
            options = genai.types.HttpOptions(base_url=server.endpoints()[0]["baseUrl"])
            client = genai.Client(api_key="k", http_options=options)
            stream = await client.aio.models.generate_content_stream(model="gemini-kit-1", contents="hi")
            return [chunk async for chunk in stream], observed
        finally:
            await server.close()

    chunks, observed = asyncio.run(run())
    assert observed.violations == []
    assert observed.provider_requests[0]["model"] == "gemini-kit-1"
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert "".join(p.text or "" for p in parts) == "Let me look."
    [call] = [p.function_call for p in parts if p.function_call]
    assert (call.id, call.name, call.args) == ("call_1", "echo", {"x": 1})
    assert chunks[-1].candidates[0].finish_reason == "STOP"
    usage = chunks[-1].usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count) == (12, 7)
