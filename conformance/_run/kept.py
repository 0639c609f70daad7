"""One adapter kept open for many separate runs: the pytest plugin's items, fuzzing's examples.

:class:`CaseSession` opens the adapter once (one subprocess for ``stdio:``), on one event loop it owns,
and lends it to one :func:`run_cases` call at a time; each call gets fresh handles, so the handles stay
unique for the implementation's whole life, as the protocol requires.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Sequence
from typing import Any

from relavium_conformance._corpus.cases import AnyCase
from relavium_conformance._report.results import CaseResult
from relavium_conformance._run.runner import RunOutcome, run_cases
from relavium_conformance._wire.adapters import Adapter, Breakage, WirePoint
from relavium_conformance._wire.protocol import Callback
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = ["CaseSession", "KeptOpen"]


class KeptOpen:
    """An adapter opened once and lent to one run at a time: ``close`` is a no-op until :meth:`shutdown`."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner
        self.name = inner.name
        self.hello: HelloResult | None = None
        self._router: Callback | None = None

    async def _forward(self, method: str, params: dict[str, Any]) -> Any:
        assert self._router is not None
        return await self._router(method, params)

    async def open(self, callback: Callback) -> HelloResult:
        self._router = callback
        if self.hello is None:
            self.hello = await self.inner.open(self._forward)
        return self.hello

    async def call(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any:
        return await self.inner.call(method, params, timeout=timeout)

    async def recover(self) -> None:
        await self.inner.recover()

    def stderr_tail(self) -> list[str]:
        return self.inner.stderr_tail()

    def mark(self) -> WirePoint:
        return self.inner.mark()

    def breakage(self) -> Breakage | None:
        return self.inner.breakage()

    def take_leftovers(self) -> list[str]:
        return self.inner.take_leftovers()

    def together_refusal(self) -> str | None:
        return self.inner.together_refusal()

    def cork(self) -> None:
        self.inner.cork()

    async def uncork(self) -> None:
        await self.inner.uncork()

    async def close(self) -> None:
        return None

    async def shutdown(self) -> None:
        await self.inner.close()


class CaseSession:
    """Runs cases one call at a time against one adapter kept open; :meth:`close` ends it."""

    def __init__(self, adapter: Adapter, *, timeout: float = 15.0) -> None:
        self.adapter = KeptOpen(adapter)
        self.timeout = timeout
        self._runner = asyncio.Runner()
        self._handles = itertools.count(1)

    def run(self, cases: Sequence[AnyCase], **options: Any) -> RunOutcome:
        first = next(self._handles)
        for _ in range(len(cases) - 1):
            next(self._handles)
        return self._runner.run(
            run_cases(self.adapter, cases, timeout=self.timeout, first_handle=first, **options)
        )

    def run_one(self, case: AnyCase, **options: Any) -> CaseResult:
        [result] = self.run([case], **options).run.cases
        return result

    def close(self) -> None:
        # an implementation that fails to close must not fail its caller
        with contextlib.suppress(Exception):
            self._runner.run(self.adapter.shutdown())
        self._runner.close()
