"""The pure decisions of automatic compaction: the pre-send decision, the irreducible part, after-turn."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relavium_reference._rules.auto_compaction import (
    LARGEST_SUMMARY_CHARS,
    Presend,
    after_turn_runs,
    irreducible_request,
    irreducible_tokens,
    presend_decision,
)
from relavium_reference._rules.compaction_measure import Measurement
from relavium_reference._rules.projection import SUMMARY_OPEN, Exchange


def _measured(tokens: int, window: int | None = 1000, reservation: int = 100) -> Measurement:
    return Measurement(input_tokens=tokens, reservation=reservation, window=window, threshold=0.5)


@pytest.mark.clauses("AS-COMP-001", "AS-COMP-006", "AS-COMP-008")
def test_presend_decision() -> None:
    assert presend_decision(allowed=True, measurement=_measured(600), irreducible=900) is Presend.COMPACT
    assert presend_decision(allowed=True, measurement=_measured(600), irreducible=1001) is (
        Presend.SKIP_IRREDUCIBLE
    )
    assert presend_decision(allowed=True, measurement=_measured(600), irreducible=1000) is Presend.COMPACT
    assert presend_decision(allowed=True, measurement=_measured(400), irreducible=5000) is Presend.NONE
    assert presend_decision(allowed=False, measurement=_measured(600), irreducible=900) is Presend.NONE
    assert presend_decision(allowed=True, measurement=None, irreducible=900) is Presend.NONE
    assert presend_decision(allowed=True, measurement=_measured(600, None), irreducible=9) is Presend.NONE


@given(
    tokens=st.integers(0, 10_000),
    irreducible=st.integers(0, 10_000),
    allowed=st.booleans(),
)
def test_presend_never_compacts_without_permission_or_a_firing_trigger(
    tokens: int, irreducible: int, allowed: bool
) -> None:
    measurement = _measured(tokens)
    decision = presend_decision(allowed=allowed, measurement=measurement, irreducible=irreducible)
    if not allowed or not measurement.fires:
        assert decision is Presend.NONE
    else:
        assert decision is (Presend.SKIP_IRREDUCIBLE if irreducible > 1000 else Presend.COMPACT)


@pytest.mark.clauses("AS-COMP-008")
def test_irreducible_part_is_kept_part_pending_user_system_tools_and_the_largest_wrapper() -> None:
    exchanges = [Exchange("older question", "older answer"), Exchange("kept question", "kept answer")]
    request = irreducible_request(system="S", exchanges=exchanges, pending_user="now", tools=None)
    texts = [part.text for message in request.messages for part in message.content]  # type: ignore[union-attr]
    assert texts[0].startswith(SUMMARY_OPEN)
    assert len(texts[0]) > LARGEST_SUMMARY_CHARS
    assert texts[1:] == ["kept question", "kept answer", "now"]  # the older exchange is foldable
    assert request.system == "S"
    small = irreducible_tokens(system="S", exchanges=exchanges, pending_user="now", tools=None)
    large = irreducible_tokens(system="S" * 4000, exchanges=exchanges, pending_user="now", tools=None)
    assert large - small == 1000  # the system text counts in full


@pytest.mark.clauses("AS-COMP-013")
def test_after_turn_runs_only_when_allowed_enabled_and_fired() -> None:
    assert after_turn_runs(allowed=True, enabled=True, measurement=_measured(600))
    assert not after_turn_runs(allowed=True, enabled=False, measurement=_measured(600))
    assert not after_turn_runs(allowed=False, enabled=True, measurement=_measured(600))
    assert not after_turn_runs(allowed=True, enabled=True, measurement=_measured(400))
    assert not after_turn_runs(allowed=True, enabled=True, measurement=None)
