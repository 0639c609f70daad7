"""``--trace FILE``: every protocol message of a run, with timestamps, one JSON object per line.

Each line is ``{"at": ISO-8601 UTC time, "ms": milliseconds since the trace opened, "case": the case in
flight or null, "direction": "kit->implementation" | "implementation->kit", "message": ...}``.

Over stdio the trace sees the JSON-RPC messages themselves, through the peer's per-message observer seam
(the ``validate`` hook, which every message in both directions passes; the tracer never refuses one).
In-process there is no wire, so :class:`TracingAdapter` records each call and callback in the same
JSON-RPC shape (``method``/``params``, then ``result`` or ``error``), without ids.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from relavium_conformance._wire.adapters import Adapter, Breakage, WirePoint
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import Callback, OperationError
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = ["Trace", "TracingAdapter", "chain_observers"]

_DIRECTIONS = {"outgoing": "kit->implementation", "incoming": "implementation->kit"}


class Trace:
    """Writes trace lines to ``stream``; ``case`` names the case in flight (the runner's progress sets it)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._clock = time.perf_counter()
        self.case: str | None = None
        self.count = 0

    def record(self, direction: str, message: Any) -> None:
        line = {
            "at": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "ms": round((time.perf_counter() - self._clock) * 1000, 3),
            "case": self.case,
            "direction": direction,
            "message": message,
        }
        self._stream.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        self._stream.flush()
        self.count += 1

    def __call__(self, direction: str, message: dict[str, Any], method: str | None) -> None:
        """The JSON-RPC peer's observer: ``direction`` is ``outgoing`` (the kit sent it) or ``incoming``."""
        self.record(_DIRECTIONS.get(direction, direction), message)


def chain_observers(
    *observers: Callable[[str, dict[str, Any], str | None], None] | None,
) -> Callable[[str, dict[str, Any], str | None], None] | None:
    """One per-message hook calling each given one in order (a validator may raise: it runs last)."""
    present = [observer for observer in observers if observer is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]

    def chained(direction: str, message: dict[str, Any], method: str | None) -> None:
        for observer in present:
            observer(direction, message, method)

    return chained


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RpcError):
        return exc.to_object()
    if isinstance(exc, OperationError):
        return {"message": str(exc), "kind": exc.kind, "code": exc.code}
    return {"message": f"{type(exc).__name__}: {exc}"}


class TracingAdapter:
    """An in-process adapter that records every call and callback in :class:`Trace` (no other change)."""

    def __init__(self, inner: Adapter, trace: Trace) -> None:
        self._inner = inner
        self._trace = trace
        self.name = inner.name

    async def open(self, callback: Callback) -> HelloResult:
        trace = self._trace

        async def traced(method: str, params: dict[str, Any]) -> Any:
            trace.record("implementation->kit", {"method": method, "params": params})
            try:
                result = await callback(method, params)
            except Exception as exc:
                trace.record("kit->implementation", {"method": method, "error": _error(exc)})
                raise
            trace.record("kit->implementation", {"method": method, "result": result})
            return result

        trace.record("kit->implementation", {"method": "hello"})
        hello = await self._inner.open(traced)
        trace.record("implementation->kit", {"method": "hello", "result": hello.to_wire()})
        return hello

    async def call(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any:
        self._trace.record("kit->implementation", {"method": method, "params": params})
        try:
            result = await self._inner.call(method, params, timeout=timeout)
        except Exception as exc:
            self._trace.record("implementation->kit", {"method": method, "error": _error(exc)})
            raise
        self._trace.record("implementation->kit", {"method": method, "result": result})
        return result

    async def recover(self) -> None:
        await self._inner.recover()

    def stderr_tail(self) -> list[str]:
        return self._inner.stderr_tail()

    def mark(self) -> WirePoint:
        return self._inner.mark()

    def breakage(self) -> Breakage | None:
        return self._inner.breakage()

    def take_leftovers(self) -> list[str]:
        return self._inner.take_leftovers()

    def together_refusal(self) -> str | None:
        return self._inner.together_refusal()

    def cork(self) -> None:
        self._inner.cork()

    async def uncork(self) -> None:
        await self._inner.uncork()

    async def close(self) -> None:
        await self._inner.close()
