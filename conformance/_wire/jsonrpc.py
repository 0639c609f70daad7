"""A line-delimited JSON-RPC 2.0 peer over an asyncio stream pair.

Both sides of the stdio transport send requests: the kit calls operations, and while one is pending the
implementation calls the kit back (provider chunks, tools, host decisions), and the kit may send further
requests before it answers.  :class:`JsonRpcPeer` is therefore symmetric: it sends requests and
notifications, correlates answers by id, and serves incoming requests through one owner-supplied handler,
each in its own task, answering each as soon as it finishes.

The module knows nothing about sessions.  The kit's message set is built on top of it through three
seams: the ``handler`` (incoming calls), the ``validate`` hook (every message, both directions, with the
method it belongs to), and the plain-dict parameters and results.

Failures of the other side are :class:`~relavium_conformance._errors.AdapterError` leaves with a one-line
``reason``; after any of them the peer is *broken*: every pending request fails with that error and every
later call fails fast with it.  Closing the peer ourselves is not a failure of the other side: it is
:class:`PeerClosed`.

Wire format: one JSON object per line, UTF-8, ``\\n``-terminated (a ``\\r`` before it is tolerated); a
batch (a JSON array of messages on one line) is how the kit issues operations together (KD-KIT-1).  Our
ids count from 1; incoming ids (integers or strings) are echoed back; params are by name or absent.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import IO, Any, Final, Literal, Protocol, TypeAlias

from relavium_conformance._errors import AdapterError, KitError
from relavium_conformance._version import PROTOCOL_VERSION
from relavium_conformance._wire.envelope import (
    QUOTE_LIMIT,
    EnvelopeKind,
    JsonObject,
    MalformedMessage,
    OversizeMessage,
    PeerClosed,
    PeerCrashed,
    PeerTimeout,
    ProtocolMismatch,
    RpcError,
    decode_line,
    encode_message,
    envelope_kind,
    first_line,
    quote,
)

__all__ = [
    "DEFAULT_LINE_LIMIT",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "Direction",
    "EnvelopeKind",
    "Handler",
    "JsonObject",
    "JsonRpcPeer",
    "MalformedMessage",
    "OversizeMessage",
    "Params",
    "PeerClosed",
    "PeerCrashed",
    "PeerTimeout",
    "ProtocolMismatch",
    "RpcError",
    "Validator",
    "encode_message",
    "envelope_kind",
    "open_stdio_streams",
    "quote",
]


#: Longest accepted message line, in bytes (asyncio's own default, 64 KiB, is far too small).
DEFAULT_LINE_LIMIT: Final = 16 * 1024 * 1024

#: How many incoming calls may be served at once before the peer stops reading (back-pressure).
DEFAULT_MAX_IN_FLIGHT: Final = 256

#: The most bytes one read takes from the stream (lines are cut from what it holds).
_READ_CHUNK: Final = 256 * 1024

#: How long closing waits for queued output to be read before dropping it, in seconds.
_CLOSE_FLUSH: Final = 1.0

# Error codes reserved by JSON-RPC 2.0.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

Direction: TypeAlias = Literal["incoming", "outgoing"]
#: Outgoing parameters: by name (a mapping), by position (a sequence), or none.
Params: TypeAlias = Mapping[str, Any] | Sequence[Any] | None
#: Serves one incoming request or notification: ``await handler(method, params)`` returns the result.
Handler: TypeAlias = Callable[[str, JsonObject], Awaitable[Any]]
#: Says, in a few words, why the other side's output ended (exit code, last stderr lines).
EofDescriber: TypeAlias = Callable[[], Awaitable[str]]


class Validator(Protocol):
    """Checks one message; raising any ``Exception`` rejects it (a protocol failure that breaks the peer).

    ``method`` is the method the message belongs to: its own for a request or notification, the method
    of the request it answers for a response (``None`` when that is unknown).
    """

    def __call__(self, direction: Direction, message: JsonObject, method: str | None) -> None: ...


async def open_stdio_streams(
    *,
    line_limit: int = DEFAULT_LINE_LIMIT,
    stdin: IO[Any] | None = None,
    stdout: IO[Any] | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Asyncio streams over this process's own stdin and stdout (pipes), for serving the protocol
    from the implementation's side: ``JsonRpcPeer(*await open_stdio_streams(), handler=...)``.

    The pipes become non-blocking: nothing else may write to stdout (log to stderr instead).
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=line_limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin or sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), stdout or sys.stdout
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


# --------------------------------------------------------------------------------------------------
# The peer


class _Default(Enum):
    DEFAULT = "default"


_DEFAULT: Final = _Default.DEFAULT


@dataclass
class _Pending:
    method: str
    future: asyncio.Future[Any]


def _retrieve(task: asyncio.Future[None]) -> None:
    """Mark a background task's outcome as seen (a closing transport may fail: nobody needs to know)."""
    if not task.cancelled():
        task.exception()


def _fresh(error: KitError) -> KitError:
    """A copy of ``error`` without traceback, so one failure can be raised many times."""
    return copy.copy(error).with_traceback(None)


class JsonRpcPeer:
    """One end of a line-delimited JSON-RPC 2.0 connection.

    Create it inside a running event loop; it starts reading at once.  ``reader`` must have been
    created with ``limit=line_limit`` (or more): a longer line is an :class:`OversizeMessage`.

    ``handler`` serves incoming requests *and* notifications (for a notification its result is
    dropped).  Raise :class:`RpcError` from it to answer with an error; any other exception is
    answered with ``INTERNAL_ERROR`` and kept in :attr:`handler_errors` (a bug of the owner, not of the
    other side).  Without a handler every incoming request is answered ``METHOD_NOT_FOUND``.
    Handlers start in arrival order, each in its own task, so a handler may itself send requests.

    ``validate`` is called for every message in both directions (see :class:`Validator`).
    ``describe_eof`` is awaited when the other side's output ends, to say why in the
    :class:`PeerCrashed` reason.  ``handler`` and ``validate`` may be replaced at any time.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        handler: Handler | None = None,
        validate: Validator | None = None,
        line_limit: int = DEFAULT_LINE_LIMIT,
        default_timeout: float | None = None,
        describe_eof: EofDescriber | None = None,
        write_timeout: float | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.handler = handler
        self.validate = validate
        #: Whether :meth:`uncork` writes what it held as one batch line (protocol 1.1 and later) or as
        #: separate lines (1.0, which has no batch line); the owner sets it once the version is agreed.
        self.batch_lines = True
        #: Exceptions (other than :class:`RpcError`) raised by the handler, in order.
        self.handler_errors: list[BaseException] = []
        self._reader = reader
        self._writer = writer
        # what the fast path of a write asks whether every byte was taken (None: always drain)
        self._transport: asyncio.WriteTransport | None = getattr(writer, "transport", None)
        self._line_limit = line_limit
        self._default_timeout = default_timeout
        self._describe_eof = describe_eof
        self._write_timeout = write_timeout if write_timeout is not None else default_timeout
        self._max_in_flight = max_in_flight
        self._room = asyncio.Event()  # set when fewer than max_in_flight incoming calls are served
        self._room.set()
        self._ending = False  # the other side's output ended; the crash is being described
        self._broken_at: int | None = None
        #: Lines and bytes received so far (what a caller may bound per unit of work).
        self.received_lines = 0
        self.received_bytes = 0
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}
        self._abandoned: dict[int, str] = {}  # cancelled requests whose late answers are ignored
        self._incoming: set[int | str] = set()  # ids of incoming requests being served
        self._tasks: set[asyncio.Task[None]] = set()
        self._write_lock = asyncio.Lock()
        self._slow_writers = 0  # writes holding or waiting for the lock: a fast write never passes one
        self._corked: list[bytes] | None = None
        self._failure: KitError | None = None
        self._failed = asyncio.Event()
        self._closed = False
        self._reader_task: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(
            self._read_loop()
        )

    # -- state ------------------------------------------------------------------------------------

    @property
    def failure(self) -> KitError | None:
        """What broke the peer (an ``AdapterError``, or :class:`PeerClosed`), or ``None`` if usable."""
        return self._failure

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    @property
    def broken_at(self) -> int | None:
        """Which of our requests the breakage belongs with, when the wire says so: the id a stray second
        answer repeats, or the last request sent before the output ended.  ``None`` otherwise."""
        return self._broken_at

    @property
    def last_request_id(self) -> int:
        """The id of the last request sent (0 before the first)."""
        return self._next_id - 1

    @property
    def pending_methods(self) -> list[str]:
        """Methods of our requests still waiting for an answer, oldest first."""
        return [pending.method for pending in self._pending.values()]

    async def wait_failure(self) -> KitError:
        """Wait until the peer is broken or closed, and return why (for a server: serve until then)."""
        await self._failed.wait()
        assert self._failure is not None
        return self._failure

    def _raise_if_unusable(self) -> None:
        if self._failure is not None:
            raise _fresh(self._failure) from None

    def _fail(self, error: KitError) -> None:
        """Break the peer with ``error`` (the first failure wins)."""
        if self._failure is not None:
            return
        self._failure = error
        self._failed.set()
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            if not entry.future.done():
                entry.future.set_exception(_fresh(error))
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        if self._reader_task is not None and self._reader_task is not current:
            self._reader_task.cancel()

    def _fail_and_raise(self, error: KitError) -> None:
        self._fail(error)
        self._raise_if_unusable()

    async def _crash(self, what: str) -> None:
        if self._failure is not None or self._ending:
            return
        self._ending = True  # from now on a request's timeout waits for this crash instead
        self._broken_at = self._next_id - 1  # the output ended after our requests up to this one
        methods = [repr(method) for method in self.pending_methods]
        reason = what
        if methods:
            reason += f" while {', '.join(methods)} {'was' if len(methods) == 1 else 'were'} pending"
        if self._describe_eof is not None:
            try:
                detail = await self._describe_eof()
            except Exception as exc:  # the describer is a convenience: its failure must not hide ours
                detail = f"(could not describe the end: {first_line(exc)})"
            if detail:
                reason += f"; {detail}"
        self._fail(PeerCrashed(reason))

    # -- sending ----------------------------------------------------------------------------------

    def _check(
        self, direction: Direction, message: JsonObject, method: str | None, line: str | bytes
    ) -> None:
        if self.validate is None:
            return
        try:
            self.validate(direction, message, method)
        except Exception as exc:
            text = line.decode("utf-8").rstrip("\n") if isinstance(line, bytes) else line
            self._fail_and_raise(
                MalformedMessage(f"{direction} message fails validation ({first_line(exc)}): {quote(text)}")
            )

    def cork(self) -> None:
        """Hold outgoing messages until :meth:`uncork`, which writes them all in one write: the other
        side then reads them together (how the kit issues two operations "at the same moment")."""
        if self._corked is None:
            self._corked = []

    async def uncork(self) -> None:
        """Write what :meth:`cork` held: one batch line when :attr:`batch_lines` is set (however a pipe
        splits it, the other side reads it whole), else each message on its own line, in one write."""
        lines, self._corked = self._corked, None
        if len(lines or ()) > 1 and self.batch_lines:
            batch = b"[" + b",".join(line.rstrip(b"\n") for line in lines or ()) + b"]\n"
            await self._write(batch, "a batch of requests")
        elif len(lines or ()) > 1:
            await self._write(b"".join(lines or ()), "requests issued together")
        elif lines:
            await self._write(lines[0], "a request")

    async def _send(self, message: JsonObject, line: bytes, method: str | None) -> None:
        self._raise_if_unusable()
        self._check("outgoing", message, method, line)
        if self._corked is not None:
            self._corked.append(line)
            return
        await self._write(line, repr(method) if method else "a message")

    async def _write(self, data: bytes, what: str) -> None:
        """Write and drain, within the write timeout: a side that stops reading breaks the peer.

        When no other write holds or waits for the lock and the transport takes every byte at once (the
        usual case: a pipe with room), there is nothing to drain and nothing to time.  Counting the
        waiting writes (not only asking whether the lock is held) keeps the lock's first-come order: a
        later write never slips ahead of a waiting one while that one is being woken.  Anything else
        (another write draining, bytes left in the transport's buffer, a closing transport) drains
        under the lock within the timeout, and a broken pipe is reported as before."""
        self._raise_if_unusable()
        transport = self._transport
        if transport is not None and not self._slow_writers and not transport.is_closing():
            try:
                self._writer.write(data)
            except (OSError, RuntimeError) as exc:
                await self._crash(f"writing failed ({type(exc).__name__})")
                self._raise_if_unusable()
            if not transport.get_write_buffer_size() and not transport.is_closing():
                return
            data = b""  # handed to the transport already: what is left is to drain it
        self._slow_writers += 1
        try:
            await self._write_drained(data, what)
        finally:
            self._slow_writers -= 1

    async def _write_drained(self, data: bytes, what: str) -> None:
        async with self._write_lock:
            self._raise_if_unusable()
            try:
                async with asyncio.timeout(self._write_timeout):
                    if data:
                        self._writer.write(data)
                    await self._writer.drain()
            except TimeoutError:
                self._fail(
                    PeerTimeout(
                        f"the implementation stopped reading its input: writing {what} did not finish "
                        f"within {self._write_timeout:g} s"
                    )
                )
                self._raise_if_unusable()
            except (OSError, RuntimeError) as exc:  # broken pipe, reset, or a transport already closed
                await self._crash(f"writing failed ({type(exc).__name__})")
                self._raise_if_unusable()

    async def request(
        self,
        method: str,
        params: Params = None,
        *,
        timeout: float | Literal[_Default.DEFAULT] | None = _DEFAULT,
    ) -> Any:
        """Send a request and return its result.

        ``timeout`` (seconds, ``None`` = wait forever) defaults to the peer's ``default_timeout``.
        Raises :class:`RpcError` if the answer is an error object (the peer stays usable);
        ``TypeError``/``ValueError`` if ``params`` cannot be encoded (nothing is sent, the peer stays
        usable); :class:`PeerTimeout`, :class:`PeerCrashed`, :class:`MalformedMessage` or
        :class:`OversizeMessage` when the other side broke the protocol (the peer is broken); and
        :class:`PeerClosed` after :meth:`aclose`.  Cancelling the awaiting task abandons the request:
        nothing is sent, and its late answer is ignored.
        """
        self._raise_if_unusable()
        request_id = self._next_id
        message: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        line = encode_message(message)
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = _Pending(method, future)
        limit = self._default_timeout if timeout is _DEFAULT else timeout
        scope = asyncio.timeout(limit)
        try:
            async with scope:  # the write is inside the timeout too
                await self._send(message, line, method)
                return await future
        except TimeoutError:
            if not scope.expired():
                raise
            self._pending.pop(request_id, None)
            if self._ending:  # the output ended first: that, not the wait, is what went wrong
                await self._failed.wait()
            self._fail(PeerTimeout(f"no answer to {method!r} (request {request_id}) within {limit:g} s"))
            self._raise_if_unusable()
            raise  # unreachable: the peer is broken now
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None:
                self._abandoned[request_id] = method
            raise
        finally:
            self._pending.pop(request_id, None)
            # the peer may break while the request is still being written: the failure is raised from
            # the write, and the future's copy of it must not be reported as never retrieved
            if future.done() and not future.cancelled():
                future.exception()

    async def notify(self, method: str, params: Params = None) -> None:
        """Send a notification (no answer expected).  Raises as :meth:`request` does when sending."""
        self._raise_if_unusable()
        message: JsonObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message, encode_message(message), method)

    # -- receiving --------------------------------------------------------------------------------

    def _oversize(self, start: bytes) -> OversizeMessage:
        """A line past the limit, whether it ended in what was read or not: ``start`` holds more than
        the limit's bytes of it either way, so the reason quotes the same first bytes however the
        other side's writes were split."""
        head = start[: min(QUOTE_LIMIT, self._line_limit + 1)].decode("utf-8", "replace")
        return OversizeMessage(
            f"a message line is longer than the {self._line_limit}-byte line limit; it starts {quote(head)}"
        )

    async def _read_loop(self) -> None:
        """Read what arrived, in chunks, and handle each complete line in order at once: a chunk holding
        several lines costs one wake-up, not one per line.  However the other side's writes are split
        or joined on the way, the lines and their order are the same."""
        partial: list[bytes] = []  # the start of a line still unterminated, in the pieces it came in
        partial_size = 0
        try:
            while self._failure is None:
                chunk = await self._reader.read(_READ_CHUNK)
                if not chunk:
                    if partial:
                        text = b"".join(partial).decode("utf-8", "replace")
                        await self._crash(f"output ended inside an unterminated line {quote(text)}")
                    else:
                        await self._crash("output ended")
                    return
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    if partial:
                        partial.append(chunk[start : end + 1])
                        line = b"".join(partial)
                        partial.clear()
                        partial_size = 0
                    else:
                        line = chunk[start : end + 1]
                    start = end + 1
                    if len(line) > self._line_limit + 1:
                        self._fail(self._oversize(line))
                        return
                    self.received_lines += 1
                    self.received_bytes += len(line)
                    self._receive(line)
                    if self._failure is not None:
                        return
                    if len(self._tasks) >= self._max_in_flight:  # back-pressure: stop reading a while
                        self._room.clear()
                        await self._room.wait()
                if start < len(chunk):
                    partial.append(chunk[start:] if start else chunk)
                    partial_size += len(chunk) - start
                    if partial_size > self._line_limit:
                        self._fail(self._oversize(b"".join(partial)))
                        return
        except asyncio.CancelledError:
            raise
        except (OSError, ValueError) as exc:  # a broken transport under the reader
            await self._crash(f"reading failed ({type(exc).__name__}: {first_line(exc)})")
        except Exception as exc:  # whatever a line did to the reader: never a silent end, always a reason
            what = f"{type(exc).__name__}: {first_line(exc)}"
            self._fail(MalformedMessage(f"the kit could not read a message ({what})"))

    def _receive(self, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._fail(MalformedMessage(f"a line that is not UTF-8: {quote(raw.decode('utf-8', 'replace'))}"))
            return
        text = text.removesuffix("\n").removesuffix("\r")
        try:
            parsed = decode_line(text)
        except ValueError as exc:
            self._fail(MalformedMessage(f"a line that is refused ({exc}): {quote(text)}"))
            return
        # a batch: every message of the line is dispatched before any of them runs (KD-KIT-1)
        for message in parsed if isinstance(parsed, list) and parsed else [parsed]:
            try:
                kind = envelope_kind(message)
            except ValueError as exc:
                self._fail(MalformedMessage(f"not a JSON-RPC 2.0 message ({exc}): {quote(text)}"))
                return
            if kind in ("request", "notification"):
                method: str | None = message["method"]
            else:
                entry = self._pending.get(message["id"])
                method = entry.method if entry is not None else self._abandoned.get(message["id"])
            try:
                self._check("incoming", message, method, text)
            except (AdapterError, PeerClosed):
                return
            if kind == "request":
                self._start_serving(message, text)
            elif kind == "notification":
                self._spawn(self._serve(None, message["method"], message.get("params")))
            else:
                self._settle(kind, message, text)

    def _start_serving(self, message: JsonObject, text: str) -> None:
        request_id: int | str = message["id"]
        if request_id in self._incoming:
            self._fail(MalformedMessage(f"a request reuses the id of one still being served: {quote(text)}"))
            return
        self._incoming.add(request_id)
        self._spawn(self._serve(request_id, message["method"], message.get("params")))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if len(self._tasks) < self._max_in_flight:
            self._room.set()

    def _settle(self, kind: EnvelopeKind, message: JsonObject, text: str) -> None:
        response_id = message["id"]
        if response_id is None:
            self._fail(MalformedMessage(f"an error answer tied to no request (id null): {quote(text)}"))
            return
        entry = self._pending.pop(response_id, None) if isinstance(response_id, int) else None
        if entry is None:
            if self._abandoned.pop(response_id, None) is not None:
                return  # the late answer to a request we gave up on
            if isinstance(response_id, int) and 0 < response_id < self._next_id:
                self._broken_at = response_id  # a second answer: it belongs with that request
            self._fail(
                MalformedMessage(f"an answer to no pending request (id {response_id!r}): {quote(text)}")
            )
            return
        if entry.future.done():
            return
        if kind == "result":
            entry.future.set_result(message["result"])
        else:
            error = message["error"]
            entry.future.set_exception(RpcError(error["code"], error["message"], error.get("data")))

    async def _serve(self, request_id: int | str | None, method: str, params: Any) -> None:
        try:
            response: JsonObject
            try:
                if isinstance(params, list):
                    raise RpcError(INVALID_PARAMS, "params must be an object (by name), not an array")
                if self.handler is None:
                    raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
                result = await self.handler(method, params if params is not None else {})
                response = {"jsonrpc": "2.0", "id": request_id, "result": result}
            except RpcError as exc:
                response = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_object()}
            except Exception as exc:
                self.handler_errors.append(exc)
                response = self._internal_error(request_id, f"the handler of {method!r} failed", exc)
            if request_id is None:
                return
            try:
                line = encode_message(response)
            except (TypeError, ValueError) as exc:
                self.handler_errors.append(exc)
                response = self._internal_error(request_id, f"the result of {method!r} is not JSON", exc)
                line = encode_message(response)
            with contextlib.suppress(AdapterError, PeerClosed):
                await self._send(response, line, method)
        finally:
            if request_id is not None:
                self._incoming.discard(request_id)

    @staticmethod
    def _internal_error(request_id: int | str | None, message: str, exc: Exception) -> JsonObject:
        data = {"exception": type(exc).__name__, "detail": first_line(exc)}
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": INTERNAL_ERROR, "message": message, "data": data},
        }

    # -- closing ----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop: pending requests fail with :class:`PeerClosed` (unless already broken), handler tasks
        are cancelled, the writer is closed.  Idempotent; later calls raise the failure (or
        :class:`PeerClosed`)."""
        if self._closed:
            return
        self._closed = True
        broken = isinstance(self._failure, AdapterError)  # queued output is of no use to a broken peer
        self._fail(PeerClosed("the kit closed this connection"))
        current = asyncio.current_task()
        others = [
            task for task in (*self._tasks, self._reader_task) if task is not None and task is not current
        ]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        self._reader_task = None
        if broken:
            self._abort()
        self._writer.close()
        # Flushing what is queued waits for the other side to read: bounded, then dropped.  The wait is
        # a task of its own, never cancelled (cancelling it would break the transport's bookkeeping).
        closing = asyncio.ensure_future(self._writer.wait_closed())
        closing.add_done_callback(_retrieve)
        done, _ = await asyncio.wait({closing}, timeout=_CLOSE_FLUSH)
        if not done:
            self._abort()
            await asyncio.wait({closing}, timeout=_CLOSE_FLUSH)

    def _abort(self) -> None:
        """Drop queued output and close now (a transport already gone has nothing to drop)."""
        with contextlib.suppress(AttributeError, OSError, RuntimeError):
            self._writer.transport.abort()

    async def __aenter__(self) -> JsonRpcPeer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
