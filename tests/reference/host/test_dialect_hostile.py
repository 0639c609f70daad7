"""The engine's dialect client against hostile vendors on 127.0.0.1 (issue 35): bounded bytes, bounded time.

Every bomb ends on its own as one classified provider error chunk, never a raised exception and never an
``unknown`` kind (``internal`` at the session): a huge or gzip-bombed error body is read up to its cap and
classified from the status; a streamed reply that passes its size, line or event cap is cut (``transport``);
a redirect is not followed (``transport``); a frame nested deeper than the JSON parser goes is malformed
(``transport``).  The time bombs (silence, a trickle, tokens without end) end at the session's attempt
deadline as ``timeout``.  The caps and deadlines are small here so the tests stay fast; the defaults are
measured, one bomb per subprocess with its peak memory, by ``tests/reference/hostile_bombs.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.reference.enginekit import make_session
from tests.reference.hostilekit import (
    REQUEST,
    SMALL,
    chunk,
    collect,
    gzip_zeros,
    head,
    hostile,
    openai_frame,
    provider,
    send,
)

from relavium_reference._host.attempt_deadline import AttemptDeadline, bounded_stream
from relavium_reference._host.dialect_client import HttpEndpoint, HttpLimits, HttpProvider, http_resolver
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import StreamChunk, StreamErrorChunk
from relavium_reference._model.vocabulary import LlmErrorKind, ProviderId

QUICK = AttemptDeadline(idle=0.3, total=0.8)


def _error(chunks: list[StreamChunk]) -> Any:
    assert chunks, "the stream ended without a chunk"
    last = chunks[-1]
    assert isinstance(last, StreamErrorChunk), last
    assert last.error.kind is not LlmErrorKind.UNKNOWN
    return last.error


async def _forever(writer: asyncio.StreamWriter, served: Any, piece: bytes, *, chunked: bool = True) -> None:
    while True:
        await send(writer, served, chunk(piece) if chunked else piece)


def test_a_huge_error_body_is_read_up_to_its_cap_and_classified_from_the_status() -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(writer, served, head(500, "content-type: application/json", length=1 << 30))
        await _forever(writer, served, b"x" * 65536, chunked=False)

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            return await collect(provider(base).stream(REQUEST))

    served: Any = None
    error = _error(asyncio.run(main()))
    assert (error.kind, error.status) == (LlmErrorKind.OVERLOADED, 500)
    assert served.written < 8 << 20  # the client stopped reading near the 4 KiB cap (socket buffers aside)


def test_a_gzip_bomb_on_a_500_stops_at_the_cap() -> None:
    bomb = gzip_zeros(64 << 20)  # 64 MiB of zeros, about 64 KiB on the wire

    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(writer, served, head(500, "content-encoding: gzip", length=len(bomb)) + bomb)

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            return await collect(provider(base).stream(REQUEST))

    served: Any = None
    error = _error(asyncio.run(main()))
    assert (error.kind, error.status) == (LlmErrorKind.OVERLOADED, 500)


@pytest.mark.parametrize(
    ("encoding", "payload", "cap"),
    [
        ("gzip", gzip_zeros(16 << 20, b":\n"), "bytes"),  # comment lines inflating past the 1 MiB reply cap
        ("identity", b"data: " + b"a" * (200 * 1024), "line"),  # one line past the 64 Ki line cap
        ("identity", b"data: a\n" * (80 * 1024), "event"),  # an event past the 128 Ki event cap
    ],
)
def test_a_streamed_reply_past_a_cap_is_cut_as_a_transport_error(
    encoding: str, payload: bytes, cap: str
) -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(
            writer, served, head(200, "content-type: text/event-stream", f"content-encoding: {encoding}")
        )
        await send(writer, served, payload)

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            return await collect(provider(base).stream(REQUEST))

    served: Any = None
    error = _error(asyncio.run(main()))
    assert error.kind is LlmErrorKind.TRANSPORT
    assert "the reply was cut" in error.message
    assert cap in error.message


def test_an_encoding_the_client_did_not_ask_for_is_a_transport_error() -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(
            writer, served, head(200, "content-type: text/event-stream", "content-encoding: br") + b"xx"
        )

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            return await collect(provider(base).stream(REQUEST))

    served: Any = None
    assert _error(asyncio.run(main())).kind is LlmErrorKind.TRANSPORT


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",  # no HTTP at all
        b"HTTP/1.1 200 OK\r\nx-endless: " + b"a" * (1 << 20),  # a header that never ends
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",  # a broken chunk size
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc",  # closed before its length
    ],
    ids=["no-http", "endless-header", "broken-chunk", "short-body"],
)
def test_a_reply_that_is_no_valid_http_is_a_transport_error(reply: bytes) -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(writer, served, reply)

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            return await collect(provider(base).stream(REQUEST))

    served: Any = None
    assert _error(asyncio.run(main())).kind is LlmErrorKind.TRANSPORT


@pytest.mark.parametrize("status", [301, 302, 307, 308, 204])
def test_a_redirect_is_not_followed_and_is_a_transport_error(status: int) -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(writer, served, head(status, "location: http://127.0.0.1:9/elsewhere", length=0))

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            return await collect(provider(base).stream(REQUEST))

    served: Any = None
    error = _error(asyncio.run(main()))
    assert (error.kind, error.status) == (LlmErrorKind.TRANSPORT, status)
    assert served.requests == 1  # nothing followed the location


@pytest.mark.parametrize("where", ["stream", "error body"])
def test_a_frame_nested_100k_deep_is_classified(where: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000

    async def handler(writer: asyncio.StreamWriter) -> None:
        if where == "stream":
            await send(
                writer, served, head(200, "content-type: text/event-stream") + b"data: " + deep + b"\n\n"
            )
        else:
            await send(writer, served, head(500, length=len(deep)) + deep)

    async def main() -> list[StreamChunk]:
        nonlocal served
        async with hostile(handler) as (base, served):
            limits = HttpLimits(error_body_bytes=1 << 20, sse_line_chars=1 << 20, sse_event_chars=1 << 20)
            return await collect(provider(base, limits=limits).stream(REQUEST))

    served: Any = None
    error = _error(asyncio.run(main()))
    assert error.kind is (LlmErrorKind.TRANSPORT if where == "stream" else LlmErrorKind.OVERLOADED)


@pytest.mark.parametrize("pace", ["silent", "a byte at a time", "a token at a time", "tokens without end"])
def test_a_slow_or_endless_reply_ends_at_the_attempt_deadline(pace: str) -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(writer, served, head(200, "content-type: text/event-stream", chunked=True))
        if pace == "silent":
            await asyncio.sleep(60)
        while True:
            if pace == "a byte at a time":
                await send(writer, served, chunk(b":"))  # a comment byte every 0.1 s: bytes, but no chunk
                await asyncio.sleep(0.1)
            elif pace == "a token at a time":
                await send(writer, served, chunk(openai_frame("token ")))  # a chunk every 0.1 s: never idle
                await asyncio.sleep(0.1)
            else:  # a chunk every 10 ms: endless, yet some 3 KB by the deadline, far below the 1 MiB cap
                await send(writer, served, chunk(openai_frame("token ")))
                await asyncio.sleep(0.01)

    async def main() -> tuple[list[StreamChunk], float]:
        nonlocal served
        async with hostile(handler) as (base, served):
            loop = asyncio.get_running_loop()
            began = loop.time()
            chunks = await collect(bounded_stream(provider(base).stream(REQUEST), QUICK, "openai"))
            return chunks, loop.time() - began

    served: Any = None
    chunks, took = asyncio.run(main())
    error = _error(chunks)
    assert error.kind is LlmErrorKind.TIMEOUT
    idle = pace in ("silent", "a byte at a time")
    expected = "no chunk for 0.3 s" if idle else "passed its 0.8 s deadline"
    assert expected in error.message
    assert took < 5  # the deadline ended it (generous bound: no timing assertion is tight)


def test_the_session_ends_a_trickling_turn_as_provider_unavailable() -> None:
    async def handler(writer: asyncio.StreamWriter) -> None:
        await send(writer, served, head(200, "content-type: text/event-stream", chunked=True))
        while True:
            await send(writer, served, chunk(b":"))
            await asyncio.sleep(0.05)

    async def main() -> Any:
        nonlocal served
        async with hostile(handler) as (base, served):
            harness = make_session(
                resolver=lambda _p, _m: provider(base),
                attempt_deadline=AttemptDeadline(idle=0.2, total=0.3),
            )
            await harness.session.start()
            return await harness.session.send_message("hi")

    served: Any = None
    result = asyncio.run(main())
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "provider_unavailable"
    assert served.requests >= 1


@pytest.mark.parametrize(
    "bad",
    [
        {"idle": 0},
        {"total": -1.0},
        {"idle": float("nan")},
        {"total": float("inf")},
        {"idle": True},
        {"idle": "60"},
    ],
)
def test_a_deadline_out_of_range_or_of_the_wrong_type_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        AttemptDeadline(**bad)


def test_a_session_refuses_a_deadline_that_is_no_attempt_deadline() -> None:
    with pytest.raises(InvalidInputError):
        make_session(attempt_deadline=60)


@pytest.mark.parametrize(
    "bad",
    [
        {"base_url": "ftp://x"},
        {"base_url": 7},
        {"api_key": "k\r\nx-evil: 1"},
        {"api_key": "clé"},
        {"official": "yes"},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"limits": {"reply_bytes": 1}},
    ],
)
def test_an_endpoint_of_the_wrong_shape_is_refused_where_it_enters(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        HttpEndpoint("openai", **bad)


def test_a_resolver_is_built_from_endpoints_only() -> None:
    for bad in ([HttpEndpoint("openai")], {"openai": "http://x"}, {1: HttpEndpoint("openai")}):
        with pytest.raises(InvalidInputError):
            http_resolver(bad)  # type: ignore[arg-type]
    resolve = http_resolver({"openai": HttpEndpoint("openai")})
    assert isinstance(resolve(ProviderId.OPENAI, "m"), HttpProvider)
    with pytest.raises(LookupError):
        resolve(ProviderId.ANTHROPIC, "m")


def test_a_provider_is_built_from_an_endpoint_only() -> None:
    with pytest.raises(InvalidInputError):
        HttpProvider({"dialect": "openai"})  # type: ignore[arg-type]
    with pytest.raises(LookupError):
        HttpProvider(HttpEndpoint("mistral"))  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["error_body_bytes", "reply_bytes", "sse_line_chars", "sse_event_chars"])
def test_limits_must_be_positive_integers(field: str) -> None:
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(InvalidInputError):
            HttpLimits(**{field: bad})
    assert getattr(SMALL, field) > 0
