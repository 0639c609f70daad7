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
from typing import Any, Protocol

from relavium_conformance._errors import AdapterError, KitShapeError, KitUsageError
from relavium_conformance._version import kit_version
from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION, RpcError
from relavium_conformance._wire.messages import HelloResult
from relavium_conformance._wire.model import kit_parse
from relavium_conformance._wire.process import SubprocessConnection
from relavium_conformance._wire.protocol import Callback, OperationError, error_from_rpc

__all__ = [
    "Adapter",
    "InProcessAdapter",
    "InProcessImplementation",
    "OperationError",
    "StdioAdapter",
    "kit_hello_params",
    "parse_hello",
]


def kit_hello_params() -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "kit": {"name": "relavium-conformance", "version": kit_version()},
    }


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

    def cork(self) -> None:
        """Hold outgoing calls until :meth:`uncork` sends them together."""
        ...

    async def uncork(self) -> None: ...

    async def close(self) -> None: ...


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

    async def open(self, callback: Callback) -> HelloResult:
        self._callback = callback

        async def isolated(method: str, params: dict[str, Any]) -> Any:
            # The kit's answer is computed in the kit's own task: cancelling the implementation's
            # waiting task abandons the request, like a JSON-RPC request already on the wire.
            task = asyncio.ensure_future(callback(method, params))
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)
            return await asyncio.shield(task)

        self._implementation = self._factory(isolated)
        hello = self._implementation.hello_result()
        # a port may answer with the plain JSON object it would send over stdio
        return hello if isinstance(hello, HelloResult) else parse_hello(hello)

    async def call(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any:
        if self._implementation is None:
            raise KitUsageError("the adapter is not open")
        task = asyncio.ensure_future(self._implementation.handle(method, params))
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
        except Exception as exc:  # a port's own bug: the case errors, the run goes on
            raise AdapterError(f"{method!r} raised {type(exc).__name__}: {exc}") from None

    async def recover(self) -> None:
        if self._callback is not None:
            await self.open(self._callback)

    def stderr_tail(self) -> list[str]:
        return []

    def cork(self) -> None:
        """Calls started together already run together in-process: nothing to hold."""

    async def uncork(self) -> None:
        return None

    async def close(self) -> None:
        self._implementation = None
        pending = [task for task in self._callbacks if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


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

    def stderr_tail(self) -> list[str]:
        return self._connection.stderr_tail(20)

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
