"""The ScriptedProvider and the fallback chain: retries, advancing, fatal stops, no failover after content."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.reference.enginekit import error_call, make_session, run, text_call

from relavium_reference import (
    AgentSnapshot,
    ErrorCode,
    FallbackEntry,
    InvalidInputError,
    ScriptedProvider,
    ScriptError,
    load_script,
)
from relavium_reference._model.llm import LlmMessage, LlmRequest, LlmTextPart

ROOT = Path(__file__).resolve().parents[3]

CHAIN_AGENT = AgentSnapshot(
    id="helper",
    model="primary",
    provider="openai",
    system_prompt="s",
    fallback_chain=(
        FallbackEntry(model="backup", provider="anthropic", max_attempts=2),
        FallbackEntry(model="last", provider="gemini", max_attempts=1),
    ),
)


def _send(h, text="q"):  # type: ignore[no-untyped-def]
    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.send_message(text)

    return run(scenario())


def _models(h) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.model for r in h.provider.requests]


def test_retryable_error_advances_to_the_fallback() -> None:
    h = make_session(calls=[error_call("rate_limit"), text_call("from backup")], agent=CHAIN_AGENT)
    result = _send(h)
    assert result.text == "from backup"
    assert _models(h) == ["primary", "backup"]


def test_retryable_error_retries_the_same_entry_within_its_budget() -> None:
    calls = [
        error_call("overloaded"),
        error_call("overloaded"),
        error_call("timeout"),
        text_call("from last"),
    ]
    h = make_session(calls=calls, agent=CHAIN_AGENT)
    result = _send(h)
    assert result.text == "from last"
    assert _models(h) == ["primary", "backup", "backup", "last"]


def test_fatal_error_stops_the_chain() -> None:
    h = make_session(calls=[error_call("auth"), text_call("never")], agent=CHAIN_AGENT)
    result = _send(h)
    assert result.error is not None
    assert result.error.code is ErrorCode.PROVIDER_AUTH
    assert _models(h) == ["primary"]


def test_no_failover_after_the_first_streamed_content() -> None:
    h = make_session(
        calls=[error_call("overloaded", after_text="partial"), text_call("never")], agent=CHAIN_AGENT
    )
    result = _send(h)
    assert result.error is not None
    assert result.error.code is ErrorCode.PROVIDER_UNAVAILABLE
    assert _models(h) == ["primary"]


def test_exhausted_chain_reports_the_last_error() -> None:
    calls = [
        error_call("rate_limit"),
        error_call("overloaded"),
        error_call("overloaded"),
        error_call("transport"),
    ]
    h = make_session(calls=calls, agent=CHAIN_AGENT)
    result = _send(h)
    assert result.error is not None
    assert result.error.code is ErrorCode.PROVIDER_UNAVAILABLE
    assert len(h.provider.requests) == 4
    assert h.session.turns_used == 1


def test_usage_accumulates_only_from_reported_attempts() -> None:
    calls = [error_call("rate_limit"), text_call("ok", input_tokens=9, output_tokens=2)]
    h = make_session(calls=calls, agent=CHAIN_AGENT)
    _send(h)
    [completed] = h.of_type("session:turn_completed")
    assert (completed.tokens_used.input, completed.tokens_used.output) == (9, 2)  # type: ignore[union-attr]
    assert completed.tokens_used.model == "backup"  # type: ignore[union-attr]


def test_script_records_each_request_as_a_copy() -> None:
    provider = ScriptedProvider({"calls": [text_call("a")]})
    request = LlmRequest(model="m", messages=[LlmMessage(role="user", content=[LlmTextPart(text="hi")])])
    provider.stream(request)
    request.messages.clear()
    assert provider.requests[0].request["messages"][0]["content"][0]["text"] == "hi"


def test_script_running_out_is_a_script_error() -> None:
    provider = ScriptedProvider({"calls": []})
    with pytest.raises(ScriptError):
        provider.stream(LlmRequest(model="m", messages=[]))


def test_script_refuses_unknown_fields_and_chunk_types() -> None:
    with pytest.raises(InvalidInputError):
        ScriptedProvider({"calls": [{"chunks": [{"type": "text_delta", "text": "x", "extra": 1}]}]})
    with pytest.raises(InvalidInputError):
        ScriptedProvider({"calls": [{"chunks": [{"type": "telepathy"}]}]})


def test_expect_model_pins_the_call() -> None:
    provider = ScriptedProvider({"calls": [{**text_call("a"), "expectModel": "other"}]})
    with pytest.raises(ScriptError):
        provider.stream(LlmRequest(model="m", messages=[]))


def test_shipped_scripts_load() -> None:
    scripts = sorted((ROOT / "fixtures" / "provider-scripts").glob("*.yaml"))
    assert scripts, "no provider scripts found"
    for path in scripts:
        assert load_script(path).calls
