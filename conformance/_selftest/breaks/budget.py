"""Breaks of the financial request inputs (clauses AS-FIN-*): which requests ask for admission and the
estimates admission is given.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.breaks.shared import (
    Governor,
    ProviderRequests,
    WrappedSession,
    request_messages,
)
from relavium_reference import AgentSession, TurnPolicy
from relavium_reference._host.turn import TurnSetup
from relavium_reference._model.invocation import Admission, AdmissionRefused, AdmissionRequest, Admitted
from relavium_reference._rules.compaction_measure import output_reservation
from relavium_reference._rules.projection import ProjectedRequest, estimate_tokens, project_request

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="admission-skipped-for-tool-rounds",
    summary="a tool round's follow-up request egresses without asking admission",
    clauses=("AS-FIN-003",),
)
class _SkipsToolRoundAdmission(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Skips(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                return Admitted() if request.round > 0 else await self.inner.admit(request)

        return Skips(inner)


@break_of(
    name="estimate-after-reasoning-stripping",
    summary="admission's input estimate is measured after the reasoning parts were stripped",
    clauses=("AS-FIN-004",),
)
class _EstimateAfterStripping(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Measures(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                sent = request.request
                if sent is None:
                    return await self.inner.admit(request)
                estimate = estimate_tokens(
                    ProjectedRequest(system=sent.system or "", messages=sent.messages, tools=sent.tools)
                )
                return await self.inner.admit(replace(request, input_tokens=estimate))

        return Measures(inner)


@break_of(
    name="max-tokens-estimate-read-live",
    summary=(
        "maxTokensEstimate is read from the host's live value instead of the copy taken at construction"
    ),
    clauses=("AS-FIN-001",),
)
class _ReadsEstimateLive(AgentSession):
    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        return replace(setup, max_tokens_estimate=self._deps.max_tokens_estimate)


@break_of(
    name="fallback-reservation-first",
    summary="the output reservation takes the estimate-only fallback over the request's own maxTokens",
    clauses=("AS-FIN-005",),
)
class _FallbackReservationFirst(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Reserves(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                reservation = output_reservation(None, request.max_tokens_estimate)
                return await self.inner.admit(replace(request, output_reservation=reservation))

        return Reserves(inner)


@break_of(
    name="context-estimate-own-construction",
    summary="the context estimate builds its request without the tools the turn's request carries",
    clauses=("AS-FIN-006",),
)
class _EstimateWithoutTools(AgentSession):
    def context_estimate(self, pending_user: str) -> int:
        projected = project_request(
            system=self._agent.system_prompt, history=self._history(), pending_user=pending_user
        )
        return estimate_tokens(projected)


@break_of(
    name="default-reservation-ignored",
    summary="with neither maxTokens nor maxTokensEstimate set, admission is given no output reservation",
    clauses=("AS-FIN-005",),
)
class _DefaultReservationIgnored(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Reserves(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                sent = request.request
                unset = request.max_tokens_estimate is None and (sent is None or sent.max_tokens is None)
                if unset:
                    return await self.inner.admit(replace(request, output_reservation=0))
                return await self.inner.admit(request)

        return Reserves(inner)


@break_of(
    name="max-tokens-dropped-after-a-tool-round",
    summary="a tool round's follow-up request is sent without the agent's max_tokens",
    clauses=("AS-FIN-003",),
)
class _MaxTokensDropped(ProviderRequests):
    """The follow-up after a tool round is built without ``maxTokens`` (the first request keeps it)."""

    def request(self, handle: str, params: dict[str, Any]) -> None:
        if any(message.get("role") == "tool" for message in request_messages(params)):
            params["request"].pop("maxTokens", None)


@break_of(
    name="admission-failure-admits",
    summary="a cost governor that fails (rather than refuses) is taken as admitting: the call egresses",
    clauses=("AS-FIN-003",),
)
class _FailureAdmits(WrappedSession):
    def governor(self, inner: Admission) -> Admission:
        class Lenient(Governor):
            async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
                try:
                    return await self.inner.admit(request)
                except Exception:
                    return Admitted()

        return Lenient(inner)
