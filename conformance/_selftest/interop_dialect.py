"""A broken implementation whose rows another implementation cannot resume: rows in a private dialect.

It commits every terminal assistant text with a private prefix and strips the prefix again whenever it
reads rows back (``session.resume``, ``host.loadSession``), so its own live sessions, resumes and
exports look right; the corpus's checks of committed rows see the prefix.  ``relavium-conformance
interop`` shows the consequence: another implementation resuming those rows sends the provider, and
exports, the prefixed texts (rows are the shared durable format, AS-MSG-011, that any conforming engine
resumes, AS-LIFE-034).

Served through the message set only: a wrapper around the reference implementation, no engine internals.
Reach it as ``python:relavium_conformance._selftest.interop_dialect:private_row_dialect``.
"""

from __future__ import annotations

import copy
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._wire.protocol import Callback
from relavium_conformance._wire.protocol_messages import HelloResult

__all__ = ["PRIVATE_PREFIX", "PrivateRowDialect", "private_row_dialect"]

PRIVATE_PREFIX = "v2|"


def _mark(row: dict[str, Any]) -> None:
    for part in row.get("content") or ():
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            part["text"] = PRIVATE_PREFIX + part["text"]


def _unmark_rows(rows: Any) -> None:
    for row in rows or ():
        if isinstance(row, dict) and row.get("role") == "assistant" and not row.get("toolCalls"):
            for part in row.get("content") or ():
                text = part.get("text") if isinstance(part, dict) else None
                if isinstance(text, str) and text.startswith(PRIVATE_PREFIX):
                    part["text"] = text[len(PRIVATE_PREFIX) :]


class PrivateRowDialect:
    def __init__(self, callback: Callback) -> None:
        async def dialect(method: str, params: dict[str, Any]) -> Any:
            if method == "host.commitTurn" and isinstance(params.get("turn"), dict):
                params = copy.deepcopy(params)
                _mark(params["turn"]["terminal"])
            answer = await callback(method, params)
            if method == "host.loadSession" and isinstance(answer, dict):
                answer = copy.deepcopy(answer)
                _unmark_rows(answer.get("messages"))
            return answer

        self._inner = ReferenceImplementation(dialect, name="broken:private-row-dialect")

    def hello_result(self) -> HelloResult:
        return self._inner.hello_result()

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            params = copy.deepcopy(params)
            _unmark_rows(params.get("messages"))
        return await self._inner.handle(method, params)


def private_row_dialect(callback: Callback) -> PrivateRowDialect:
    return PrivateRowDialect(callback)
