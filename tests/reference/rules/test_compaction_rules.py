"""The pure measurement of measured compaction (KD-COMP-2) and the pass bounds."""

from __future__ import annotations

from relavium_reference._model.invocation import ModelInfo
from relavium_reference._rules.compaction_measure import (
    SOFT_INPUT_BOUND,
    SUMMARY_MAX_TOKENS,
    EntryWindow,
    automatic_window,
    measure,
    output_reservation,
    pass_input_limit,
    trigger_fires,
)
from relavium_reference._rules.compaction_plan import (
    CompactionPlan,
    Unplanned,
    decide_compaction,
    nothing_to_fold,
    plan_compaction,
    request_tokens,
    summary_request,
)
from relavium_reference._rules.projection import (
    Exchange,
    HistoryMessage,
    estimate_tokens,
    project_request,
    working_messages,
)


def test_reservation_precedence() -> None:
    assert output_reservation(100, 200) == 100
    assert output_reservation(None, 200) == 200
    assert output_reservation(None, None) == 4096


def test_trigger_comparisons_are_strict() -> None:
    assert not trigger_fires(80, 10, 100, 0.8)  # 80 is not over 80, 90 is not over 100
    assert trigger_fires(81, 10, 100, 0.8)
    assert trigger_fires(50, 51, 100, 0.8)
    assert not trigger_fires(50, 50, 100, 0.8)


def test_measurement_is_the_estimate_of_the_real_request() -> None:
    request = project_request(
        system="S" * 40, history=[HistoryMessage("user", "u" * 400)], pending_user="p" * 100
    )
    measured = measure(request, reservation=10, window=150, threshold=0.8)
    assert measured.input_tokens == estimate_tokens(request)
    assert measured.fires
    assert not measure(request, reservation=10, window=None, threshold=0.8).fires


def test_unknown_custom_and_self_managed_windows_skip_automatic_work() -> None:
    known = ModelInfo(context_window=1000)
    assert automatic_window([EntryWindow("a", known)]) == 1000
    assert automatic_window([EntryWindow("a", ModelInfo())]) is None
    assert automatic_window([EntryWindow("a", ModelInfo(context_window=0))]) is None
    assert automatic_window([EntryWindow("a", ModelInfo(context_window=1000, self_managed=True))]) is None
    # the first *attemptable* entry decides
    assert (
        automatic_window([EntryWindow("a", ModelInfo(), attemptable=False), EntryWindow("b", known)]) == 1000
    )


def test_pass_limit_takes_every_known_entry_and_the_soft_bound_only_manually() -> None:
    entries = [
        EntryWindow("a", ModelInfo(context_window=50_000)),
        EntryWindow("b", ModelInfo(context_window=30_000)),
    ]
    assert pass_input_limit(entries, manual=True) == (30_000 - SUMMARY_MAX_TOKENS, False)
    mixed = [*entries, EntryWindow("c", ModelInfo())]
    assert pass_input_limit(mixed, manual=True) == (SOFT_INPUT_BOUND, True)
    assert pass_input_limit(mixed, manual=False) == (30_000 - SUMMARY_MAX_TOKENS, False)
    assert pass_input_limit([EntryWindow("c", ModelInfo())], manual=False) == (None, False)


def test_a_fold_cut_short_by_the_pass_limit_measures_the_longer_kept_part() -> None:
    """When four passes cannot fold everything, the slots left unfolded join the kept part, and every
    summariser request is planned with them (each still fits the pass limit)."""
    exchanges = (
        [Exchange(user="q" * 3342, assistant=f"a{i}") for i in range(12)]
        + [Exchange(user=f"t{i}", assistant=f"u{i}") for i in range(5)]
        + [Exchange(user="qk", assistant="ak")]
    )
    limit = 10000 - 4096
    everything = plan_compaction(exchanges, None, None, limit, max_passes=99)
    assert not isinstance(everything, str)
    assert len(everything.passes) == 5
    plan = plan_compaction(exchanges, None, None, limit)
    assert not isinstance(plan, str)
    assert len(plan.passes) == 4
    assert plan.kept_slots == 5
    kept = working_messages(exchanges[plan.folded_slots :])
    summary = None
    for step in plan.passes:
        assert request_tokens(summary_request(step.blocks, summary, kept, None, "")) <= limit
        summary = "s" * 4096 * 4  # the largest summary a pass may return


def test_the_decision_is_one_plan_or_one_reason() -> None:
    """``decide_compaction`` answers once: why a compaction cannot run, in the runner's order (no provider,
    no window, no room), or the one immutable plan whose pass requests the runner sends."""
    exchanges = [Exchange(user=f"q{i}", assistant=f"a{i}") for i in range(6)]
    known = EntryWindow("a", ModelInfo(context_window=50_000))
    unknown = EntryWindow("b", ModelInfo())
    unresolved = EntryWindow("a", ModelInfo(context_window=50_000), attemptable=False)
    assert nothing_to_fold(exchanges[-1:])
    assert not nothing_to_fold(exchanges)
    assert decide_compaction(exchanges, None, None, [unresolved], manual=True) == Unplanned("no_provider")
    assert decide_compaction(exchanges, None, None, [unknown], manual=False) == Unplanned("no_window")
    assert decide_compaction(exchanges, None, None, [known], manual=True, max_passes=0) == Unplanned(
        "no_room"
    )

    soft = decide_compaction(exchanges, None, "next", [unknown], manual=True)
    assert isinstance(soft, CompactionPlan)
    assert soft.needs_acknowledgement
    assert soft.limit_tokens == SOFT_INPUT_BOUND

    plan = decide_compaction(exchanges, "earlier", "next", [known], manual=True)
    assert isinstance(plan, CompactionPlan)
    assert not plan.needs_acknowledgement
    assert plan.limit_tokens == 50_000 - SUMMARY_MAX_TOKENS
    assert (plan.folded_slots, plan.kept_slots) == (5, 1)
    assert plan.kept == tuple(working_messages(exchanges[5:]))
    request = plan.pass_request(0, "earlier")
    assert request == summary_request(plan.passes[0].blocks, "earlier", plan.kept, "next", "")
    assert plan.pass_request(0, "s" * 4 * 50_000) is None  # a summary too large for the pass limit


def test_the_plan_is_the_same_as_planning_under_its_limit() -> None:
    exchanges = [Exchange(user="q" * 5000, assistant=f"a{i}") for i in range(9)]
    windows = [EntryWindow("a", ModelInfo(context_window=SUMMARY_MAX_TOKENS + 8000))]
    plan = decide_compaction(exchanges, None, None, windows, manual=False)
    direct = plan_compaction(exchanges, None, None, 8000)
    assert isinstance(plan, CompactionPlan)
    assert not isinstance(direct, str)
    assert (plan.passes, plan.folded_slots, plan.kept_slots) == (
        direct.passes,
        direct.folded_slots,
        direct.kept_slots,
    )
    assert len(plan.passes) > 1
