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
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from relavium_conformance._data import schemas_dir
from relavium_conformance._report.results import Difference

if TYPE_CHECKING:  # (imported by the first event judged: a -j parent that only deals cases needs none)
    from jsonschema import Draft202012Validator

__all__ = ["EVENT_SHAPE_CLAUSES", "EVENT_SHAPE_KIT_DEFINED", "check_event_shapes"]

EVENT_SHAPE_CLAUSES = ("AS-EVT-001",)
EVENT_SHAPE_KIT_DEFINED = ("KD-EVT-2",)
_LIMIT = 10  # differences reported per case; the first ones say enough


def _open(schema: Any) -> Any:
    """``schema`` with every ``additionalProperties: false`` taken out (unknown fields allowed)."""
    if isinstance(schema, dict):
        return {k: _open(v) for k, v in schema.items() if not (k == "additionalProperties" and v is False)}
    if isinstance(schema, list):
        return [_open(item) for item in schema]
    return schema


_NARROWING = frozenset({"not", "oneOf", "if", "then", "else"})
"""Keywords under which dropping ``additionalProperties: false`` could make a schema accept less."""


def _monotone(schema: Any) -> bool:
    """Whether opening ``schema`` (``_open``) only ever widens it: then an event the closed schema accepts
    is accepted by the open one too, with no unknown field, and one validation says both."""
    if isinstance(schema, dict):
        return not (_NARROWING & schema.keys()) and all(_monotone(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_monotone(item) for item in schema)
    return True


@cache
def _arms() -> tuple[dict[str, tuple[Draft202012Validator, Draft202012Validator]], bool]:
    """Per event type: the open validator (failures) and the closed one (unknown fields); and whether
    the arms are monotone (see :func:`_monotone`)."""
    from jsonschema import Draft202012Validator

    schema = json.loads((schemas_dir() / "session-event.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    arms: dict[str, tuple[Draft202012Validator, Draft202012Validator]] = {}
    for arm in schema["oneOf"]:  # one arm per event type, told apart by its "type" constant
        definition = defs[arm["$ref"].rsplit("/", 1)[-1]]
        closed = {**definition, "$defs": defs}
        kind = definition["properties"]["type"]["const"]
        arms[kind] = (Draft202012Validator(_open(closed)), Draft202012Validator(closed))
    return arms, _monotone(defs)


_ENVELOPE = ("sessionId", "sequenceNumber", "timestamp")
_PLACEHOLDERS: dict[str, Any] = {"sessionId": "s", "sequenceNumber": 0, "timestamp": "t"}
_ROOT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "title", "description"})
_REMEMBERED = 4096  # payload verdicts kept (a corpus run has about 700 distinct payloads)


@cache
def _envelopes() -> dict[str, tuple[tuple[str, Draft202012Validator], ...] | None]:
    """Per event type, a validator for each envelope field the arm declares; None when the arm's root
    could tie its fields together (a keyword beyond ``properties``/``required``/``additionalProperties``
    and notes) or a placeholder does not fit: then its events are always judged whole."""
    from jsonschema import Draft202012Validator

    schema = json.loads((schemas_dir() / "session-event.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    out: dict[str, tuple[tuple[str, Draft202012Validator], ...] | None] = {}
    for arm in schema["oneOf"]:
        definition = defs[arm["$ref"].rsplit("/", 1)[-1]]
        kind = definition["properties"]["type"]["const"]
        fields = []
        for name in _ENVELOPE:
            if name in definition["properties"]:
                check = Draft202012Validator({**definition["properties"][name], "$defs": defs})
                fields.append((name, check if check.is_valid(_PLACEHOLDERS[name]) else None))
        simple = definition.keys() <= _ROOT_KEYWORDS and all(check for _name, check in fields)
        out[kind] = tuple((name, check) for name, check in fields if check is not None) if simple else None
    return out


_Findings = tuple[tuple[tuple[Any, ...], tuple[str, ...]], ...]
"""Unknown-field findings of an event the open arm accepts: (path inside the event, the unknown names)."""

_payload_verdicts: dict[tuple[str, str, tuple[bool, ...]], bool] = {}
_payload_findings: dict[tuple[str, str, tuple[bool, ...]], _Findings | None] = {}


def _payload_key(kind: str, event: Any) -> tuple[tuple[str, str, tuple[bool, ...]], dict[str, Any]] | None:
    """The memo key of ``event``'s payload and a stand-in with fixed valid envelope values; None when it
    must be judged whole (not a plain dict, an arm whose root could tie fields together, an envelope
    value its field refuses, a payload JSON cannot hold exactly)."""
    fields = _envelopes().get(kind)
    if fields is None or type(event) is not dict:
        return None
    present = tuple(name in event for name, _check in fields)
    for (name, check), there in zip(fields, present, strict=True):
        if there and not check.is_valid(event[name]):
            return None
    names = [name for name, _check in fields]
    payload = {key: value for key, value in event.items() if key not in names}
    try:
        text = json.dumps(payload, sort_keys=True, allow_nan=False)
        exact = json.loads(text) == payload
    except (TypeError, ValueError, RecursionError):
        exact = False
    if not exact:
        return None
    stand_in = {
        **event,
        **{name: _PLACEHOLDERS[name] for name, there in zip(names, present, strict=True) if there},
    }
    return (kind, text, present), stand_in


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= _REMEMBERED:
        memo.clear()
    memo[key] = value


def _accepted(kind: str, closed: Draft202012Validator, event: Any) -> bool:
    """``closed.is_valid(event)``, remembered by the event's payload.

    An arm's root holds only independent per-field constraints (``properties``), which fields must be
    there (``required``) and which may not (``additionalProperties``): so an event whose envelope values
    each satisfy their own field's schema is valid exactly when the same event with fixed valid envelope
    values is.  Payloads repeat where envelopes never do (every event has its own sequence number and
    timestamp), so the verdict is remembered by the exact payload (its canonical JSON, used only when it
    reads back equal: no tuple, no non-text key, no NaN) and which envelope fields are present.  Any
    other event (not a plain dict, an envelope value its field refuses, a payload JSON cannot hold
    exactly) is judged whole, as before."""
    keyed = _payload_key(kind, event)
    if keyed is None:
        return bool(closed.is_valid(event))
    key, stand_in = keyed
    verdict = _payload_verdicts.get(key)
    if verdict is None:
        verdict = bool(closed.is_valid(stand_in))
        _remember(_payload_verdicts, key, verdict)
    return verdict


def _findings_whole(
    opened: Draft202012Validator, closed: Draft202012Validator, event: Any
) -> _Findings | None:
    """The unknown-field findings of ``event`` when the open arm accepts it; None when it refuses it."""
    if not opened.is_valid(event):
        return None
    return tuple((tuple(path), tuple(names)) for path, names in _unknown_fields(closed.iter_errors(event)))


def _tolerated(
    kind: str, opened: Draft202012Validator, closed: Draft202012Validator, event: Mapping[str, Any]
) -> _Findings | None:
    """:func:`_findings_whole`, remembered by the event's payload as :func:`_accepted` is: the open arm's
    root is the closed one's without ``additionalProperties: false`` (the same independent per-field
    constraints), an envelope field is never unknown (every arm declares it), and the stand-in has the
    event's keys in the event's order, so the verdict and the findings' paths and names are the same."""
    keyed = _payload_key(kind, event)
    if keyed is None:
        return _findings_whole(opened, closed, dict(event))
    key, stand_in = keyed
    if key in _payload_findings:
        return _payload_findings[key]
    found = _findings_whole(opened, closed, stand_in)
    _remember(_payload_findings, key, found)
    return found


def _unknown_fields(errors: Any) -> Iterator[tuple[Sequence[Any], list[str]]]:
    """Every unknown-field finding among ``errors`` and their sub-errors (an optional object's
    unknown field is reported inside its ``anyOf``)."""
    for error in errors:
        if error.validator == "additionalProperties":
            known = set(error.schema.get("properties", {}))
            yield error.absolute_path, sorted(set(error.instance) - known)
        yield from _unknown_fields(error.context or ())


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
    arms, monotone = _arms()
    failures: list[Difference] = []
    warnings: dict[tuple[str, str], str] = {}  # (type, field path) -> the first such warning
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            failures.append(_difference(f"events[{index}]", "an event is a JSON object", event))
            continue
        kind = event.get("type")
        pair = arms.get(kind) if isinstance(kind, str) else None
        if pair is None:
            failures.append(_difference(f"events[{index}].type", "not a session event type", kind))
            continue
        opened, closed = pair
        if monotone and _accepted(str(kind), closed, event):
            continue  # no failure (the open schema is wider) and no unknown field
        found = (
            _tolerated(str(kind), opened, closed, event)
            if monotone
            else _findings_whole(opened, closed, dict(event))
        )
        for path, names in found or ():
            extra = ", ".join(names)
            inner = _where(index, path).removeprefix(f"events[{index}]")
            warnings.setdefault(
                (str(kind), inner + extra),
                f"{kind}: unknown field(s) {extra} at {_where(index, path)} "
                "(tolerated: consumers ignore unknown event fields, KD-EVT-6)",
            )
        if found is not None:
            continue
        errors = sorted(opened.iter_errors(dict(event)), key=lambda e: list(map(str, e.path)))
        for error in errors:
            failures.append(
                _difference(
                    _where(index, error.absolute_path),
                    f"{kind}: {error.message} ({error.validator})",
                    error.instance,
                )
            )
    return failures[:_LIMIT], list(warnings.values())
