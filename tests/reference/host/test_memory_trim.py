"""The memory policy, the one request projection, and trimHistory with its boundary marker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError
from tests.reference.enginekit import AGENT, make_session, run, text_call

from relavium_reference import InvalidInputError, SessionState, SessionStateCode, SessionStateError
from relavium_reference._host.history_store import HistoryStore
from relavium_reference._host.persister import SqlitePersister
from relavium_reference._model.history_results import (
    BoundaryMarker,
    MemoryPolicyRefusal,
    NothingToTrim,
    Trimmed,
)
from relavium_reference._model.llm import LlmMessage, LlmTextPart, LlmToolCallPart, LlmToolResultPart, ToolDef
from relavium_reference._model.shapes import MemoryNone, MemorySummary, MemoryWindow
from relavium_reference._rules.memory import (
    COMPACTION_REFUSED_MESSAGE,
    TRIM_REFUSED_MESSAGE,
    automatic_compaction_allowed,
    compaction_refusal,
    resolve_memory,
    trim_refusal,
)
from relavium_reference._rules.projection import (
    Exchange,
    HistoryMessage,
    ProjectedRequest,
    estimate_tokens,
    fold_same_role,
    project_history,
    project_request,
    text_message,
)
from relavium_reference._rules.resume import reconstruct_session_state
from relavium_reference._rules.trim import plan_trim

WINDOW_1 = MemoryWindow(type="window", window_size=1)


# --- the policy ------------------------------------------------------------------------------------


def test_absent_memory_resolves_to_summary_and_only_summary_permits() -> None:
    assert resolve_memory(None) == MemorySummary(type="summary")
    assert automatic_compaction_allowed(resolve_memory(None))
    assert compaction_refusal(MemorySummary(type="summary")) is None
    assert trim_refusal(MemorySummary(type="summary")) is None
    for policy, name in ((MemoryNone(type="none"), "none"), (WINDOW_1, "window")):
        assert not automatic_compaction_allowed(policy)
        assert compaction_refusal(policy) == MemoryPolicyRefusal(
            memory=name, message=COMPACTION_REFUSED_MESSAGE
        )
        assert trim_refusal(policy) == MemoryPolicyRefusal(memory=name, message=TRIM_REFUSED_MESSAGE)


def test_the_getter_hands_out_a_frozen_copy() -> None:
    agent = AGENT.model_copy(update={"memory": MemoryWindow(type="window", window_size=2)})
    session = make_session(agent=agent).session
    policy = session.memory_policy
    assert policy == MemoryWindow(type="window", window_size=2)
    assert policy is not session.memory_policy
    with pytest.raises(ValidationError):
        policy.type = "summary"  # type: ignore[misc]
    assert session.memory_policy.type == "window"


# --- the projection ----------------------------------------------------------------------------------


def test_window_selects_whole_slots_before_folding_and_the_summary_leads_as_user_data() -> None:
    slots = [Exchange("q1", "a1"), Exchange("q2", "")]
    history = project_history(slots, WINDOW_1, "S")
    request = project_request(system="You help.", history=history, pending_user="q3")
    assert request.system == "You help."
    assert [m.role for m in request.messages] == ["user"]
    texts = [p.text for p in request.messages[0].content]  # type: ignore[union-attr]
    assert texts[1:] == ["q2", "q3"]
    assert "S" in texts[0]
    assert texts[0].startswith("<earlier-conversation-summary>")


def test_none_sends_no_history_and_the_estimate_reads_the_same_request() -> None:
    history = project_history([Exchange("q1", "a1")], MemoryNone(type="none"))
    request = project_request(system="You help.", history=history, pending_user="q2")
    assert estimate_tokens(request) == 5  # (9 + 8 + 2) / 4, rounded up


def _projected(
    history: list[HistoryMessage], rounds: list[LlmMessage], tools: list[ToolDef]
) -> ProjectedRequest:
    return project_request(system="s", history=history, pending_user="p", rounds=rounds, tools=tools)


def test_each_request_owns_its_lists_and_shares_only_frozen_values() -> None:
    slots = [Exchange("q1", "a1"), Exchange("q2", "")]  # q2 has no final: it folds with q3
    history = project_history([*slots, Exchange("q3", "a3")], MemorySummary(type="summary"))
    rounds = [
        LlmMessage(role="assistant", content=[LlmToolCallPart(id="c", name="t", args={"k": [1]})]),
        LlmMessage(role="tool", content=[LlmToolResultPart(tool_call_id="c", result={"r": [2]})]),
    ]
    tools = [ToolDef(name="t", parameters={"type": "object", "properties": {}})]
    pristine = [m.to_wire() for m in _projected(history, rounds, tools).messages]
    first = _projected(history, rounds, tools)
    # what a provider can change is its own: the lists, and the plain data inside tool rounds and tools
    call, result = first.messages[-2].content[0], first.messages[-1].content[0]
    assert isinstance(call, LlmToolCallPart)
    assert isinstance(result, LlmToolResultPart)
    call.args["k"].append("MUTATED")
    result.result["r"].clear()
    assert first.tools is not None
    first.tools[0].parameters["properties"]["x"] = {}
    first.messages.clear()
    first.tools.clear()
    # and what it shares cannot change: a message's content is a tuple, no field of a part can be set
    again = _projected(history, rounds, tools)
    folded = again.messages[2]
    assert [p.text for p in folded.content if isinstance(p, LlmTextPart)] == ["q2", "q3"]
    assert isinstance(folded.content, tuple)
    with pytest.raises(ValidationError):
        folded.content[0].text = "MUTATED"  # type: ignore[misc,union-attr]
    with pytest.raises(ValidationError):
        folded.role = "assistant"  # type: ignore[misc]
    assert [m.to_wire() for m in again.messages] == pristine
    assert rounds[0].to_wire()["content"][0]["args"] == {"k": [1]}
    assert tools[0].parameters == {"type": "object", "properties": {}}
    assert again.tools is not None
    assert again.tools[0].parameters == tools[0].parameters


def test_folding_shares_alternating_messages_and_joins_each_run_once() -> None:
    u1, a1, u2, u3, u4, a2 = (
        text_message(role, text)  # type: ignore[arg-type]
        for role, text in [
            ("user", "u1"),
            ("assistant", "a1"),
            ("user", "u2"),
            ("user", "u3"),
            ("user", "u4"),
            ("assistant", "a2"),
        ]
    )
    alternating = [u1, a1, u2]
    folded = fold_same_role(alternating)
    assert folded == alternating
    assert folded is not alternating
    assert all(a is b for a, b in zip(folded, alternating, strict=True))
    runs = fold_same_role([u1, a1, u2, u3, u4, a2])
    assert [m.role for m in runs] == ["user", "assistant", "user", "assistant"]
    assert runs[2].content == (*u2.content, *u3.content, *u4.content)
    assert runs[2] == LlmMessage(role="user", content=[*u2.content, *u3.content, *u4.content])
    assert runs[1] is a1
    assert runs[3] is a2


def test_a_history_message_is_validated_once_and_shared_by_requests() -> None:
    history = project_history([Exchange("q1", "a1"), Exchange("q2", "a2")], MemorySummary(type="summary"))
    first = project_request(system="s", history=history, pending_user="p")
    second = project_request(system="s", history=history, pending_user="p")
    assert first.messages is not second.messages
    assert all(a is b for a, b in zip(first.messages[:-1], second.messages[:-1], strict=True))
    assert first.messages[-1] is not second.messages[-1]  # the pending user is each request's own


def test_session_estimate_uses_its_request_projection() -> None:
    agent = AGENT.model_copy(update={"memory": WINDOW_1, "tools": ()})
    h = make_session(calls=[text_call("a1"), text_call("a2")], agent=agent)

    async def scenario() -> int:
        await h.session.start()
        await h.session.send_message("q1")
        await h.session.send_message("q2")
        return h.session.context_estimate("q3")

    # system 9, [user q2] 10, [assistant a2] 10, [user q3] 10 -> 39 / 4 -> 10
    assert run(scenario()) == 10


# --- trim selection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("units", "bound", "kept_slots", "kept_messages"),
    [
        ([2, 2, 2], 3, 1, 2),
        ([2, 1, 2], 3, 2, 3),
        ([2, 2], 4, 2, 4),
        ([2], 1, 0, 0),
        ([], 1, 0, 0),
        ([1, 1, 2], 2, 1, 2),
    ],
)
def test_trim_keeps_the_longest_suffix_of_whole_slots(
    units: list[int], bound: int, kept_slots: int, kept_messages: int
) -> None:
    plan = plan_trim(units, bound)
    assert (plan.kept_slots, plan.kept_messages, plan.total_messages) == (
        kept_slots,
        kept_messages,
        sum(units),
    )


@pytest.mark.parametrize("bound", [0, -1, True, 1.5, "3"])
def test_trim_refuses_a_bound_that_is_not_a_positive_integer(bound: object) -> None:
    with pytest.raises(InvalidInputError):
        plan_trim([2], bound)


# --- trimHistory through a real store ------------------------------------------------------------------


def test_trim_writes_one_marker_and_resume_rebuilds_the_kept_turns(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.db")
    try:
        h = make_session(
            calls=[text_call("a1"), text_call("a2"), text_call("a3")], persister=SqlitePersister(store)
        )

        async def scenario() -> object:
            await h.session.start()
            for text in ("q1", "q2", "q3"):
                await h.session.send_message(text)
            return await h.session.trim_history(3)

        result = run(scenario())
        assert result == Trimmed(kept_message_count=2, dropped_message_count=4, kept_turn_count=1)
        assert len(h.provider.requests) == 3  # no provider call for the trim
        [trimmed] = h.of_type("session:trimmed")
        assert trimmed.kept_turn_count == 1  # type: ignore[union-attr]
        record, rows = store.load_full("s-test")
        marker = rows[-1]
        assert marker.role == "system"
        assert marker.content == ()
        assert marker.compaction is not None
        assert marker.compaction.dropped_through_sequence == 3
        state = reconstruct_session_state(record, rows)
        assert [m.text for m in state.messages] == ["q3", "a3"]
        assert [(s.start, s.end) for s in state.completed_turn_spans] == [(0, 2)]
        assert state.turn_count == 3  # the cap still counts every completed turn
    finally:
        store.close()


class _HoldsTheMarker(SqlitePersister):
    """A host that never answers a marker write; it notes when the session gives the write up."""

    def __init__(self, store: HistoryStore) -> None:
        super().__init__(store)
        self.reached = asyncio.Event()
        self.abandoned = False

    async def append_marker(self, session_id: str, marker: BoundaryMarker) -> None:
        self.reached.set()
        try:
            await asyncio.get_running_loop().create_future()  # never answered
        except asyncio.CancelledError:
            self.abandoned = True
            raise


def test_a_cancel_ends_a_trim_whose_marker_the_host_holds(tmp_path: Path) -> None:
    """The trim waits for no held marker write once the session is cancelled (as a compaction does):
    before the fix trim_history never returned here."""
    store = HistoryStore.open(tmp_path / "history.db")
    try:
        persister = _HoldsTheMarker(store)
        h = make_session(calls=[text_call("a1"), text_call("a2")], persister=persister)

        async def scenario() -> object:
            await h.session.start()
            for text in ("q1", "q2"):
                await h.session.send_message(text)
            trim = asyncio.create_task(h.session.trim_history(2))
            await persister.reached.wait()
            await h.session.cancel()
            return await asyncio.wait_for(trim, timeout=5)  # a hang fails here, not a verdict by time

        result = run(scenario())
        assert result == Trimmed(kept_message_count=2, dropped_message_count=2, kept_turn_count=1)
        assert persister.abandoned
        assert h.session.state is SessionState.CANCELLED
        assert h.of_type("session:trimmed") == []
        assert h.types(session_only=True)[-1] == "session:cancelled"
        assert len(h.session.exchanges) == 2  # a cancelled trim installs nothing
        _record, rows = store.load_full("s-test")
        assert [row.role for row in rows] == ["user", "assistant", "user", "assistant"]  # no marker
    finally:
        store.close()


def test_policy_refusal_precedes_the_bound_and_changes_nothing() -> None:
    agent = AGENT.model_copy(update={"memory": MemoryNone(type="none")})
    h = make_session(calls=[text_call("a1")], agent=agent)

    async def scenario() -> tuple[object, object]:
        with pytest.raises(SessionStateError) as before:
            await h.session.trim_history(0)
        assert before.value.code is SessionStateCode.NOT_STARTED
        await h.session.start()
        await h.session.send_message("q1")
        return await h.session.trim_history(0), await h.session.compact()

    trimmed, compacted = run(scenario())
    assert trimmed == MemoryPolicyRefusal(memory="none", message=TRIM_REFUSED_MESSAGE)
    assert compacted == MemoryPolicyRefusal(memory="none", message=COMPACTION_REFUSED_MESSAGE)
    assert h.of_type("session:trimmed") == []
    assert len(h.session.exchanges) == 1


def test_nothing_to_trim_counts_message_units() -> None:
    h = make_session(calls=[text_call("a1")])

    async def scenario() -> object:
        await h.session.start()
        await h.session.send_message("q1")
        return await h.session.trim_history(2)

    assert run(scenario()) == NothingToTrim(message_count=2)
    assert h.of_type("session:trimmed") == []
