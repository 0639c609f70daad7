"""Forms and orders the specification leaves open: each case's own expectation accepts every compliant one
and still refuses a broken one (checked on the expectation itself, with the kit's matcher).

* Anthropic's Messages API takes a user's content and a ``tool_result``'s content as a string or as a list
  of text blocks (``wire/anthropic-tool-round-trip``);
* an after-turn compaction's moment may be published after the turn's terminal or before it (KD-COMP-9);
* a disclosure moment may open before the acknowledgement or only once it arrived (KD-COMP-4), so a failed
  or cancelled acknowledgement may leave no moment at all.
"""

from __future__ import annotations

from typing import Any

import pytest

from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._judge.matching import match


def _case(case_id: str) -> Case:
    [case] = [c for c in load_cases() if c.id == case_id]
    assert isinstance(case, Case)
    return case


def _anthropic_follow_up(user: Any, result: Any) -> dict[str, Any]:
    return {
        "provider": "anthropic",
        "http": {
            "method": "POST",
            "path": "/v1/messages",
            "headers": {"x-api-key": "kit-test-key"},
            "body": {
                "stream": True,
                "messages": [
                    {"role": "user", "content": user},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "toolu_01",
                                "name": "echo",
                                "input": {"word": "ping", "times": 2},
                            }
                        ],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": result}],
                    },
                ],
            },
        },
    }


@pytest.mark.parametrize(
    ("user", "result"),
    [
        ("ping it", "pong-result-7"),
        ([{"type": "text", "text": "ping it"}], "pong-result-7"),
        ("ping it", [{"type": "text", "text": "pong-result-7"}]),
        ([{"type": "text", "text": "ping it"}], [{"type": "text", "text": "pong-result-7"}]),
    ],
)
def test_anthropic_content_as_a_string_or_text_blocks(user: Any, result: Any) -> None:
    wanted = _case("wire/anthropic-tool-round-trip").expect.provider_requests
    assert wanted is not None
    assert match(wanted[1], _anthropic_follow_up(user, result)) == []


@pytest.mark.parametrize(
    ("user", "result"),
    [
        ("ping it", "another result"),
        ("ping it", [{"type": "image", "source": {}}]),
        ([{"type": "text", "text": "pong it"}], "pong-result-7"),
    ],
)
def test_anthropic_content_that_lost_the_text_still_fails(user: Any, result: Any) -> None:
    wanted = _case("wire/anthropic-tool-round-trip").expect.provider_requests
    assert wanted is not None
    assert match(wanted[1], _anthropic_follow_up(user, result)) != []


MOMENT = ("session:compacting", "session:compacted", "session:compaction_failed", "session:trimmed")
AFTER_TURN = {
    "compaction/auto-after-turn-folds-after-a-reply": ("session:compacting", "session:compacted"),
    "compaction/auto-after-turn-failure-trims": (
        "session:compacting",
        "session:compaction_failed",
        "session:trimmed",
    ),
    "budget/after-turn-first-pass-refusal-keeps-reply": ("session:compaction_refused",),
    "budget/after-turn-later-pass-refusal-closes-the-moment": (
        "session:compacting",
        "session:compaction_failed",
    ),
}


@pytest.mark.parametrize("case_id", sorted(AFTER_TURN))
def test_an_after_turn_moment_before_or_after_the_terminal(case_id: str) -> None:
    wanted = _case(case_id).expect.session_events
    assert isinstance(wanted, dict)
    after, before = wanted["$one_of"]
    moment = list(AFTER_TURN[case_id])
    assert match(wanted, list(after)) == []
    assert match(wanted, list(before)) == []
    # the moment moved before the turn: the terminal sits right after it
    start = list(before).index(moment[0])
    assert list(before)[start + len(moment)] == "session:turn_completed"
    # broken: the moment twice, or the terminal missing
    assert match(wanted, [*after, *moment]) != []
    assert match(wanted, [e for e in after if e != "session:turn_completed"]) != []


ACKNOWLEDGED = (
    "compaction/manual-acknowledgement-fails-sends-nothing",
    "compaction/manual-late-rejection-grants-nothing",
    "compaction/manual-cancel-while-acknowledgement-pending",
    "compaction/manual-late-acknowledgement-grants-nothing",
    "compaction/manual-cancel-during-acknowledgement-releases-admission",
)


@pytest.mark.parametrize("case_id", ACKNOWLEDGED)
def test_a_moment_opened_before_or_only_after_the_acknowledgement(case_id: str) -> None:
    case = _case(case_id)
    wanted = case.expect.session_events
    assert isinstance(wanted, dict)
    opened, never = wanted["$one_of"]
    assert "session:compacting" in opened
    assert "session:compacting" not in never
    assert match(wanted, list(never)) == []
    # broken: a moment closed twice, or nothing at all (the cancel or the operation swallowed)
    assert match(wanted, [*opened, "session:compaction_failed"]) != []
    assert match(wanted, []) != []
    if case.expect.events:
        for kind, items in case.expect.events.items():
            assert match(items, []) == [] or kind not in MOMENT, (case_id, kind)


def _run_case(case_id: str) -> Any:
    import asyncio

    from relavium_conformance._reference.impl import ReferenceImplementation
    from relavium_conformance._run.runner import run_cases
    from relavium_conformance._wire.adapters import InProcessAdapter

    adapter = InProcessAdapter("anthropic-forms", ReferenceImplementation)
    [result] = asyncio.run(run_cases(adapter, [_case(case_id)], timeout=15.0, snapshots=False)).run.cases
    return result


def test_an_engine_sending_the_other_anthropic_forms_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference made to send a tool result as text blocks and a lone user text as a string."""
    from relavium_reference._rules import dialect_anthropic

    build = dialect_anthropic.build_request

    def other_forms(request: Any) -> dict[str, Any]:
        body = build(request)
        for message in body["messages"]:
            blocks = message["content"]
            if message["role"] == "user" and len(blocks) == 1 and blocks[0]["type"] == "text":
                message["content"] = blocks[0]["text"]
        return body

    monkeypatch.setattr(
        dialect_anthropic, "_result_text", lambda result: [{"type": "text", "text": str(result)}]
    )
    monkeypatch.setattr(dialect_anthropic, "build_request", other_forms)
    result = _run_case("wire/anthropic-tool-round-trip")
    assert result.status.value == "passed", result.differences


def test_an_engine_that_drops_the_tool_result_text_still_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from relavium_reference._rules import dialect_anthropic

    monkeypatch.setattr(dialect_anthropic, "_result_text", lambda result: [{"type": "text", "text": ""}])
    assert _run_case("wire/anthropic-tool-round-trip").status.value == "failed"
