"""Fuzzing what a host hands the engine: its admission and usage-writer answers, and the session's
dependencies.  Only documented errors may escape (``RelaviumError``), and each malformed value is met
where it enters: a dependency at ``AgentSession`` construction (``InvalidInputError`` naming the field),
an admission answer as it arrives (``InvalidInputError`` from the turn, nothing egresses), a usage
writer's answer as the writer failing (the turn fails ``internal`` and the session latches).

300 examples per target, no per-example deadline, scripted provider, no store on disk.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference.enginekit import make_session, run, text_call

from relavium_reference import InvalidInputError, RelaviumError, SessionDeps
from relavium_reference._model.invocation import AdmissionRefused, Admitted
from relavium_reference._model.usage_writer import UsageSettled, UsageTotals

HOST_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_NUMBERS = (
    st.integers()
    | st.sampled_from([0, -1, 2**63 - 1, 2**63, -(2**63), 10**30])
    | st.booleans()
    | st.floats()
    | st.none()
    | st.text(max_size=3)
)
_COVERAGE = st.sampled_from(["complete", "pending", "unknown", "", "COMPLETE", None, 1])
_TOTALS = st.builds(UsageTotals, _NUMBERS, _NUMBERS, _COVERAGE) | st.sampled_from([None, 0, {}, "totals"])
_SETTLED = st.builds(UsageSettled, _NUMBERS, st.booleans() | _NUMBERS, _TOTALS) | st.sampled_from(
    [None, 1, {}]
)


def _well_formed_amount(value: Any) -> bool:
    return type(value) is int and 0 <= value <= 2**63 - 1


def _totals_are_valid(totals: Any) -> bool:
    return (
        isinstance(totals, UsageTotals)
        and _well_formed_amount(totals.amount_microcents)
        and _well_formed_amount(totals.missing_price_count)
        and totals.coverage in ("complete", "pending", "unknown")
    )


def _settled_is_valid(settled: Any) -> bool:
    if not isinstance(settled, UsageSettled) or not isinstance(settled.priced, bool):
        return False
    return _well_formed_amount(settled.cost_microcents) and _totals_are_valid(settled.totals)


class _Writer:
    def __init__(self, settled: Any) -> None:
        self.settled = settled

    async def open(self, basis: Any) -> UsageTotals:
        return UsageTotals()

    async def pending(self, record: Any) -> None:
        return None

    async def resolved(self, record: Any) -> Any:
        return self.settled


class _Admission:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def admit(self, request: Any) -> Any:
        return self.answer

    async def release(self, request: Any) -> None:
        return None


def _turn(**deps: Any) -> Any:
    async def scenario() -> Any:
        harness = make_session(calls=[text_call("hi")], **deps)
        await harness.session.start()
        return await harness.session.send_message("hello"), harness

    return run(scenario())


def _refusal(**deps: Any) -> tuple[Any, Any, InvalidInputError | None]:
    """The turn's result and harness, or the ``InvalidInputError`` that refused it."""
    try:
        result, harness = _turn(**deps)
    except InvalidInputError as refused:
        return None, None, refused
    return result, harness, None


@HOST_FUZZ
@given(_SETTLED)
def test_a_usage_writer_answer_is_money_or_the_writer_failing(settled: Any) -> None:
    result, harness = _turn(usage_writer=_Writer(settled))  # no exception may escape at all
    costs = harness.of_type("cost:updated")
    if _settled_is_valid(settled):
        assert result.status == "completed"
        assert [event.cost_microcents for event in costs] == [settled.cost_microcents]
    else:
        assert result.status == "failed"
        assert result.error is not None
        assert result.error.code == "internal"
        assert costs == []  # malformed money is never published


@HOST_FUZZ
@given(_TOTALS)
def test_a_usage_writer_open_answer_is_refused_at_start_when_malformed(totals: Any) -> None:
    class Opening(_Writer):
        async def open(self, basis: Any) -> Any:
            return totals

    result, _, refused = _refusal(usage_writer=Opening(UsageSettled(0, False, UsageTotals())))
    if _totals_are_valid(totals):
        assert refused is None
        assert result.status == "completed"
    else:  # never adopted as the writer's durable view
        assert refused is not None
        assert refused.location.startswith("totals")


_MESSAGES = st.text(max_size=8) | _NUMBERS | st.sampled_from([b"x", [], {}])
_ANSWERS = (
    st.just(Admitted())
    | st.builds(AdmissionRefused, _MESSAGES)
    | _NUMBERS
    | st.sampled_from([{"kind": "admitted"}, "admitted", True, object()])
)


@HOST_FUZZ
@given(_ANSWERS)
def test_an_admission_answer_admits_refuses_or_is_invalid_input(answer: Any) -> None:
    result, harness, refused = _refusal(admission=_Admission(answer))
    if refused is not None:
        assert refused.location == "admission"
        assert not (isinstance(answer, AdmissionRefused) and isinstance(answer.message, str))
        assert not isinstance(answer, Admitted)
    elif isinstance(answer, Admitted):
        assert result.status == "completed"
    else:
        assert isinstance(answer, AdmissionRefused)
        assert result.status == "failed"
        assert result.error is not None
        assert result.error.code == "budget_exceeded"
        assert harness.of_type("cost:updated") == []  # refused before egress: nothing billed


_FIELDS = [
    f.name for f in dataclasses.fields(SessionDeps) if f.name not in ("resolve_provider", "emit", "sleep")
]
_WRONG = st.sampled_from(
    [None, 0, -1, 1, True, 1.5, math.nan, math.inf, "", "x", b"x", [], ["a", 1], {}, {"m": 1}, (), object()]
)


@HOST_FUZZ
@given(st.lists(st.tuples(st.sampled_from(_FIELDS), _WRONG), min_size=1, max_size=3))
def test_session_dependencies_of_the_wrong_type_are_refused_at_construction(
    changes: list[tuple[str, Any]],
) -> None:
    try:
        result, _, refused = _refusal(**dict(changes))
    except RelaviumError:
        return  # documented (e.g. a refusal of the session's state)
    if refused is not None:
        assert refused.location  # names the field
    else:
        assert result.status in ("completed", "failed")
