"""The compaction half of the kit's world: summary passes and the unknown-window acknowledgement.

:class:`CompactionWorld` is a collaborator of :class:`relavium_conformance._run.case_world.CaseWorld`,
which answers these callbacks through it; it reaches the case world only through the narrow
:class:`WorldPort` it is given (what was observed, perform, hold, the egress check, a new stream).  A
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
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from relavium_conformance._corpus.cases import as_ops
from relavium_conformance._judge.matching import jsonable
from relavium_conformance._report.results import Difference, DifferenceForm
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol_messages import (
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
    from relavium_conformance._judge.observation import Observation

__all__ = ["CompactionWorld", "WorldPort", "request_estimate"]

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


class WorldPort(Protocol):
    """What the compaction collaborator needs of the case world, and nothing more."""

    @property
    def observed(self) -> Observation:
        """What was observed of the session the current callback belongs to."""
        ...

    async def perform_together(self, ops: list[OpStep]) -> None:
        """Issue a script's ``do`` operations at once."""
        ...

    async def hold(self) -> None:
        """Never answer (a script's ``hold``): the case may end without it."""
        ...

    def check_egress(self, request: dict[str, Any]) -> None:
        """The accounting checks every provider request goes through when it leaves."""
        ...

    def open_stream(self, steps: Iterable[Any]) -> str:
        """Number a new provider stream, serve it ``steps`` on ``provider.next``; its name."""
        ...


class CompactionWorld:
    """Summary passes, acknowledgements, the provider's estimator and the host's provider resolution of
    one case, each answered from its script."""

    def __init__(self, case: Case, world: WorldPort) -> None:
        self._world = world
        self._summary_calls: Iterator[Any] = iter(case.summaries)
        self._acks: Iterator[AckAnswer] = iter(case.acknowledgements)
        self._acknowledged = 0  # host.compactionStart calls the kit has answered with an acknowledgement
        self._estimates: Iterator[EstimateAnswer] = iter(case.estimates)
        self._markers: Iterator[MarkerAnswer] = iter(case.markers)
        self._resolutions: Iterator[ResolveAnswer] = iter(case.resolutions)

    async def _play(self, answer: Any, failure: str) -> None:
        """A scripted answer's ``do`` first, then its ``hold`` or its ``fail`` (an error answer)."""
        if answer is not None and answer.do is not None:
            await self._world.perform_together(as_ops(answer.do))
        if answer is not None and answer.hold:
            await self._world.hold()
        if answer is not None and answer.fail:
            raise RpcError(-32000, f"kit: {failure} (scripted)")

    async def play_marker_answer(self) -> None:
        """Play the script's answer to the next ``host.appendMarker``; returning lets the marker be
        appended."""
        await self._play(next(self._markers, None), "the host could not append the marker")

    async def open_summary(self, params: ProviderOpenParams) -> dict[str, Any]:
        """One summary pass: observed with its estimate, served from ``summaries``."""
        world = self._world
        entry: dict[str, Any] = {
            "provider": params.provider,
            "model": params.model,
            "request": params.request,
            "estimate": request_estimate(params.request),
            "acknowledgements": self._acknowledged,
        }
        if params.window is not None:
            entry["window"] = params.window
        steps = next(self._summary_calls, None)
        stream = world.open_stream(steps or ())
        world.check_egress(params.request)  # admitted as sent, pending acknowledged (as a turn's request)
        passes = world.observed.summary_requests
        passes.append(entry)
        if steps is None:
            world.observed.violations.append(
                Difference(
                    path=f"summary_requests[{len(passes) - 1}]",
                    message=f"summary pass #{len(passes)} was not scripted",
                    actual=jsonable(entry),
                    form=DifferenceForm.EXTRA,
                )
            )
        return {"stream": stream}

    async def on_host_compaction_start(self, params: HostCompactionStartParams) -> dict[str, Any]:
        """The host's acknowledgement of the unknown-window disclosure (KD-COMP-4)."""
        self._world.observed.compaction_starts.append(params.start)
        await self._play(next(self._acks, None), "the host refused the acknowledgement")
        self._acknowledged += 1
        return {}

    async def on_host_resolve_provider(self, params: HostResolveProviderParams) -> dict[str, Any]:
        """The host's part of resolving one plan entry's provider (KD-COMP-10): observed, then answered
        from ``resolutions`` (default: resolved)."""
        self._world.observed.resolutions.append({"provider": params.provider, "model": params.model})
        answer = next(self._resolutions, None)
        await self._play(answer, "the host holds no credential for this provider")
        return {}

    async def on_provider_estimate(self, params: ProviderEstimateParams) -> dict[str, Any]:
        """The provider's own estimator (KD-COMP-8): observed with the durable row count at that moment,
        answered from ``estimates`` (default: the kit's KD-COMP-2 estimate of the request)."""
        observed = self._world.observed
        observed.estimate_requests.append(
            {
                "provider": params.provider,
                "model": params.model,
                "request": params.request,
                "rowCount": len(observed.rows),
            }
        )
        answer = next(self._estimates, None)
        await self._play(answer, "the provider's estimator failed")
        tokens = answer.tokens if answer is not None else None
        return {"inputTokens": request_estimate(params.request) if tokens is None else tokens}
