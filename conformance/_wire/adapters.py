"""Adapters: how the kit reaches an implementation. One message set, two transports.

* :class:`InProcessAdapter` calls a Python object that serves the message set (the reference engine,
  or any Python port) directly.  Each call and each callback runs in a task of its own, exactly as it
  would over stdio, so an implementation cannot tell the transports apart.
* :class:`StdioAdapter` runs a program and speaks JSON-RPC 2.0 over its stdin/stdout (one object per
  line, requests both ways); stderr is captured out of band.

Adapter names (``reference``, ``stdio:COMMAND``, ``python:module:factory``...) are resolved in
:mod:`relavium_conformance._connect`, above this room.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from relavium_conformance._errors import AdapterError, KitShapeError, KitUsageError
from relavium_conformance._version import DISTRIBUTION, kit_version
from relavium_conformance._wire.handshake import BATCH_LINES_SINCE, has_batch_lines
from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION, RpcError
from relavium_conformance._wire.model import kit_parse
from relavium_conformance._wire.process import SubprocessConnection
from relavium_conformance._wire.protocol import Callback, OperationError, error_from_rpc
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = [
    "Adapter",
    "Breakage",
    "InProcessAdapter",
    "InProcessImplementation",
    "OperationError",
    "StdioAdapter",
    "WirePoint",
    "kit_hello_params",
    "parse_hello",
]


#: How long stopping waits for the in-process implementation's cancelled calls to end, in seconds.
_CANCEL_WAIT = 2.0


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a task's outcome as seen: an abandoned call may fail after nobody waits for it."""
    if not task.cancelled():
        task.exception()


def kit_hello_params() -> dict[str, Any]:
    return {"protocolVersion": PROTOCOL_VERSION, "kit": {"name": DISTRIBUTION, "version": kit_version()}}


class Adapter(Protocol):
    """The one boundary the runner uses. ``call`` raises :class:`OperationError` for a refusal the
    implementation reported, and :class:`AdapterError` when the implementation broke the protocol."""

    name: str

    async def open(self, callback: Callback) -> HelloResult: ...

    async def call(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any: ...

    async def recover(self) -> None:
        """After an :class:`AdapterError`: make the implementation usable again (restart it)."""
        ...

    def stderr_tail(self) -> list[str]: ...

    def mark(self) -> WirePoint:
        """Where the conversation stands: (restarts so far, id of the last request sent)."""
        ...

    def breakage(self) -> Breakage | None:
        """If the implementation is broken now: why, and the request the breakage belongs with (when the
        wire says so, e.g. a second answer to an old request).  ``None`` while it is usable."""
        ...

    def take_leftovers(self) -> list[str]:
        """Notes on processes the implementation left behind and the kit ended, since the last call."""
        ...

    def together_refusal(self) -> str | None:
        """Why operations cannot be issued together (KD-KIT-1) to this implementation, naming the
        protocol version it speaks; ``None`` when they can.  A case that needs it is ``unsupported``."""
        ...

    def cork(self) -> None:
        """Hold outgoing calls until :meth:`uncork` sends them together."""
        ...

    async def uncork(self) -> None: ...

    async def close(self) -> None: ...


WirePoint: TypeAlias = tuple[int, int]
"""(restarts of the implementation, id of one request on that run of it)."""


@dataclass(frozen=True)
class Breakage:
    reason: str
    at: WirePoint | None


class InProcessImplementation(Protocol):
    """A Python object serving the message set (see ``ReferenceImplementation``)."""

    def hello_result(self) -> HelloResult: ...

    async def handle(self, method: str, params: dict[str, Any]) -> Any: ...


class InProcessAdapter:
    """Serves the message set by direct calls, each in its own task (as the stdio transport does)."""

    def __init__(self, name: str, factory: Callable[[Callback], InProcessImplementation]) -> None:
        self.name = name
        self._factory = factory
        self._implementation: InProcessImplementation | None = None
        self._callback: Callback | None = None
        self._callbacks: set[asyncio.Future[Any]] = set()
        self._calls: set[asyncio.Future[Any]] = set()

    async def open(self, callback: Callback) -> HelloResult:
        try:
            return self._open(callback)
        except Exception as exc:  # the implementation could not even be built: a result, not a crash
            raise AdapterError(f"the implementation failed to start: {type(exc).__name__}: {exc}") from None

    def _open(self, callback: Callback) -> HelloResult:
        self._callback = callback

        async def isolated(method: str, params: dict[str, Any]) -> Any:
            # The kit's answer is computed in the kit's own task: cancelling the implementation's
            # waiting task abandons the request, like a JSON-RPC request already on the wire.
            task = asyncio.ensure_future(callback(method, params))
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)
            task.add_done_callback(_retrieve)
            return await asyncio.shield(task)

        self._implementation = self._factory(isolated)
        hello = self._implementation.hello_result()
        # a port may answer with the plain JSON object it would send over stdio
        return hello if isinstance(hello, HelloResult) else parse_hello(hello)

    async def call(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any:
        """Call the implementation; an exception it raises (other than a refusal) is an
        :class:`AdapterError` naming it, as a crash over stdio would be: the case errors, the run goes on."""
        if self._implementation is None:
            raise KitUsageError("the adapter is not open")
        task = asyncio.ensure_future(self._implementation.handle(method, params))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        task.add_done_callback(_retrieve)
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(task)
        except RpcError as exc:
            raise error_from_rpc(exc) from None
        except TimeoutError:
            task.cancel()
            raise AdapterError(f"no answer to {method!r} within {timeout:g} s") from None
        except (AdapterError, KitUsageError, OperationError):
            raise
        except Exception as exc:  # the implementation's own bug: a result about it, not a kit crash
            detail = str(exc).strip().splitlines()
            raise AdapterError(
                f"the implementation raised {type(exc).__name__} in {method!r}"
                + (f": {detail[0][:200]}" if detail else "")
            ) from None

    async def recover(self) -> None:
        await self._cancel_calls()
        if self._callback is not None:
            await self.open(self._callback)

    async def _cancel_calls(self) -> None:
        """End what the implementation is still doing for a case the kit gave up on."""
        pending = [task for task in (*self._calls, *self._callbacks) if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=_CANCEL_WAIT) if pending else None

    def stderr_tail(self) -> list[str]:
        return []

    def mark(self) -> WirePoint:
        return (0, 0)

    def breakage(self) -> Breakage | None:
        return None

    def take_leftovers(self) -> list[str]:
        return []

    def together_refusal(self) -> str | None:
        return None  # calls started in one step run together in-process, whatever version is answered

    def cork(self) -> None:
        """Calls started together already run together in-process: nothing to hold."""

    async def uncork(self) -> None:
        return None

    async def close(self) -> None:
        self._implementation = None
        await self._cancel_calls()


class StdioAdapter:
    """Runs a program and speaks the message set to it as JSON-RPC over stdio."""

    def __init__(
        self,
        name: str,
        command: str | list[str],
        *,
        validate: Callable[..., None] | None = None,
        request_timeout: float = 30.0,
    ) -> None:
        self.name = name
        self._callback: Callback | None = None
        self._connection = SubprocessConnection(
            command, handler=self._serve, validate=validate, request_timeout=request_timeout
        )

    async def _serve(self, method: str, params: dict[str, Any]) -> Any:
        if method == "hello":  # what a program that echoes its input (``cat``) sends back first
            raise RpcError(-32601, "hello is the kit's request, never the implementation's (is it echoing?)")
        if self._callback is None:
            raise RpcError(-32601, f"the kit is not serving callbacks now ({method})")
        return await self._callback(method, params)

    async def open(self, callback: Callback) -> HelloResult:
        self._callback = callback
        result = await self._connection.start(kit_hello_params())
        return parse_hello(result)

    async def call(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any:
        try:
            if timeout is None:
                return await self._connection.peer.request(method, params)
            return await self._connection.peer.request(method, params, timeout=timeout)
        except RpcError as exc:
            raise error_from_rpc(exc) from None

    async def recover(self) -> None:
        await self._connection.restart()

    @property
    def pid(self) -> int | None:
        """The running program's process id (the store profile's replica cases kill it with SIGKILL)."""
        return self._connection.pid

    @property
    def received_lines(self) -> int:
        """Lines received from the current run of the implementation: answers and callbacks."""
        try:
            return self._connection.peer.received_lines
        except KitUsageError:  # never started
            return 0

    def stderr_tail(self) -> list[str]:
        return self._connection.stderr_tail(20)

    def mark(self) -> WirePoint:
        try:
            return (self._connection.restarts, self._connection.peer.last_request_id)
        except KitUsageError:  # never started
            return (self._connection.restarts, 0)

    def breakage(self) -> Breakage | None:
        try:
            peer = self._connection.peer
        except KitUsageError:
            return None
        failure = peer.failure
        if not isinstance(failure, AdapterError):
            return None
        at = peer.broken_at
        return Breakage(failure.reason, None if at is None else (self._connection.restarts, at))

    def take_leftovers(self) -> list[str]:
        return self._connection.take_leftovers()

    def together_refusal(self) -> str | None:
        agreed = self._connection.protocol_version
        if agreed is None or has_batch_lines(agreed):
            return None
        return (
            f"operations issued together (KD-KIT-1) arrive as one message only from protocol "
            f"{BATCH_LINES_SINCE} on (a batch line); the implementation speaks protocol {agreed}, where "
            "separate lines would make the verdict depend on how the pipe splits them"
        )

    def cork(self) -> None:
        self._connection.peer.cork()

    async def uncork(self) -> None:
        await self._connection.peer.uncork()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._connection.close()


def parse_hello(result: Any) -> HelloResult:
    try:
        return kit_parse(HelloResult, result)
    except KitShapeError as exc:
        raise AdapterError(f"the hello answer is malformed: {exc}") from None
