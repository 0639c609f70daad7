"""The wire's vocabulary: the errors of the other side, the JSON-RPC 2.0 envelope, encoding, quoting.

Pure code (no asyncio): what :mod:`relavium_conformance._wire.jsonrpc` builds its peer from, and what
the adapters and the validator share.  Also the one decoder of incoming lines, :func:`decode_line`, which
refuses what a strict JSON reader would choke on later: numbers no double can hold (``1e400``), the
``NaN``/``Infinity`` literals, an object that repeats a key (which of the two values counts differs from
one reader to the next), and values nested deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

from relavium_conformance._errors import AdapterError, KitError

__all__ = [
    "MAX_DEPTH",
    "QUOTE_LIMIT",
    "EnvelopeKind",
    "JsonObject",
    "MalformedMessage",
    "OversizeMessage",
    "PeerClosed",
    "PeerCrashed",
    "PeerTimeout",
    "ProtocolMismatch",
    "RpcError",
    "decode_line",
    "encode_message",
    "envelope_kind",
    "first_line",
    "quote",
]

#: How many characters of an offending line a reason quotes.
QUOTE_LIMIT: Final = 200

#: Deepest nesting of arrays and objects accepted in one message (the envelope counts as one level).
MAX_DEPTH: Final = 128

EnvelopeKind: TypeAlias = Literal["request", "notification", "result", "error"]
JsonObject: TypeAlias = dict[str, Any]

# --------------------------------------------------------------------------------------------------
# Errors


class PeerCrashed(AdapterError):
    """The other side's output ended (end of file, process exit, broken pipe)."""


class PeerTimeout(AdapterError):
    """A request was not answered within its timeout."""


class MalformedMessage(AdapterError):
    """A line that is not JSON, not an object, not JSON-RPC 2.0, not expected, or fails validation."""


class ProtocolMismatch(AdapterError):
    """The implementation speaks another major version of the protocol, or refused the handshake."""


class OversizeMessage(AdapterError):
    """A message line is longer than the line limit."""


class PeerClosed(KitError):
    """The kit closed this peer (or its connection) itself; it cannot be used any more."""


class RpcError(KitError):
    """A JSON-RPC error object: raised by a handler to answer with an error, and raised by
    :meth:`JsonRpcPeer.request` when the other side answered with one (an answer, not a breakage).

    ``data=None`` means the ``data`` member is absent.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    def to_object(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"RpcError(code={self.code}, message={self.message!r}, data={self.data!r})"


# --------------------------------------------------------------------------------------------------
# Pure helpers


def quote(text: str) -> str:
    """At most :data:`QUOTE_LIMIT` characters of ``text``, on one line, marked when cut."""
    cut = text[:QUOTE_LIMIT]
    return repr(cut) + ("..." if len(text) > QUOTE_LIMIT else "")


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text[:QUOTE_LIMIT]


# ``json.dumps``/``json.loads`` with options build a new encoder/decoder on every call; one of each is
# built here instead (the same options, so the same text and the same refusals).
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One message as one line: compact separators, UTF-8 (not ASCII-escaped), a final ``\\n``.

    Raises ``TypeError``/``ValueError`` for values JSON cannot carry (including NaN and infinities).
    """
    return _ENCODER.encode(message).encode("utf-8") + b"\n"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


_REQUEST_MEMBERS: Final = frozenset({"jsonrpc", "method", "params", "id"})
_RESULT_MEMBERS: Final = frozenset({"jsonrpc", "id", "result"})
_ERROR_MEMBERS: Final = frozenset({"jsonrpc", "id", "error"})
_ERROR_OBJECT_MEMBERS: Final = frozenset({"code", "message", "data"})


def _refuse_extra(message: Mapping[str, Any], allowed: frozenset[str]) -> None:
    extra = sorted(set(message) - allowed)
    if extra:
        raise ValueError(f"unexpected members {extra}")


def envelope_kind(message: object) -> EnvelopeKind:
    """Classify a decoded message as a JSON-RPC 2.0 envelope, or raise ``ValueError`` saying why not.

    Stricter than the letter of JSON-RPC in one way only: members it does not define are refused (the
    same rule as ``schemas/protocol/jsonrpc.schema.json``).
    """
    if not isinstance(message, dict):
        raise ValueError(f"not a JSON object but {type(message).__name__}")
    if message.get("jsonrpc") != "2.0":
        raise ValueError('"jsonrpc" is not "2.0"')
    if "method" in message:
        _refuse_extra(message, _REQUEST_MEMBERS)
        if not isinstance(message["method"], str):
            raise ValueError('"method" is not a string')
        if "params" in message and not isinstance(message["params"], dict | list):
            raise ValueError('"params" is neither an object nor an array')
        if "id" not in message:
            return "notification"
        if not _is_id(message["id"]):
            raise ValueError('a request "id" must be an integer or a string')
        return "request"
    if "result" in message and "error" in message:
        raise ValueError('a response has both "result" and "error"')
    if "result" in message:
        _refuse_extra(message, _RESULT_MEMBERS)
        if "id" not in message or not _is_id(message["id"]):
            raise ValueError('a result needs an integer or string "id"')
        return "result"
    if "error" in message:
        _refuse_extra(message, _ERROR_MEMBERS)
        if "id" not in message or not (message["id"] is None or _is_id(message["id"])):
            raise ValueError('an error response needs an "id" (integer, string or null)')
        error = message["error"]
        if not isinstance(error, dict):
            raise ValueError('"error" is not an object')
        _refuse_extra(error, _ERROR_OBJECT_MEMBERS)
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            raise ValueError('"error.code" is not an integer')
        if not isinstance(error.get("message"), str):
            raise ValueError('"error.message" is not a string')
        return "error"
    raise ValueError('neither a request ("method"), nor a response ("result" or "error")')


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is beyond the range of a double")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays/objects deeper than ``limit`` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object from its members, refusing a repeated key (readers disagree on which value wins)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"an object repeats the key {key[:40]!r}")
            seen.add(key)
    return value


_DECODER: Final = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
)


def _may_nest_deeper(text: str, limit: int) -> bool:
    """Whether ``text`` holds more than ``limit`` opening brackets: a value nested deeper than ``limit``
    needs at least that many, so a text with fewer cannot be (most lines: no walk of the value)."""
    return text.count("[") + text.count("{") > limit


def decode_line(text: str) -> Any:
    """One JSON value from one line, or ``ValueError`` saying why not, in a few words.

    Refused beyond plain JSON syntax: ``NaN``/``Infinity``, numbers no double holds (``1e400``), an
    object that repeats a key, and nesting deeper than :data:`MAX_DEPTH` (which would otherwise exhaust
    the recursion of the decoder or of whatever reads the value next).
    """
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError:
        raise ValueError("not JSON") from None
    except ValueError as exc:  # a refused constant, number or key, or an integer of too many digits
        if "integer string conversion" in str(exc):
            raise ValueError(f"an integer of more than {sys.get_int_max_str_digits()} digits") from None
        raise ValueError(first_line(exc)) from None
    if _may_nest_deeper(text, MAX_DEPTH) and _depth_exceeds(value, MAX_DEPTH):
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return value
