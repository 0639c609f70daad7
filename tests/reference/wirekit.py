"""The recorded wire fixtures, loaded once, and how a test compares seam chunks with their expectation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from relavium_reference._model.llm import StreamChunk

ROOT = Path(__file__).resolve().parents[2]
WIRE = ROOT / "fixtures" / "wire"


def _load(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = YAML(typ="safe", pure=True).load((WIRE / name).read_text(encoding="utf-8"))
    return data


STREAMS = _load("streams.yaml")
ERRORS = _load("provider-errors.yaml")


def seam(chunks: list[StreamChunk]) -> list[dict[str, Any]]:
    """Chunks as the expectation writes them: an error keeps only the fields the fixture names."""
    return [chunk.model_dump(mode="json", by_alias=True, exclude_none=True) for chunk in chunks]


def matches(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    if len(actual) != len(expected):
        return False
    for got, want in zip(actual, expected, strict=True):
        if want["type"] == "error":
            if got["type"] != "error" or any(got["error"].get(k) != v for k, v in want["error"].items()):
                return False
        elif got != want:
            return False
    return True


def mid_stream_body(dialect: str, frame: dict[str, Any]) -> bytes:
    """A 200 stream whose first event is the failure frame (how a stream error arrives)."""
    import json

    data = json.dumps(frame)
    if dialect == "anthropic":
        start = (
            '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
            '"model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"stop_sequence":null,'
            '"usage":{"input_tokens":3,"output_tokens":1}}}'
        )
        return f"event: message_start\ndata: {start}\n\nevent: error\ndata: {data}\n\n".encode()
    return f"data: {data}\n\n".encode()
