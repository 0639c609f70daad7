"""Fuzz targets of the vendors' HTTP dialects (issue 35): only documented errors escape.

* The SSE decoder, fed any bytes split anywhere, raises nothing but :class:`SseLimitError` (past its caps),
  and what it decodes does not depend on where the reads were split.
* The three dialects' stream readers, fed near-valid frames (the recorded ones, edited anywhere inside) and
  garbage, raise nothing: a frame they cannot use is skipped or ends the stream as an error chunk.
* A reply body in any content encoding raises nothing but :class:`BodyLimitError` or
  :class:`BodyEncodingError`; a failed reply of any status and JSON body classifies without raising, and
  never as a redirect's ``unknown``.
* The endpoint refuses a value of the wrong shape with :class:`InvalidInputError` and nothing else.

A few hundred examples each, so the suite stays fast.
"""

from __future__ import annotations

import itertools
import json
import zlib
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.reference.fuzzkit import HOSTILE, JSON, mutated
from tests.reference.wirekit import STREAMS

from relavium_reference._host.dialect_client import HttpEndpoint, HttpLimits, reader_for
from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import LlmError, StreamErrorChunk
from relavium_reference._model.vocabulary import LlmErrorKind
from relavium_reference._rules.dialect_body import BodyEncodingError, BodyLimitError, BoundedBody
from relavium_reference._rules.dialect_errors import error_from_reply, unexpected_status
from relavium_reference._rules.sse import SseDecoder, SseEvent, SseLimitError, decode_all

DIALECT_FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_FRAMES: dict[str, list[tuple[str, Any]]] = {}
for _stream in STREAMS:
    for _event in decode_all(_stream["body"].encode()):
        if _event.data != "[DONE]":
            _FRAMES.setdefault(_stream["dialect"], []).append((_event.event, json.loads(_event.data)))
_SSE_BITS = [
    b"data:",
    b"data: ",
    b"event: x",
    b"id: 7",
    b"retry: 1",
    b":",
    b"\r",
    b"\n",
    b"\r\n",
    b"\xef\xbb\xbf",
]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _decode(pieces: list[bytes], **caps: int) -> list[SseEvent] | None:
    decoder = SseDecoder(**caps)
    try:
        events = [event for piece in pieces for event in decoder.feed(piece)]
        return events + decoder.close()
    except SseLimitError:
        return None


@DIALECT_FUZZ
@given(
    st.lists(st.sampled_from(_SSE_BITS) | st.binary(max_size=12), max_size=40).map(b"".join),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
    st.integers(min_value=1, max_value=64),
)
def test_the_sse_decoder_raises_only_its_limit_and_ignores_where_reads_split(
    data: bytes, cuts: list[int], cap: int
) -> None:
    whole = _decode([data])
    assert whole == _decode(_split(data, cuts))
    small = _decode(_split(data, cuts), max_line=cap, max_event=cap)
    if small is not None:  # under the caps, the small decoder decodes the same events
        assert small == whole


_DEEP = SseEvent("message", "[" * 5000 + "]" * 5000)


def _events(dialect: str) -> st.SearchStrategy[list[SseEvent]]:
    """Near-valid frames of ``dialect`` (recorded ones edited inside with JSON values) and garbage."""
    frames = _FRAMES["openai" if dialect == "deepseek" else dialect]
    names = st.sampled_from([name for name, _ in frames])
    edited = st.tuples(names, mutated(st.sampled_from([frame for _, frame in frames]), JSON))
    anything = st.tuples(st.text(max_size=20), JSON)
    return st.lists(
        st.one_of(
            edited.map(lambda pair: SseEvent(pair[0], json.dumps(pair[1]))),
            anything.map(lambda pair: SseEvent(pair[0] or "message", json.dumps(pair[1]))),
            st.text(max_size=30).map(lambda text: SseEvent("message", text)),
            st.sampled_from([_DEEP, SseEvent("message", "[DONE]")]),
        ),
        max_size=12,
    )


@DIALECT_FUZZ
@given(
    st.sampled_from(["anthropic", "openai", "deepseek", "gemini"]).flatmap(
        lambda d: st.tuples(st.just(d), _events(d))
    )
)
# found by this test in a full run: a list member sent as another kind of value
@example(("openai", [SseEvent("message", '{"object": "chat.completion.chunk", "choices": true}')]))
@example(("openai", [SseEvent("message", '{"choices": [{"index": 0, "delta": {"tool_calls": 7}}]}')]))
def test_a_dialect_reader_raises_nothing_whatever_the_frames(case: tuple[str, list[SseEvent]]) -> None:
    dialect, events = case
    reader = reader_for(dialect)  # type: ignore[arg-type]
    chunks = [chunk for event in events for chunk in reader.event(event)] + reader.end()
    assert reader.finished
    errors = [chunk for chunk in chunks if isinstance(chunk, StreamErrorChunk)]
    assert len(errors) <= 1
    assert all(error.error.kind is not LlmErrorKind.CANCELLED for error in errors)


@DIALECT_FUZZ
@given(
    st.sampled_from(["", "identity", "gzip", "deflate", "br", "gzip, gzip", "GZIP"]),
    st.one_of(
        st.binary(max_size=200),
        st.binary(max_size=2000).map(lambda raw: zlib.compress(raw)),
        st.binary(max_size=2000).map(lambda raw: zlib.compress(raw, wbits=31)),
        st.binary(max_size=2000).map(lambda raw: zlib.compress(raw, wbits=-15)),
    ),
    st.lists(st.integers(min_value=0, max_value=5000), max_size=6),
    st.integers(min_value=1, max_value=4096),
)
def test_a_body_in_any_encoding_raises_only_its_two_errors(
    encoding: str, raw: bytes, cuts: list[int], limit: int
) -> None:
    try:
        body = BoundedBody(encoding, limit)
        size = sum(len(piece) for part in _split(raw, cuts) for piece in body.feed(part))
    except (BodyLimitError, BodyEncodingError):
        return
    assert size == body.size <= limit


@DIALECT_FUZZ
@given(
    st.sampled_from(["anthropic", "openai", "deepseek", "gemini"]),
    st.none() | st.integers(min_value=100, max_value=999),
    mutated(st.sampled_from([{"error": {"type": "x", "message": "m", "code": 1, "status": "S"}}])) | JSON,
)
def test_a_failed_reply_of_any_status_and_body_classifies(
    dialect: str, status: int | None, body: Any
) -> None:
    special = None if status is None else unexpected_status(dialect, status)  # type: ignore[arg-type]
    error = special or error_from_reply(dialect, status, body)  # type: ignore[arg-type]
    assert isinstance(error, LlmError)
    if status is not None and not 400 <= status <= 599:
        assert error.kind is LlmErrorKind.TRANSPORT


@DIALECT_FUZZ
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "base_url": HOSTILE | st.sampled_from(["http://h", "https://h/v1", "ftp://h"]),
            "api_key": HOSTILE,
            "official": HOSTILE,
            "timeout": HOSTILE,
            "limits": HOSTILE,
        },
    )
)
def test_an_endpoint_of_any_value_is_built_or_refused_as_invalid_input(fields: dict[str, Any]) -> None:
    try:
        HttpEndpoint("openai", **fields)
    except InvalidInputError:
        return
    assert isinstance(HttpEndpoint("openai", **fields).limits, HttpLimits)
