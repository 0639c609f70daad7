"""The line-delimited JSON-RPC 2.0 peer: framing, correlation, callbacks both ways, failures, validation.

Each test runs one scenario on a fresh event loop over a local socket pair: either two peers talking to
each other, or one peer and a raw end that writes exactly the bytes a misbehaving implementation would.
Every scenario is bounded by a generous guard so a regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import AdapterError
from relavium_conformance._version import PROTOCOL_VERSION, PROTOCOL_VERSIONS
from relavium_conformance._wire.envelope import MAX_DEPTH, _depth_exceeds, decode_line
from relavium_conformance._wire.handshake import (
    agree_protocol_version,
    answer_protocol_version,
    has_batch_lines,
)
from relavium_conformance._wire.jsonrpc import (
    DEFAULT_LINE_LIMIT,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    JsonObject,
    JsonRpcPeer,
    MalformedMessage,
    OversizeMessage,
    PeerClosed,
    PeerCrashed,
    PeerTimeout,
    ProtocolMismatch,
    RpcError,
    envelope_kind,
)

GUARD = 20.0  # seconds: only ever reached by a hanging regression


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    async def guarded() -> None:
        await asyncio.wait_for(scenario(), GUARD)

    asyncio.run(guarded())


Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def socket_pair(limit: int = DEFAULT_LINE_LIMIT) -> tuple[Streams, Streams]:
    left, right = socket.socketpair()
    return (
        await asyncio.open_connection(sock=left, limit=limit),
        await asyncio.open_connection(sock=right, limit=limit),
    )


class Raw:
    """The other end, written and read byte for byte."""

    def __init__(self, streams: Streams) -> None:
        self.reader, self.writer = streams

    async def send(self, line: bytes) -> None:
        self.writer.write(line)
        await self.writer.drain()

    async def send_json(self, message: JsonObject) -> None:
        await self.send(json.dumps(message).encode() + b"\n")

    async def line(self) -> bytes:
        return await self.reader.readuntil(b"\n")

    async def message(self) -> Any:
        return json.loads(await self.line())

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def peer_and_raw(
    *, limit: int = DEFAULT_LINE_LIMIT, line_limit: int = DEFAULT_LINE_LIMIT, **options: Any
) -> tuple[JsonRpcPeer, Raw]:
    mine, theirs = await socket_pair(limit)
    return JsonRpcPeer(*mine, line_limit=line_limit, **options), Raw(theirs)


async def wait_until(predicate: Callable[[], bool]) -> None:
    while not predicate():
        await asyncio.sleep(0.005)


# --------------------------------------------------------------------------------------------------
# Requests, answers, framing


def test_request_returns_the_answered_result_and_ids_count_from_one() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        first = asyncio.create_task(peer.request("first", {"x": 1}))
        assert await raw.message() == {"jsonrpc": "2.0", "id": 1, "method": "first", "params": {"x": 1}}
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": {"ok": [1, 2]}})
        assert await first == {"ok": [1, 2]}
        second = asyncio.create_task(peer.request("second"))
        assert await raw.message() == {"jsonrpc": "2.0", "id": 2, "method": "second"}
        await raw.send_json({"jsonrpc": "2.0", "id": 2, "result": None})
        assert await second is None
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_each_message_is_one_compact_utf8_line() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("m", {"text": "hé — multi\nline", "n": [1, 2]}))
        line = await raw.line()
        assert line == (
            b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"text":"h\xc3\xa9 \xe2\x80\x94 multi\\nline",'
            b'"n":[1,2]}}\n'
        )
        pending.cancel()
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_answers_are_matched_by_id_whatever_their_order() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        first = asyncio.create_task(peer.request("a"))
        second = asyncio.create_task(peer.request("b"))
        ids = {(await raw.message())["method"]: 0 for _ in range(2)}
        assert set(ids) == {"a", "b"}
        await raw.send_json({"jsonrpc": "2.0", "id": 2, "result": "for b"})
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": "for a"})
        assert (await first, await second) == ("for a", "for b")
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_crlf_line_endings_are_accepted() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("m"))
        await raw.message()
        await raw.send(b'{"jsonrpc":"2.0","id":1,"result":"fine"}\r\n')
        assert await pending == "fine"
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_unencodable_params_raise_before_anything_is_sent() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        with pytest.raises(TypeError):
            await peer.request("m", {"x": object()})
        with pytest.raises(ValueError, match="JSON compliant"):
            await peer.request("m", {"x": float("nan")})
        assert peer.failure is None
        pending = asyncio.create_task(peer.request("next"))
        assert await raw.message() == {"jsonrpc": "2.0", "id": 1, "method": "next"}
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": 1})
        assert await pending == 1
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_error_answer_raises_rpc_error_and_the_peer_stays_usable() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("op"))
        await raw.message()
        await raw.send_json(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "error": {"code": -32001, "message": "busy", "data": {"code": "busy"}},
            }
        )
        with pytest.raises(RpcError) as caught:
            await pending
        assert (caught.value.code, caught.value.message, caught.value.data) == (
            -32001,
            "busy",
            {"code": "busy"},
        )
        assert peer.failure is None
        again = asyncio.create_task(peer.request("op"))
        assert (await raw.message())["id"] == 2
        await raw.send_json({"jsonrpc": "2.0", "id": 2, "result": "done"})
        assert await again == "done"
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_notify_writes_a_message_without_id() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        await peer.notify("bye")
        await peer.notify("note", {"k": "v"})
        assert await raw.message() == {"jsonrpc": "2.0", "method": "bye"}
        assert await raw.message() == {"jsonrpc": "2.0", "method": "note", "params": {"k": "v"}}
        await peer.aclose()
        await raw.close()

    run(scenario)


# --------------------------------------------------------------------------------------------------
# Serving incoming requests


def test_two_peers_serve_callbacks_while_their_own_request_is_pending() -> None:
    """The kit calls an operation; the implementation calls back twice; while serving the second
    callback the kit sends another operation (as it would send an abort) and only then answers."""
    log: list[str] = []

    async def scenario() -> None:
        kit_side, impl_side = await socket_pair()
        kit: JsonRpcPeer
        impl: JsonRpcPeer

        async def kit_handler(method: str, params: JsonObject) -> Any:
            log.append(f"kit serves {method} {params['n']}")
            if params["n"] == 2:
                log.append("kit says " + await kit.request("session.abort", {}))
            return params["n"] * 10

        async def impl_handler(method: str, params: JsonObject) -> Any:
            log.append(f"impl serves {method}")
            if method == "session.abort":
                return "aborted"
            first = await impl.request("provider.next", {"n": 1})
            second = await impl.request("provider.next", {"n": 2})
            return {"sum": first + second}

        kit = JsonRpcPeer(*kit_side, handler=kit_handler)
        impl = JsonRpcPeer(*impl_side, handler=impl_handler)
        assert await kit.request("session.send", {"text": "hi"}) == {"sum": 30}
        assert kit.handler_errors == impl.handler_errors == []
        await kit.aclose()
        await impl.aclose()

    run(scenario)
    assert log == [
        "impl serves session.send",
        "kit serves provider.next 1",
        "kit serves provider.next 2",
        "impl serves session.abort",
        "kit says aborted",
    ]


def test_incoming_requests_are_answered_as_they_finish() -> None:
    async def scenario() -> None:
        fast_done = asyncio.Event()

        async def handler(method: str, params: JsonObject) -> Any:
            if method == "slow":
                await fast_done.wait()
            else:
                fast_done.set()
            return method

        peer, raw = await peer_and_raw(handler=handler)
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await raw.send_json({"jsonrpc": "2.0", "id": "two", "method": "fast"})
        assert await raw.message() == {"jsonrpc": "2.0", "id": "two", "result": "fast"}
        assert await raw.message() == {"jsonrpc": "2.0", "id": 1, "result": "slow"}
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_handler_rpc_error_is_answered_as_an_error_object() -> None:
    async def scenario() -> None:
        async def handler(method: str, params: JsonObject) -> Any:
            raise RpcError(-32000, "refused", {"why": params["why"]})

        peer, raw = await peer_and_raw(handler=handler)
        await raw.send_json(
            {"jsonrpc": "2.0", "id": 7, "method": "host.confirm", "params": {"why": "policy"}}
        )
        assert await raw.message() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32000, "message": "refused", "data": {"why": "policy"}},
        }
        assert peer.handler_errors == []
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_without_a_handler_every_request_is_method_not_found() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "method": "tool.call", "params": {}})
        answer = await raw.message()
        assert answer["id"] == 1
        assert answer["error"]["code"] == METHOD_NOT_FOUND
        assert "tool.call" in answer["error"]["message"]
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_a_failing_handler_is_answered_internal_error_and_recorded() -> None:
    async def scenario() -> None:
        async def handler(method: str, params: JsonObject) -> Any:
            if method == "broken":
                raise KeyError("missing-key")
            return {"not": {"json": object()}}

        peer, raw = await peer_and_raw(handler=handler)
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "method": "broken"})
        first = await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 2, "method": "unencodable"})
        second = await raw.message()
        assert first["error"]["code"] == second["error"]["code"] == INTERNAL_ERROR
        assert first["error"]["data"]["exception"] == "KeyError"
        assert "not JSON" in second["error"]["message"]
        assert [type(exc) for exc in peer.handler_errors] == [KeyError, TypeError]
        assert peer.failure is None
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_positional_params_are_refused_with_invalid_params() -> None:
    async def scenario() -> None:
        seen: list[str] = []

        async def handler(method: str, params: JsonObject) -> Any:
            seen.append(method)
            return None

        peer, raw = await peer_and_raw(handler=handler)
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1, 2]})
        assert (await raw.message())["error"]["code"] == INVALID_PARAMS
        assert seen == []
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_notifications_reach_the_handler_and_are_never_answered() -> None:
    async def scenario() -> None:
        seen: list[tuple[str, JsonObject]] = []

        async def handler(method: str, params: JsonObject) -> Any:
            seen.append((method, params))
            return "ignored"

        peer, raw = await peer_and_raw(handler=handler)
        await raw.send_json({"jsonrpc": "2.0", "method": "host.note", "params": {"seq": 1}})
        await raw.send_json({"jsonrpc": "2.0", "method": "host.bare"})
        await raw.send_json({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert await raw.message() == {"jsonrpc": "2.0", "id": 5, "result": "ignored"}
        assert seen == [("host.note", {"seq": 1}), ("host.bare", {}), ("ping", {})]
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_an_incoming_id_reused_while_in_flight_is_malformed() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def handler(method: str, params: JsonObject) -> Any:
            await release.wait()
            return None

        peer, raw = await peer_and_raw(handler=handler)
        await raw.send_json({"jsonrpc": "2.0", "id": 3, "method": "a"})
        await raw.send_json({"jsonrpc": "2.0", "id": 3, "method": "b"})
        await wait_until(lambda: peer.failure is not None)
        assert isinstance(peer.failure, MalformedMessage)
        assert "reuses the id" in peer.failure.reason
        await peer.aclose()
        await raw.close()

    run(scenario)


# --------------------------------------------------------------------------------------------------
# Failures of the other side


MALFORMED_LINES = [
    pytest.param(b"not json\n", "not JSON", id="not-json"),
    pytest.param(b"\n", "not JSON", id="blank-line"),
    pytest.param(b"\xff\xfe{}\n", "not UTF-8", id="not-utf8"),
    pytest.param(b"[1,2]\n", "not a JSON object", id="batch-array"),
    pytest.param(b'"text"\n', "not a JSON object", id="string"),
    pytest.param(b'{"id":1,"result":1}\n', '"jsonrpc" is not "2.0"', id="no-version"),
    pytest.param(b'{"jsonrpc":"1.0","id":1,"result":1}\n', '"jsonrpc" is not "2.0"', id="wrong-version"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":NaN}\n', "not JSON", id="nan"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":1e400}\n', "beyond the range of a double", id="1e400"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 200_000 + b"]" * 200_000 + b"}\n",
        "nested deeper than 128 levels",
        id="200000-deep",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 200 + b"]" * 200 + b"}\n",
        "nested deeper than 128 levels",
        id="200-deep",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}\n',
        "both",
        id="result-and-error",
    ),
    pytest.param(b'{"jsonrpc":"2.0","id":1}\n', "neither a request", id="neither"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":1,"extra":2}\n', "unexpected members", id="extra-member"),
    pytest.param(b'{"jsonrpc":"2.0","method":5}\n', '"method" is not a string', id="method-not-string"),
    pytest.param(b'{"jsonrpc":"2.0","id":true,"method":"m"}\n', "integer or a string", id="boolean-id"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}\n', "error.code", id="bad-code"
    ),
    pytest.param(b'{"jsonrpc":"2.0","id":99,"result":1}\n', "no pending request (id 99)", id="unknown-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":"1","result":1}\n', "no pending request (id '1')", id="string-id"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n',
        "tied to no request",
        id="null-id-error",
    ),
]


@pytest.mark.parametrize(("line", "fragment"), MALFORMED_LINES)
def test_a_malformed_line_breaks_the_peer_and_fails_pending_and_later_calls(
    line: bytes, fragment: str
) -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("session.send"))
        await raw.message()
        await raw.send(line)
        with pytest.raises(MalformedMessage) as caught:
            await pending
        assert fragment in caught.value.reason
        assert "\n" not in caught.value.reason
        assert isinstance(peer.failure, MalformedMessage)
        with pytest.raises(MalformedMessage):
            await peer.request("later")
        with pytest.raises(MalformedMessage):
            await peer.notify("later")
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_a_malformed_reason_quotes_at_most_200_characters() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("m"))
        await raw.message()
        await raw.send(b"z" * 5000 + b"\n")
        with pytest.raises(MalformedMessage) as caught:
            await pending
        assert "z" * 200 in caught.value.reason
        assert "z" * 201 not in caught.value.reason
        await peer.aclose()
        await raw.close()

    run(scenario)


@pytest.mark.parametrize(
    ("stream_limit", "line_limit"),
    [pytest.param(1024, 1024, id="stream-limit"), pytest.param(DEFAULT_LINE_LIMIT, 1024, id="peer-check")],
)
def test_an_oversize_line_breaks_the_peer_not_the_loop(stream_limit: int, line_limit: int) -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw(limit=stream_limit, line_limit=line_limit)
        pending = asyncio.create_task(peer.request("m"))
        await raw.message()
        await raw.send(b'{"jsonrpc":"2.0","id":1,"result":"' + b"w" * 5000 + b'"}\n')
        with pytest.raises(OversizeMessage) as caught:
            await pending
        assert "1024-byte line limit" in caught.value.reason
        assert '{"jsonrpc"' in caught.value.reason
        with pytest.raises(OversizeMessage):
            await peer.request("later")
        await peer.aclose()
        await raw.close()

    run(scenario)


@settings(max_examples=80, deadline=None)
@given(
    depth=st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3),
    decoys=st.integers(min_value=0, max_value=2 * MAX_DEPTH),
    objects=st.booleans(),
)
def test_the_depth_limit_is_the_full_walks_whatever_brackets_the_strings_hold(
    depth: int, decoys: int, objects: bool
) -> None:
    """Lines with few brackets skip the walk of the value; the verdict is always the full walk's."""
    inner: Any = "[" * decoys + "{"  # brackets inside a string count for the shortcut, never for the depth
    for _ in range(depth):  # ``depth`` arrays or objects, the string innermost
        inner = {"k": inner} if objects else [inner]
    text = json.dumps(inner)
    deep = _depth_exceeds(json.loads(text), MAX_DEPTH)
    assert deep == (depth > MAX_DEPTH)
    if deep:
        with pytest.raises(ValueError, match="nested deeper"):
            decode_line(text)
    else:
        assert decode_line(text) == json.loads(text)


# What one side writes, and where a pipe may cut it: every way of splitting or joining the bytes must
# give the reader the same messages in the same order (the reader takes whole chunks and cuts lines).
_STREAM = (
    b'{"jsonrpc":"2.0","method":"note","params":{"n":1}}\n'
    b'{"jsonrpc":"2.0","id":7,"method":"ask","params":{"text":"h\xc3\xa9 \xe2\x80\x94"}}\r\n'
    b'[{"jsonrpc":"2.0","method":"note","params":{"n":2}},{"jsonrpc":"2.0","id":8,"method":"ask"}]\n'
    b'{"jsonrpc":"2.0","id":1,"result":{"deep":[[[1.5]]]}}\n'
    b'{"jsonrpc":"2.0","method":"note","params":{"n":3}}\n'
)


def _cut(stream: bytes, cuts: list[int]) -> list[bytes]:
    """``stream`` cut at ``cuts``: the pieces a pipe might hand the reader, in order."""
    points = sorted(set(cuts) | {0, len(stream)})
    return [stream[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_STREAM)), max_size=12))
def test_how_the_bytes_are_split_never_changes_what_is_read(cuts: list[int]) -> None:
    pieces = _cut(_STREAM, cuts)

    async def scenario() -> None:
        reader = asyncio.StreamReader()
        written: list[bytes] = []

        class Writer:
            def write(self, data: bytes) -> None:
                written.append(data)

            async def drain(self) -> None:
                return None

        seen: list[tuple[str, Any]] = []

        async def handler(method: str, params: JsonObject) -> Any:
            seen.append((method, params))
            return "ok"

        peer = JsonRpcPeer(reader, Writer(), handler=handler)  # type: ignore[arg-type]
        pending = asyncio.ensure_future(peer.request("first", timeout=5))
        await asyncio.sleep(0)
        for piece in pieces:
            reader.feed_data(piece)
            await asyncio.sleep(0)  # let the reader take each piece on its own
        assert await pending == {"deep": [[[1.5]]]}
        await wait_until(lambda: len(written) >= 3)
        reader.feed_eof()
        assert isinstance(await peer.wait_failure(), PeerCrashed)
        assert seen == [
            ("note", {"n": 1}),
            ("ask", {"text": "hé —"}),
            ("note", {"n": 2}),
            ("ask", {}),
            ("note", {"n": 3}),
        ]
        answers = sorted(json.loads(line)["id"] for line in written[1:])
        assert answers == [7, 8]
        assert peer.received_lines == 5

    run(scenario)


def test_a_side_that_stops_reading_breaks_the_peer_within_the_write_timeout() -> None:
    """A write the transport cannot take at once is drained within the write timeout."""

    async def scenario() -> None:
        left, right = socket.socketpair()
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        mine = await asyncio.open_connection(sock=left)
        peer = JsonRpcPeer(*mine, write_timeout=0.2)
        with pytest.raises(PeerTimeout, match="stopped reading its input"):
            await peer.request("big", {"blob": "x" * (4 * 1024 * 1024)}, timeout=None)
        assert isinstance(peer.failure, PeerTimeout)
        await peer.aclose()
        right.close()

    run(scenario)


def test_end_of_output_fails_pending_requests_with_peer_crashed() -> None:
    async def scenario() -> None:
        async def describe() -> str:
            return "the implementation exited with code 9; last stderr: boom"

        peer, raw = await peer_and_raw(describe_eof=describe)
        pending = asyncio.create_task(peer.request("session.send"))
        await raw.message()
        await raw.close()
        with pytest.raises(PeerCrashed) as caught:
            await pending
        reason = caught.value.reason
        assert isinstance(await peer.wait_failure(), PeerCrashed)
        assert "'session.send' was pending" in reason
        assert "code 9" in reason
        assert "boom" in reason
        with pytest.raises(PeerCrashed):
            await peer.request("later")
        await peer.aclose()

    run(scenario)


def test_an_unterminated_last_line_is_quoted_in_the_crash() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("m"))
        await raw.message()
        await raw.send(b'{"jsonrpc":"2.0","id":1,"res')
        await raw.close()
        with pytest.raises(PeerCrashed) as caught:
            await pending
        assert "unterminated" in caught.value.reason
        assert '"res' in caught.value.reason
        await peer.aclose()

    run(scenario)


def test_a_timeout_breaks_the_peer_and_names_the_method_and_the_timeout() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        other = asyncio.create_task(peer.request("session.send", timeout=None))
        with pytest.raises(PeerTimeout) as caught:
            await peer.request("provider.next", timeout=0.2)
        assert "'provider.next'" in caught.value.reason
        assert "0.2 s" in caught.value.reason
        with pytest.raises(PeerTimeout):
            await other
        with pytest.raises(PeerTimeout):
            await peer.request("later")
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_the_default_timeout_applies_when_none_is_given() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw(default_timeout=0.2)
        with pytest.raises(PeerTimeout, match=r"within 0\.2 s"):
            await peer.request("m")
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_a_cancelled_request_ignores_its_late_answer() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        abandoned = asyncio.create_task(peer.request("slow"))
        await raw.message()
        abandoned.cancel()
        with pytest.raises(asyncio.CancelledError):
            await abandoned
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": "late"})
        pending = asyncio.create_task(peer.request("next"))
        assert (await raw.message())["id"] == 2
        await raw.send_json({"jsonrpc": "2.0", "id": 2, "result": "fresh"})
        assert await pending == "fresh"
        assert peer.failure is None
        # a second answer to the abandoned id is no longer expected
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": "again"})
        await wait_until(lambda: peer.failure is not None)
        assert isinstance(peer.failure, MalformedMessage)
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_closing_fails_pending_requests_with_peer_closed() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.create_task(peer.request("m"))
        await raw.message()
        await peer.aclose()
        await peer.aclose()
        with pytest.raises(PeerClosed):
            await pending
        with pytest.raises(PeerClosed):
            await peer.request("later")
        assert not isinstance(peer.failure, AdapterError)
        assert peer.closed
        assert await raw.reader.read() == b""  # our end was closed
        await raw.close()

    run(scenario)


def test_closing_after_a_failure_keeps_the_failure() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        await raw.send(b"garbage\n")
        await wait_until(lambda: peer.failure is not None)
        await peer.aclose()
        with pytest.raises(MalformedMessage):
            await peer.request("later")
        await raw.close()

    run(scenario)


# --------------------------------------------------------------------------------------------------
# Validation


def test_the_validator_sees_every_message_with_the_method_it_belongs_to() -> None:
    seen: list[tuple[str, str, str | None]] = []

    def validate(direction: str, message: JsonObject, method: str | None) -> None:
        seen.append((direction, envelope_kind(message), method))

    async def scenario() -> None:
        peer, raw = await peer_and_raw(validate=validate, handler=lambda m, p: asyncio.sleep(0, "r"))
        pending = asyncio.create_task(peer.request("session.send"))
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "method": "host.emit", "params": {}})
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": "over"})
        await pending
        await peer.notify("bye")
        await peer.aclose()
        await raw.close()

    run(scenario)
    assert seen == [
        ("outgoing", "request", "session.send"),
        ("incoming", "request", "host.emit"),
        ("outgoing", "result", "host.emit"),
        ("incoming", "result", "session.send"),
        ("outgoing", "notification", "bye"),
    ]


def test_an_incoming_message_failing_validation_breaks_the_peer() -> None:
    def validate(direction: str, message: JsonObject, method: str | None) -> None:
        if direction == "incoming" and "result" in message and "turnId" not in message["result"]:
            raise ValueError("'turnId' is a required property\nlong details on further lines")

    async def scenario() -> None:
        peer, raw = await peer_and_raw(validate=validate)
        pending = asyncio.create_task(peer.request("session.send"))
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": {"turn": 1}})
        with pytest.raises(MalformedMessage) as caught:
            await pending
        assert caught.value.reason.startswith("incoming message fails validation ('turnId' is a required")
        assert "long details" not in caught.value.reason
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_an_outgoing_message_failing_validation_is_a_protocol_failure_and_is_not_sent() -> None:
    def validate(direction: str, message: JsonObject, method: str | None) -> None:
        if direction == "outgoing":
            raise ValueError("unknown method")

    async def scenario() -> None:
        peer, raw = await peer_and_raw(validate=validate)
        with pytest.raises(MalformedMessage, match="outgoing message fails validation"):
            await peer.request("sesion.typo")
        await peer.aclose()
        assert await raw.reader.read() == b""
        await raw.close()

    run(scenario)


def _schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((schemas_dir() / "protocol" / "jsonrpc.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_message_the_peer_writes_fits_the_envelope_schema() -> None:
    schema = _schema_validator()
    checked: list[JsonObject] = []

    def validate(direction: str, message: JsonObject, method: str | None) -> None:
        schema.validate(message)
        checked.append(message)

    async def scenario() -> None:
        kit_side, impl_side = await socket_pair()
        impl: JsonRpcPeer

        async def kit_handler(method: str, params: JsonObject) -> Any:
            if method == "host.confirm":
                raise RpcError(-32000, "denied")
            if method == "host.crash":
                raise RuntimeError("kit bug")
            return {"chunk": "é"}

        async def impl_handler(method: str, params: JsonObject) -> Any:
            if method == "bye":
                return None
            await impl.notify("host.emit", {"event": "turn_started"})
            chunk = await impl.request("provider.next", {})
            with pytest.raises(RpcError):
                await impl.request("host.confirm", {"tool": "x"})
            with pytest.raises(RpcError):
                await impl.request("host.crash")
            raise RpcError(-32010, "turn failed", {"chunk": chunk})

        kit = JsonRpcPeer(*kit_side, handler=kit_handler, validate=validate)
        impl = JsonRpcPeer(*impl_side, handler=impl_handler, validate=validate)
        with pytest.raises(RpcError):
            await kit.request("session.send", {"text": "hi"})
        await kit.notify("bye")
        await wait_until(lambda: len(checked) >= 2 * 10)  # ten messages, each checked by both ends
        await kit.aclose()
        await impl.aclose()

    run(scenario)
    kinds = {envelope_kind(message) for message in checked}
    assert kinds == {"request", "notification", "result", "error"}


ENVELOPES = [
    ({"jsonrpc": "2.0", "id": 1, "method": "m"}, True),
    ({"jsonrpc": "2.0", "id": "a", "method": "m", "params": {"x": 1}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1]}, True),
    ({"jsonrpc": "2.0", "method": "m"}, True),
    ({"jsonrpc": "2.0", "id": 1, "result": None}, True),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x", "data": [1]}}, True),
    ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}, True),
    ({"jsonrpc": "2.0", "id": None, "result": 1}, False),
    ({"jsonrpc": "2.0", "id": 1}, False),
    ({"jsonrpc": "2.0", "method": "m", "params": 3}, False),
    ({"jsonrpc": "2.0", "method": 1}, False),
    ({"jsonrpc": "2.0", "id": True, "method": "m"}, False),
    ({"jsonrpc": "2.0", "id": [1], "method": "m"}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "m", "result": 1}, False),
    ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "x"}}, False),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}, False),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x", "more": 1}}, False),
    ({"jsonrpc": "2.0", "id": 1, "error": "x"}, False),
    ({"jsonrpc": "2.1", "id": 1, "result": 1}, False),
    ({"id": 1, "result": 1}, False),
    ([{"jsonrpc": "2.0", "method": "m"}], False),
]


@pytest.mark.parametrize(("message", "valid"), ENVELOPES)
def test_the_envelope_schema_and_the_peers_own_check_agree(message: Any, valid: bool) -> None:
    schema_says = _schema_validator().is_valid(message)
    try:
        envelope_kind(message)
        peer_says = True
    except ValueError:
        peer_says = False
    assert (schema_says, peer_says) == (valid, valid)


# --------------------------------------------------------------------------------------------------
# The hello version agreement


@pytest.mark.parametrize(
    ("answered", "agreed"),
    [("1.0", "1.0"), ("1.0.3", "1.0"), ("1.1", "1.1"), ("1.1.2", "1.1"), ("1.7", "1.1")],
)
def test_the_kit_speaks_its_newest_version_not_newer_than_the_answer(answered: str, agreed: str) -> None:
    assert agree_protocol_version({"protocolVersion": answered, "name": "x"}, ("1.0", "1.1")) == agreed


def test_an_answer_older_than_every_version_the_kit_serves_is_a_mismatch() -> None:
    with pytest.raises(ProtocolMismatch) as caught:
        agree_protocol_version({"protocolVersion": "1.0"}, ("1.1",))
    assert "1.0" in caught.value.reason
    assert "the kit speaks 1.1" in caught.value.reason


@pytest.mark.parametrize("answered", ["2.0", "0.9", "10.0"])
def test_a_hello_answer_of_another_major_is_a_mismatch_naming_both(answered: str) -> None:
    with pytest.raises(ProtocolMismatch) as caught:
        agree_protocol_version({"protocolVersion": answered}, ("1.0", "1.1"))
    assert f"speaks protocol {answered}," in caught.value.reason
    assert "the kit speaks 1.0 and 1.1" in caught.value.reason


@pytest.mark.parametrize("result", [None, "1.0", [1], {}, {"protocolVersion": 1}, {"protocolVersion": "v1"}])
def test_a_garbled_hello_answer_is_malformed(result: Any) -> None:
    with pytest.raises(MalformedMessage, match="hello answer"):
        agree_protocol_version(result)


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        ("1.1", "1.1"),
        ("1.0", "1.0"),
        ("1.0.2", "1.0"),
        ("1.9", "1.1"),
        ("2.0", "1.1"),
        (None, "1.1"),
        ("x", "1.1"),
    ],
)
def test_an_implementation_answers_the_newest_version_both_speak(offered: Any, answered: str) -> None:
    assert answer_protocol_version(offered, ("1.0", "1.1")) == answered


def test_only_1_0_lacks_batch_lines() -> None:
    assert not has_batch_lines("1.0")
    assert has_batch_lines("1.1")
    assert has_batch_lines("1.4")
    assert PROTOCOL_VERSION == PROTOCOL_VERSIONS[-1] == "1.1"
    assert has_batch_lines(PROTOCOL_VERSION)


_LIMIT = 60


class _Sink:
    """A writer that takes every byte and keeps none."""

    def write(self, data: bytes) -> None:
        return None

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None


_OVERSIZE_STREAM = (
    b'{"jsonrpc":"2.0","method":"note","params":{"n":1}}\n'
    b'{"jsonrpc":"2.0","method":"m","params":{"s":"' + "é".encode() * 40 + b'"}}\n'
    b'{"jsonrpc":"2.0","method":"note","params":{"n":2}}\n'
)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_OVERSIZE_STREAM)), max_size=6))
def test_an_oversize_lines_reason_is_the_same_however_the_bytes_are_split(cuts: list[int]) -> None:
    """Whether the long line ended inside what was read or not, one reason, with the same quote."""
    pieces = _cut(_OVERSIZE_STREAM, cuts)

    async def scenario() -> str:
        reader = asyncio.StreamReader()

        async def handler(method: str, params: JsonObject) -> Any:
            return "ok"

        peer = JsonRpcPeer(reader, _Sink(), handler=handler, line_limit=_LIMIT)  # type: ignore[arg-type]
        for piece in pieces:
            reader.feed_data(piece)
            await asyncio.sleep(0)
        reader.feed_eof()
        failure = await asyncio.wait_for(peer.wait_failure(), GUARD)
        assert isinstance(failure, OversizeMessage)
        await peer.aclose()
        return failure.reason

    reason = asyncio.run(scenario())
    head = _OVERSIZE_STREAM.split(b"\n")[1][: _LIMIT + 1].decode("utf-8", "replace")
    assert reason.startswith(f"a message line is longer than the {_LIMIT}-byte line limit; it starts ")
    assert reason == asyncio.run(_whole_line_reason())
    assert head[:20] in reason


async def _whole_line_reason() -> str:
    """The reason when the whole stream arrives in one piece (the long line ends inside the chunk)."""
    reader = asyncio.StreamReader()

    async def handler(method: str, params: JsonObject) -> Any:
        return "ok"

    peer = JsonRpcPeer(reader, _Sink(), handler=handler, line_limit=_LIMIT)  # type: ignore[arg-type]
    reader.feed_data(_OVERSIZE_STREAM)
    reader.feed_eof()
    failure = await asyncio.wait_for(peer.wait_failure(), GUARD)
    await peer.aclose()
    assert isinstance(failure, OversizeMessage)
    return failure.reason


def test_a_write_never_passes_one_waiting_for_the_lock() -> None:
    """Writes go out in the order they were asked for, as under the plain lock: a write asked for
    while another waits its turn (the one before it draining a full pipe) goes after it, even when
    it comes in the moment the lock is handed over."""

    class Transport:
        buffered = 0

        def is_closing(self) -> bool:
            return False

        def get_write_buffer_size(self) -> int:
            return self.buffered

    class Writer:
        def __init__(self) -> None:
            self.transport = Transport()
            self.wire: list[str] = []
            self.gate = asyncio.Event()
            self.drained = False

        def write(self, data: bytes) -> None:
            method = json.loads(data)["method"]
            self.wire.append(method)
            if method == "first":
                self.transport.buffered = 100_000  # the pipe is full: this write must drain

        async def drain(self) -> None:
            if self.transport.buffered:
                await self.gate.wait()
                self.transport.buffered = 0
                self.drained = True

        def is_closing(self) -> bool:
            return False

        def close(self) -> None:
            return None

        async def wait_closed(self) -> None:
            return None

    async def scenario() -> list[str]:
        writer = Writer()
        peer = JsonRpcPeer(asyncio.StreamReader(), writer)  # type: ignore[arg-type]
        first = asyncio.create_task(peer.notify("first"))
        await asyncio.sleep(0)
        second = asyncio.create_task(peer.notify("second"))  # waits for the lock
        await asyncio.sleep(0)

        async def third_once_the_first_drained() -> None:
            while not writer.drained:
                await asyncio.sleep(0)
            await peer.notify("third")  # the lock is being handed to "second" right now

        third = asyncio.create_task(third_once_the_first_drained())
        await asyncio.sleep(0)
        writer.gate.set()
        await asyncio.wait_for(asyncio.gather(first, second, third), GUARD)
        return writer.wire

    assert asyncio.run(scenario()) == ["first", "second", "third"]


# --------------------------------------------------------------------------------------------------
# Operations issued together, per protocol version; breakage tied to its request; the reader's end


@pytest.mark.parametrize("batch_lines", [True, False])
def test_corked_requests_are_one_batch_line_from_1_1_and_separate_lines_in_1_0(batch_lines: bool) -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        peer.batch_lines = batch_lines
        peer.cork()
        asks = [asyncio.ensure_future(peer.request(name, {"handle": "h"})) for name in ("abort", "cancel")]
        await asyncio.sleep(0)
        await peer.uncork()
        expected = [
            {"jsonrpc": "2.0", "id": 1, "method": "abort", "params": {"handle": "h"}},
            {"jsonrpc": "2.0", "id": 2, "method": "cancel", "params": {"handle": "h"}},
        ]
        if batch_lines:
            assert await raw.message() == expected
        else:
            assert [await raw.message(), await raw.message()] == expected
        for request_id in (1, 2):
            await raw.send_json({"jsonrpc": "2.0", "id": request_id, "result": {}})
        assert await asyncio.gather(*asks) == [{}, {}]
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_a_second_answer_is_tied_to_the_request_it_repeats() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        first = asyncio.ensure_future(peer.request("first"))
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": {}})
        assert await first == {}
        second = asyncio.ensure_future(peer.request("second"))
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": {"again": True}})  # late and repeated
        with pytest.raises(MalformedMessage, match="an answer to no pending request"):
            await second
        assert peer.broken_at == 1  # the first request's fault, not the second's
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_an_answer_to_an_id_never_sent_is_tied_to_no_request() -> None:
    async def scenario() -> None:
        peer, raw = await peer_and_raw()
        pending = asyncio.ensure_future(peer.request("only"))
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 9, "result": {}})
        with pytest.raises(MalformedMessage, match=r"id 9"):
            await pending
        assert peer.broken_at is None
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_whatever_breaks_the_reader_breaks_the_peer_with_a_reason() -> None:
    """A defect met while reading (here: a validator that raises what no one expects, from inside the
    reader's loop) ends the pending request with a reason at once, never a silent reader and a timeout."""

    async def scenario() -> None:
        peer, raw = await peer_and_raw(default_timeout=GUARD * 2)

        def receive(line: bytes) -> None:
            raise LookupError("a defect")

        peer._receive = receive  # type: ignore[method-assign,assignment]
        pending = asyncio.ensure_future(peer.request("m"))
        await raw.message()
        await raw.send_json({"jsonrpc": "2.0", "id": 1, "result": {}})
        with pytest.raises(MalformedMessage, match=r"could not read a message \(LookupError: a defect\)"):
            await pending
        await peer.aclose()
        await raw.close()

    run(scenario)


def test_a_request_whose_write_fails_after_a_breakage_leaves_no_unretrieved_future() -> None:
    """The peer breaks while a request is still being written (a bad line arrives first): the request
    raises the failure, and its future's copy of it is retrieved (asyncio would log it otherwise)."""
    import gc

    reported: list[dict[str, Any]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context))
        peer, raw = await peer_and_raw(write_timeout=GUARD)
        slow = asyncio.Event()

        async def write_drained(data: bytes, what: str) -> None:
            await slow.wait()
            peer._raise_if_unusable()

        peer._slow_writers = 1  # force the drained path
        peer._write_drained = write_drained  # type: ignore[method-assign]
        pending = asyncio.ensure_future(peer.request("m"))
        await asyncio.sleep(0)
        peer._fail(MalformedMessage("a line that is refused (not JSON): 'x'"))  # what the reader does
        slow.set()
        with pytest.raises(MalformedMessage):
            await pending
        del pending
        await peer.aclose()
        await raw.close()
        gc.collect()
        await asyncio.sleep(0)

    run(scenario)
    gc.collect()
    assert not [context for context in reported if "never retrieved" in str(context.get("message"))]
