"""Every event an implementation delivers, checked against ``schemas/session-event.schema.json``.

The check is generic: it runs on every event of every case, whatever the transport (the kit's
``host.emit`` receives the same plain objects in-process and over stdio), and it books its findings on
the event clauses, never on the case's own (see ``CaseResult.booked_clauses``).

* The arm is chosen by the event's ``type`` (the schema's discriminator); an unknown or missing type
  is a failure.
* A missing required field, a mistyped field or a value outside its enum or range is a failure, citing
  AS-EVT-001 (the union and its envelope, KD-EVT-2).
* An unknown field anywhere in the event is a **warning** in the case result, not a failure: consumers
  of the event contract ignore fields they do not know (KD-EVT-6).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from relavium_conformance._data import schemas_dir
from relavium_conformance._report.results import Difference

__all__ = ["EVENT_SHAPE_CLAUSES", "EVENT_SHAPE_KIT_DEFINED", "check_event_shapes"]

EVENT_SHAPE_CLAUSES = ("AS-EVT-001",)
EVENT_SHAPE_KIT_DEFINED = ("KD-EVT-2",)
_LIMIT = 10  # differences reported per case; the first ones say enough


@cache
def _arms() -> dict[str, Draft202012Validator]:
    schema = json.loads((schemas_dir() / "session-event.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    arms: dict[str, Draft202012Validator] = {}
    for arm in schema["oneOf"]:  # one arm per event type, told apart by its "type" constant
        definition = defs[arm["$ref"].rsplit("/", 1)[-1]]
        arms[definition["properties"]["type"]["const"]] = Draft202012Validator({**definition, "$defs": defs})
    return arms


def _where(index: int, path: Sequence[Any]) -> str:
    out = f"events[{index}]"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _difference(path: str, message: str, actual: Any = None) -> Difference:
    text = json.dumps(actual, ensure_ascii=False, default=str)
    return Difference(
        path=path,
        message=message,
        actual=actual if len(text) <= 300 else text[:300] + "...",
        clauses=EVENT_SHAPE_CLAUSES,
        kit_defined=EVENT_SHAPE_KIT_DEFINED,
    )


def check_event_shapes(events: Sequence[Any]) -> tuple[list[Difference], list[str]]:
    """The failures (missing, mistyped, out-of-enum fields) and the warnings (unknown fields)."""
    arms = _arms()
    failures: list[Difference] = []
    warnings: dict[tuple[str, str], str] = {}  # (type, field path) -> the first such warning
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            failures.append(_difference(f"events[{index}]", "an event is a JSON object", event))
            continue
        kind = event.get("type")
        validator = arms.get(kind) if isinstance(kind, str) else None
        if validator is None:
            failures.append(_difference(f"events[{index}].type", "not a session event type", kind))
            continue
        for error in sorted(validator.iter_errors(dict(event)), key=lambda e: list(map(str, e.path))):
            if error.validator == "additionalProperties":
                extra = ", ".join(sorted(set(error.instance) - set(error.schema.get("properties", {}))))
                inner = _where(index, error.absolute_path).removeprefix(f"events[{index}]")
                warnings.setdefault(
                    (str(kind), inner + extra),
                    f"{kind}: unknown field(s) {extra} at {_where(index, error.absolute_path)} "
                    "(tolerated: consumers ignore unknown event fields, KD-EVT-6)",
                )
                continue
            failures.append(
                _difference(
                    _where(index, error.absolute_path),
                    f"{kind}: {error.message} ({error.validator})",
                    error.instance,
                )
            )
    return failures[:_LIMIT], list(warnings.values())
