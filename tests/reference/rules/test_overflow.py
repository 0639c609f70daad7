"""Overflow classification (KD-OVF-1) on the vendors' recorded payloads, and its safety on any input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from relavium_reference._model.vocabulary import LlmErrorKind
from relavium_reference._rules.overflow import (
    DIALECTS,
    classify_provider_error,
    is_native_context_stop,
    is_official_base_url,
    overflow_evidence,
)

ROOT = Path(__file__).resolve().parents[3]
VECTORS: list[dict[str, Any]] = YAML(typ="safe", pure=True).load(
    (ROOT / "fixtures" / "wire" / "provider-errors.yaml").read_text(encoding="utf-8")
)


@pytest.mark.clauses("AS-OVF-002", "AS-OVF-016")
@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_each_recorded_payload_classifies_as_recorded(vector: dict[str, Any]) -> None:
    kind = classify_provider_error(vector["dialect"], vector["status"], vector["body"])
    assert kind is LlmErrorKind(vector["kind"])
    evidence = overflow_evidence(
        vector["dialect"], vector["status"], vector["body"], base_url=vector.get("base_url")
    )
    expected = vector["evidence"]
    if expected is None:
        assert evidence is None
    else:
        assert evidence is not None
        assert evidence.authoritative is (expected == "official")


def test_the_vectors_cover_every_dialect_with_an_overflow_and_a_look_alike() -> None:
    for dialect in DIALECTS:
        mine = [v for v in VECTORS if v["dialect"] == dialect]
        assert any(v["evidence"] == "official" for v in mine), dialect
        assert any(
            (v["kind"] != "context_overflow" and v["status"] == 400) or v["status"] == 429 for v in mine
        )


@pytest.mark.clauses("AS-OVF-002")
def test_an_overflow_message_under_another_status_is_not_official() -> None:
    body = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 5 tokens > 4 maximum"},
    }
    assert classify_provider_error("anthropic", 429, body) is LlmErrorKind.RATE_LIMIT
    assert overflow_evidence("anthropic", 500, body) is None
    # another dialect's official payload is not this dialect's
    assert overflow_evidence("gemini", 400, body) is None


def test_base_urls() -> None:
    assert is_official_base_url("openai", None)
    assert is_official_base_url("openai", "https://api.openai.com/v1")
    assert not is_official_base_url("openai", "https://api.openai.com.evil.example/v1")
    assert not is_official_base_url("openai", "http://api.openai.com")
    assert not is_official_base_url("anthropic", "https://api.openai.com")


def test_the_native_context_stop_is_anthropic_s_own() -> None:
    assert is_native_context_stop("anthropic", "model_context_window_exceeded")
    assert not is_native_context_stop("openai", "model_context_window_exceeded")
    assert not is_native_context_stop("anthropic", "max_tokens")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500)
@given(
    dialect=st.sampled_from(DIALECTS),
    status=st.none() | st.integers(min_value=100, max_value=599),
    body=_JSON,
    base_url=st.none() | st.text(max_size=40),
)
def test_classification_is_total_and_a_429_is_never_an_overflow(
    dialect: Any, status: int | None, body: Any, base_url: str | None
) -> None:
    kind = classify_provider_error(dialect, status, body)
    assert isinstance(kind, LlmErrorKind)
    evidence = overflow_evidence(dialect, status, body, base_url=base_url)
    if status == 429:
        assert evidence is None
    assert (evidence is not None) == (kind is LlmErrorKind.CONTEXT_OVERFLOW)
    json.dumps(body)  # the strategy made JSON


@pytest.mark.clauses("AS-OVF-003", "AS-OVF-004")
def test_the_overflow_message_names_model_window_and_tools() -> None:
    from relavium_reference._rules.overflow import overflow_message

    assert (
        overflow_message("m", 200000, tools_ran=False)
        == "context window exceeded for model m (200000 tokens)"
    )
    assert overflow_message("m", None, tools_ran=True) == (
        "context window exceeded for model m (window size unknown); tools already ran"
    )
    assert overflow_message("m", 0, tools_ran=False).endswith("(window size unknown)")


@pytest.mark.clauses("AS-OVF-005", "AS-OVF-006", "AS-OVF-008", "AS-OVF-011", "AS-OVF-014", "AS-COMP-009")
def test_recovery_needs_every_condition() -> None:
    from dataclasses import fields, replace

    from relavium_reference._rules.overflow import RecoveryFacts, may_recover

    good = RecoveryFacts(
        genuine=True,
        window=1000,
        tools_dispatched=False,
        content_streamed=False,
        automatic_allowed=True,
        presend_suppressed=False,
        recovered=False,
    )
    assert may_recover(good)
    for item in fields(RecoveryFacts):
        value = getattr(good, item.name)
        spoiled = None if item.name == "window" else (not value)
        assert not may_recover(replace(good, **{item.name: spoiled})), item.name
