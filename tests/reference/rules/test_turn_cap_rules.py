"""The turn caps' pure decisions (``_rules/turn_cap``), driven directly: the hard cap's slots and the
tool-round guard, over any sequence of turns and attempts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relavium_reference import InvalidInputError
from relavium_reference._model.vocabulary import StopReason
from relavium_reference._rules.turn_cap import (
    DEFAULT_MAX_TOOL_TURNS,
    DEFAULT_SESSION_MAX_TURNS,
    AttemptNext,
    after_attempt,
    asks_for_tools,
    cap_reached,
    check_max_tool_turns,
    resolve_max_turns,
    slots_after,
)

stops = st.one_of(st.none(), st.sampled_from(list(StopReason)))


def test_the_defaults() -> None:
    assert (DEFAULT_SESSION_MAX_TURNS, DEFAULT_MAX_TOOL_TURNS) == (50, 16)
    assert resolve_max_turns(None) == resolve_max_turns(0) == DEFAULT_SESSION_MAX_TURNS


@given(st.integers(min_value=1, max_value=10**9))
def test_a_positive_cap_is_kept_as_given(cap: int) -> None:
    assert resolve_max_turns(cap) == cap


@given(st.integers(max_value=-1))
def test_negative_limits_are_refused(value: int) -> None:
    with pytest.raises(InvalidInputError, match="maxTurns"):
        resolve_max_turns(value)
    with pytest.raises(InvalidInputError, match="maxToolTurns"):
        check_max_tool_turns(value)


@given(st.integers(min_value=1, max_value=60), st.lists(st.booleans(), max_size=120))
def test_only_engaged_turns_use_slots_and_the_cap_admits_exactly_max_of_them(
    max_turns: int, engaged_turns: list[bool]
) -> None:
    """Play a session: a turn runs (and engages or not) only while the cap is not reached; one refused
    by the cap engages nothing and uses no slot."""
    used = 0
    ran_engaged = 0
    for engaged in engaged_turns:
        if cap_reached(used, max_turns):
            assert slots_after(used, engaged=False) == used
            continue
        used = slots_after(used, engaged=engaged)
        ran_engaged += engaged
    assert used == ran_engaged <= max_turns
    assert cap_reached(used, max_turns) == (used == max_turns)


@given(stops, st.integers(min_value=0, max_value=5))
def test_only_a_tool_use_stop_with_calls_asks_for_tools(stop: StopReason | None, calls: int) -> None:
    assert asks_for_tools(stop, calls) == (stop is StopReason.TOOL_USE and calls > 0)


@given(
    st.integers(min_value=0, max_value=6),
    st.lists(st.tuples(stops, st.integers(min_value=0, max_value=3)), min_size=1, max_size=12),
)
def test_a_turn_runs_at_most_max_tool_turns_rounds_then_ends_on_the_limit_or_its_reply(
    max_tool_turns: int, attempts: list[tuple[StopReason | None, int]]
) -> None:
    rounds = 0
    end = None
    for stop, calls in attempts:
        step = after_attempt(stop, calls, rounds, max_tool_turns)
        if step is AttemptNext.DISPATCH:
            rounds += 1
            continue
        end = step
        break
    assert rounds <= max_tool_turns
    if end is AttemptNext.TURN_LIMIT:
        assert rounds == max_tool_turns
        assert asks_for_tools(stop, calls)
    elif end is AttemptNext.FINAL:
        assert not asks_for_tools(stop, calls)
    else:  # every attempt asked for a round and each one ran
        assert rounds == len(attempts) <= max_tool_turns


def test_zero_tool_turns_refuses_the_first_round_but_not_a_plain_reply() -> None:
    assert after_attempt(StopReason.TOOL_USE, 1, 0, 0) is AttemptNext.TURN_LIMIT
    assert after_attempt(StopReason.STOP, 0, 0, 0) is AttemptNext.FINAL
    assert after_attempt(StopReason.TOOL_USE, 0, 0, 0) is AttemptNext.FINAL
