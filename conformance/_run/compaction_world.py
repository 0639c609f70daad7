"""The compaction half of the kit's world: summary passes and the unknown-window acknowledgement.

:class:`CompactionWorld` is mixed into :class:`relavium_conformance._run.execute.CaseWorld`.  A
``provider.open`` whose ``purpose`` is ``summary`` is one summary pass (KD-COMP-6): it is served from the
case's ``summaries`` script (one list of provider steps per pass, in order), never from ``provider``, and
observed in ``summary_requests`` with the kit's own KD-COMP-2 estimate of its request and the number of
acknowledgements the kit had granted when it opened (``acknowledgements``), so a case can assert how many
passes ran, how large each was, and that none egressed before the disclosure was acknowledged.
``host.compactionStart`` (KD-COMP-4) is answered from ``acknowledgements``, in order (default:
acknowledge); ``provider.estimate`` (KD-COMP-8) from ``estimates`` and ``host.appendMarker`` from
``markers``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from relavium_conformance._corpus.cases import as_ops
from relavium_conformance._judge.matching import jsonable
from relavium_conformance._report.results import Difference, DifferenceForm
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.messages import (
    HostCompactionStartParams,
    HostResolveProviderParams,
    ProviderEstimateParams,
    ProviderOpenParams,
)

if TYPE_CHECKING:
    from relavium_conformance._corpus.cases import (
        AckAnswer,
        Case,
        EstimateAnswer,
        MarkerAnswer,
        OpStep,
        ResolveAnswer,
    )

__all__ = ["CompactionWorld", "request_estimate"]

_MESSAGE_OVERHEAD = 8
_NON_TEXT_PART = 256


def request_estimate(request: Any) -> int | None:
    """The kit's own KD-COMP-2 estimate of a provider request as it arrived (``None``: not a request).

    Characters: the system text, 8 per message plus each part's text length (256 for a part that is not
    text), and the compact JSON length of each tool definition; tokens are the characters over 4,
    rounded up.
    """
    if not isinstance(request, dict):
        return None
    chars = len(request.get("system") or "")
    for message in request.get("messages") or ():
        chars += _MESSAGE_OVERHEAD
        for part in (message.get("content") or ()) if isinstance(message, dict) else ():
            is_text = isinstance(part, dict) and part.get("type") == "text"
            chars += len(str(part.get("text", ""))) if is_text else _NON_TEXT_PART
    for tool in request.get("tools") or ():
        chars += len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False))
    return math.ceil(chars / 4)


class CompactionWorld:
    """Summary passes and acknowledgements of one case (a mixin: the case world holds the state)."""

    case: Case
    _streams: dict[str, Iterator[Any]]
    _opened: int

    @property
    def observed(self) -> Any:  # the case world's: what was observed of the current session
        raise NotImplementedError

    def init_compaction(self) -> None:
        self._summary_calls: Iterator[Any] = iter(self.case.summaries)
        self._acks: Iterator[AckAnswer] = iter(self.case.acknowledgements)
        self._acknowledged = 0  # host.compactionStart calls the kit has answered with an acknowledgement
        self._estimates: Iterator[EstimateAnswer] = iter(self.case.estimates)
        self._markers: Iterator[MarkerAnswer] = iter(self.case.markers)
        self._resolutions: Iterator[ResolveAnswer] = iter(self.case.resolutions)

    async def play_marker_answer(self) -> None:
        """Play the script's answer to the next ``host.appendMarker``: ``do`` first, then ``hold`` or
        ``fail`` (an error answer); returning lets the marker be appended."""
        answer = next(self._markers, None)
        if answer is not None and answer.do is not None:
            await self.perform_together(as_ops(answer.do))
        if answer is not None and answer.hold:
            await self._hold()
        if answer is not None and answer.fail:
            raise RpcError(-32000, "kit: the host could not append the marker (scripted)")

    async def perform_together(self, ops: list[OpStep]) -> None:  # provided by the case world
        raise NotImplementedError

    async def _hold(self) -> None:  # provided by the case world
        raise NotImplementedError

    if TYPE_CHECKING:

        def check_egress(self, request: dict[str, Any]) -> None: ...  # the accounting world's

    async def open_summary(self, params: ProviderOpenParams) -> dict[str, Any]:
        """One summary pass: observed with its estimate, served from ``summaries``."""
        self._opened += 1
        self.check_egress(params.request)  # admitted as sent, pending acknowledged (as a turn's request)
        entry: dict[str, Any] = {
            "provider": params.provider,
            "model": params.model,
            "request": params.request,
            "estimate": request_estimate(params.request),
            "acknowledgements": self._acknowledged,
        }
        if params.window is not None:
            entry["window"] = params.window
        passes = self.observed.summary_requests
        passes.append(entry)
        stream = f"stream-{self._opened}"
        steps = next(self._summary_calls, None)
        if steps is None:
            self.observed.violations.append(
                Difference(
                    path=f"summary_requests[{len(passes) - 1}]",
                    message=f"summary pass #{len(passes)} was not scripted",
                    actual=jsonable(entry),
                    form=DifferenceForm.EXTRA,
                )
            )
            steps = ()
        self._streams[stream] = iter(steps)
        return {"stream": stream}

    async def on_host_compaction_start(self, params: HostCompactionStartParams) -> dict[str, Any]:
        """The host's acknowledgement of the unknown-window disclosure (KD-COMP-4)."""
        self.observed.compaction_starts.append(params.start)
        answer = next(self._acks, None)
        if answer is not None and answer.do is not None:
            await self.perform_together(as_ops(answer.do))
        if answer is not None and answer.hold:
            await self._hold()
        if answer is not None and answer.fail:
            raise RpcError(-32000, "kit: the host refused the acknowledgement (scripted)")
        self._acknowledged += 1
        return {}

    async def on_host_resolve_provider(self, params: HostResolveProviderParams) -> dict[str, Any]:
        """The host's part of resolving one plan entry's provider (KD-COMP-10): observed, then answered
        from ``resolutions`` (default: resolved)."""
        self.observed.resolutions.append({"provider": params.provider, "model": params.model})
        answer = next(self._resolutions, None)
        if answer is not None and answer.do is not None:
            await self.perform_together(as_ops(answer.do))
        if answer is not None and answer.hold:
            await self._hold()
        if answer is not None and answer.fail:
            raise RpcError(-32000, "kit: the host holds no credential for this provider (scripted)")
        return {}

    async def on_provider_estimate(self, params: ProviderEstimateParams) -> dict[str, Any]:
        """The provider's own estimator (KD-COMP-8): observed with the durable row count at that moment,
        answered from ``estimates`` (default: the kit's KD-COMP-2 estimate of the request)."""
        self.observed.estimate_requests.append(
            {
                "provider": params.provider,
                "model": params.model,
                "request": params.request,
                "rowCount": len(self.observed.rows),
            }
        )
        answer = next(self._estimates, None)
        if answer is not None and answer.do is not None:
            await self.perform_together(as_ops(answer.do))
        if answer is not None and answer.hold:
            await self._hold()
        if answer is not None and answer.fail:
            raise RpcError(-32000, "kit: the provider's estimator failed (scripted)")
        tokens = answer.tokens if answer is not None else None
        return {"inputTokens": request_estimate(params.request) if tokens is None else tokens}
