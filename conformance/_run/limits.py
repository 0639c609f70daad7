"""How much one case may observe, so that no implementation can make the kit's memory grow without end.

An implementation that floods the kit with events, callbacks or bytes is a result, not a harness failure:
the case is stopped and ``errored`` with a reason naming the limit, the implementation is restarted, and
the run goes on with flat memory.  The limits sit far above what any case of the corpus needs (the
largest observes a few hundred callbacks), so a compliant implementation never meets them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from relavium_conformance._errors import AdapterError

__all__ = ["CaseLimitExceeded", "CaseLimits", "CaseMeter"]


class CaseLimitExceeded(AdapterError):
    """The implementation made one case observe more than its limits allow."""


@dataclass(frozen=True)
class CaseLimits:
    """Most a case may observe: ``host.emit`` events, callbacks of any kind, and bytes of callback
    parameters (as compact JSON)."""

    events: int = 10_000
    callbacks: int = 50_000
    bytes: int = 32 * 1024 * 1024


class CaseMeter:
    """Counts what one case observed; the first limit crossed is kept and :attr:`exceeded` is set."""

    def __init__(self, limits: CaseLimits | None = None) -> None:
        self.limits = limits or CaseLimits()
        self.events = 0
        self.callbacks = 0
        self.bytes = 0
        self.reason: str | None = None
        self.exceeded = asyncio.Event()

    def count(self, method: str, params: dict[str, Any]) -> str | None:
        """Count one callback; return why the case must stop (once over a limit, always), else None."""
        if self.reason is not None:
            return self.reason
        self.callbacks += 1
        if method == "host.emit":
            self.events += 1
        try:
            self.bytes += len(json.dumps(params, separators=(",", ":"), ensure_ascii=False, default=str))
        except (TypeError, ValueError, RecursionError):
            self.bytes += 1
        limits = self.limits
        if self.events > limits.events:
            self._stop(f"more than {limits.events} events (host.emit)")
        elif self.callbacks > limits.callbacks:
            self._stop(f"more than {limits.callbacks} callbacks")
        elif self.bytes > limits.bytes:
            self._stop(f"more than {limits.bytes // (1024 * 1024)} MiB of callback parameters")
        return self.reason

    def _stop(self, what: str) -> None:
        self.reason = (
            f"the implementation sent the case {what}: the kit's limit per case (see docs/results.md)"
        )
        self.exceeded.set()
