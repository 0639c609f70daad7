"""What reports show of what an implementation supplied: redacted, escaped, strict JSON."""

from __future__ import annotations

import json

import pytest

from relavium_conformance._report.sanitize import (
    MAX_SHOWN_DEPTH,
    clean_text,
    escape_controls,
    redact,
    strict_json,
)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-AbCdEf0123456789AbCdEf0123",
        "sk-ant-api03-AbCdEf0123456789AbCdEf",
        "AIzaSyA1234567890abcdefghijklmnopqrstu",
        "ghp_0123456789abcdefghijABCDEFGHIJ",
        "github_pat_0123456789abcdefghij_KLMNOP",
        "AKIAIOSFODNN7EXAMPLE",
        "xoxb-0123456789-abcdefghij",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
        "gsk_abcdefghijklmnopqrstuv",
        "xai-abcdefghijklmnopqrstuv",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    ],
)
def test_common_key_formats_are_redacted(secret: str) -> None:
    shown = redact(f"provider refused key {secret} (401)")
    assert secret not in shown
    assert shown == "provider refused key [redacted] (401)"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer [redacted]"),
        ("OPENAI_API_KEY=not-a-known-format-123", "OPENAI_API_KEY=[redacted]"),
        ('{"api_key": "zzzzzzzzzz"}', '{"api_key": "[redacted]"}'),
        ("password: hunter2hunter2", "password: [redacted]"),
    ],
)
def test_tokens_and_assigned_secrets_keep_their_name(text: str, kept: str) -> None:
    assert redact(text) == kept


def test_ordinary_text_is_left_alone() -> None:
    text = "session.send failed: turn 3 of 5, token count 1200, tokens=12"
    assert redact(text) == text


def test_control_characters_become_visible() -> None:
    assert escape_controls("a\x1b[31mb\x07c\u202ed") == "a\\x1b[31mb\\x07c\\u202ed"
    assert escape_controls("one\ntwo\tthree\r", multi_line=True) == "one\ntwo\tthree\\x0d"
    assert escape_controls("one\ntwo") == "one\\x0atwo"
    assert clean_text("\ud800 sk-AbCdEf0123456789AbCd\x1b") == "\ufffd [redacted]\\x1b"


def test_values_become_strict_json() -> None:
    deep: object = []
    for _ in range(900):
        deep = [deep]
    value = {"\udc80key": ["\ud800", float("inf"), float("nan"), 1e308, deep, b"raw"]}
    safe = strict_json(value)
    text = json.dumps(safe, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogate left
    (items,) = safe.values()
    assert items[0] == "\ufffd"
    assert items[1].startswith("[not a JSON number")
    assert items[3] == 1e308
    depth, cursor = 0, items[4]
    while isinstance(cursor, list):
        cursor, depth = cursor[0], depth + 1
    assert depth <= MAX_SHOWN_DEPTH
    assert "nested deeper" in cursor
