"""Every file in schemas/ is a valid 2020-12 schema; the engine's are generated from its models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from relavium_reference._schemas import SCHEMA_DIALECT, engine_schemas, render

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILES = sorted((ROOT / "schemas").rglob("*.json"))


def test_schemas_folder_is_not_empty() -> None:
    assert SCHEMA_FILES


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: str(p.relative_to(ROOT / "schemas")))
def test_every_schema_is_valid_2020_12(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema.get("$schema") == SCHEMA_DIALECT
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", sorted(engine_schemas()))
def test_committed_schema_matches_its_model(name: str) -> None:
    committed = (ROOT / "schemas" / name).read_text(encoding="utf-8")
    assert committed == render(engine_schemas()[name]), (
        f"schemas/{name} drifted from its model: run `relavium-conformance regen-schemas`"
    )


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(engine_schemas()[name])


def test_event_schema_accepts_a_real_event_and_refuses_unknown_fields() -> None:
    event = {
        "type": "session:turn_completed",
        "sessionId": "s",
        "sequenceNumber": 3,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "stopReason": "aborted",
        "tokensUsed": {"input": 1, "output": 2},
    }
    _validator("session-event.schema.json").validate(event)
    with pytest.raises(ValidationError):
        _validator("session-event.schema.json").validate({**event, "surprise": True})
    with pytest.raises(ValidationError):
        _validator("session-event.schema.json").validate({**event, "sequenceNumber": -1})


def test_error_code_schema_has_context_overflow() -> None:
    assert "context_overflow" in engine_schemas()["error-code.schema.json"]["enum"]
    assert len(engine_schemas()["error-code.schema.json"]["enum"]) == 15


def test_context_schema_refuses_unknown_fields() -> None:
    validator = _validator("session-context.schema.json")
    validator.validate({"workingDir": "/w"})
    with pytest.raises(ValidationError):
        validator.validate({"workingDir": "/w", "apiKey": "k"})


@pytest.mark.parametrize(
    "event",
    [
        {"type": "session:compacting", "reason": "manual"},
        {
            "type": "session:compacted",
            "reason": "auto-threshold",
            "summary": "s",
            "keptMessageCount": 2,
            "tokensBefore": 10,
            "tokensAfter": 4,
            "tokensUsed": {"input": 3, "output": 1},
            "keptTurnCount": 1,
        },
        {
            "type": "session:compaction_failed",
            "reason": "manual",
            "outcome": "budget_refused",
            "message": "cap",
        },
        {"type": "session:compaction_refused", "reason": "auto-threshold", "message": "cap"},
        {
            "type": "session:trimmed",
            "reason": "auto-fallback",
            "keptMessageCount": 2,
            "droppedMessageCount": 5,
        },
        {"type": "session:exported", "workflowPath": "a.relavium.yaml"},
        {
            "type": "agent:approval_requested",
            "nodeId": "a",
            "toolId": "t",
            "action": "fs_write",
            "preview": {"path": "p"},
        },
    ],
)
def test_every_session_event_arm_validates(event: dict[str, object]) -> None:
    envelope = {"sessionId": "s", "sequenceNumber": 0, "timestamp": "2026-01-01T00:00:00.000Z"}
    _validator("session-event.schema.json").validate({**envelope, **event})
    with pytest.raises(ValidationError):
        _validator("session-event.schema.json").validate({**envelope, **event, "type": "session:unknown"})
