"""The kit's loopback HTTP server under a hostile client, and the recorded streams replayed through it.

A client cannot make the kit buffer what ``Content-Length`` claims (an over-cap request is refused unread
and fails the case, naming the cap), cannot grow a case's request log without bound (one difference counts
the rest), and half-open connections end quietly (no traceback on stderr, no asyncio error log).

Then every recorded vendor stream of ``fixtures/wire/streams.yaml`` (cache usage, ``length``, a stream
without ``[DONE]``, mid-stream errors...) is served by the kit's server, chunked as it chunks every
reply, and read by the reference engine's dialect client over loopback: the chunks are the recorded ones.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from tests.reference.wirekit import STREAMS, matches, seam

from relavium_conformance._report.results import Difference, DifferenceForm
from relavium_conformance._run import dialect_server
from relavium_conformance._run.dialect_render import Reply
from relavium_conformance._run.dialect_server import MAX_REQUEST_BODY, DialectServer
from relavium_reference._host.dialect_client import HttpEndpoint, HttpProvider
from relavium_reference._model.llm import LlmMessage, LlmRequest, LlmTextPart

REQUEST = LlmRequest(model="m", messages=[LlmMessage(role="user", content=[LlmTextPart(text="hi")])])
TEXT = [{"type": "text_delta", "text": "a"}, {"type": "stop", "stopReason": "stop"}]


class _Observed:
    def __init__(self) -> None:
        self.provider_requests: list[dict[str, Any]] = []
        self.violations: list[Difference] = []


async def _raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    reply = await reader.read()
    writer.close()
    return reply


def test_a_request_body_over_the_cap_is_refused_unread_and_names_the_cap() -> None:
    declared = 1 << 30  # 1 GiB declared, a few bytes sent: the server never waits for (or holds) the rest

    async def main() -> tuple[bytes, _Observed]:
        observed = _Observed()
        server = await DialectServer.start({"openai": "official"}, observed, lambda: [TEXT])
        try:
            head = (
                "POST /openai/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                f"content-length: {declared}\r\n\r\n"
            )
            reply = await asyncio.wait_for(_raw(server._port, head.encode() + b'{"model":'), 10)
        finally:
            await server.close()
        return reply, observed

    reply, observed = asyncio.run(main())
    assert reply.startswith(b"HTTP/1.1 413 ")
    [violation] = observed.violations
    assert str(MAX_REQUEST_BODY) in violation.message
    assert str(declared) in violation.message
    assert observed.provider_requests[0]["http"]["body"] is None


def test_the_request_log_is_capped_and_one_difference_counts_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dialect_server, "MAX_RECORDED_REQUESTS", 5)

    async def main() -> tuple[list[int], _Observed]:
        observed = _Observed()
        server = await DialectServer.start({"openai": "official"}, observed, lambda: None)
        statuses: list[int] = []
        try:
            [endpoint] = server.endpoints()
            async with httpx.AsyncClient() as client:
                for _ in range(12):
                    reply = await client.post(endpoint["baseUrl"] + "/chat/completions", json={"model": "m"})
                    statuses.append(reply.status_code)
        finally:
            await server.close()
        return statuses, observed

    statuses, observed = asyncio.run(main())
    assert statuses == [400] * 5 + [429] * 7
    assert len(observed.provider_requests) == 5
    assert len(observed.violations) == 6  # five unscripted requests, and the one count of the rest
    last = observed.violations[-1]
    assert last.form is DifferenceForm.EXTRA
    assert "7 more provider request(s)" in last.message


def test_half_open_connections_end_quietly(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> _Observed:
        observed = _Observed()
        server = await DialectServer.start({"openai": "official"}, observed, lambda: None)
        writers: list[asyncio.StreamWriter] = []
        for number in range(500):
            _, writer = await asyncio.open_connection("127.0.0.1", server._port)
            if number % 3 == 0:  # a head and the start of a body that never comes
                writer.write(b"POST /openai/v1/chat/completions HTTP/1.1\r\ncontent-length: 100\r\n\r\n{")
            elif number % 3 == 1:  # half a head
                writer.write(b"POST /openai/v1/chat/comp")
            await writer.drain()
            writers.append(writer)
        await asyncio.sleep(0.1)
        for number, writer in enumerate(writers):
            if number % 2:
                writer.transport.abort()  # reset
        await asyncio.sleep(0.1)
        await server.close()
        for writer in writers:
            writer.close()
        return observed

    with caplog.at_level(logging.DEBUG, logger="asyncio"):
        observed = asyncio.run(main())
    assert capfd.readouterr().err == ""
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert observed.provider_requests == []


@pytest.mark.parametrize("stream", STREAMS, ids=[s["name"] for s in STREAMS])
def test_a_recorded_stream_replayed_by_the_kit_reads_as_recorded(stream: dict[str, Any]) -> None:
    dialect = stream["dialect"]
    body = stream["body"].encode()
    frames = [frame + b"\n\n" for frame in body.split(b"\n\n") if frame.strip()]  # event by event

    async def main() -> list[Any]:
        observed = _Observed()
        server = await DialectServer.start({dialect: "official"}, observed, lambda: Reply(frames=frames))
        try:
            [endpoint] = server.endpoints()
            provider = HttpProvider(HttpEndpoint(dialect, base_url=endpoint["baseUrl"], api_key="k"))
            chunks = [chunk async for chunk in provider.stream(REQUEST)]
        finally:
            await server.close()
        assert observed.violations == []
        assert len(observed.provider_requests) == 1
        return chunks

    chunks = asyncio.run(main())
    assert matches(seam(chunks), stream["chunks"]), seam(chunks)
