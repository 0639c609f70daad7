"""Compliant alternatives: implementations that choose another behaviour the specification allows.

Each must pass every case the reference engine passes (``selftest`` checks it), so the kit never turns
an optional field, or one of several compliant behaviours, into a demand:

* ``unknown-event-field``: every event carries a field the event schema does not know; consumers ignore
  unknown fields, so it is a warning in the case result, never a failure (KD-EVT-6);
* ``no-tokens-model``: ``tokensUsed.model`` is optional (KD-LIFE-2): left out of every send result and
  every ``session:turn_completed``;
* ``sequence-continues-on-resume``: a resumed instance continues the session's event numbering instead
  of restarting at 0 (both allowed, KD-EVT-4);
* ``export-quotes-every-string``: its own YAML writer double-quotes every string (multi-line ones as
  ``"a\nb"``): deterministic, sorted keys at every level, byte-stable under its own parse and write, but
  not the reference's bytes (KD-EXP-6 asks for the properties, not the bytes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from relavium_conformance._reference.impl import (
    REFERENCE_PURE,
    PureFunctions,
    ReferenceImplementation,
    export_workflow,
)
from relavium_conformance._selftest.compliant_shapes import (
    FoldAsOnePart,
    OwnOverflowWording,
    OwnRefusalWording,
    OwnSummaryWrapper,
    SummariserOwnLabels,
)
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.protocol import Callback

__all__ = ["COMPLIANT_ALTERNATIVES", "CompliantAlternative"]


class _UnknownEventField(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        return {**event, "portTrace": "span-1"}


def _without_model(value: Any) -> None:
    if isinstance(value, dict) and isinstance(value.get("tokensUsed"), dict):
        value["tokensUsed"].pop("model", None)


class _NoTokensModel(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        _without_model(event)
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        if method == "session.send":
            _without_model(result)
        return result


class _SequenceContinues(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        offset = self.events_before_resume(handle)
        if offset and isinstance(event.get("sequenceNumber"), int):
            event["sequenceNumber"] += offset
        return event


_LINE_BREAKS = {"\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029", "\ufeff": "\\ufeff"}


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's), line-break look-alikes escaped too."""
    out = json.dumps(text, ensure_ascii=False)
    for raw, escaped in _LINE_BREAKS.items():
        out = out.replace(raw, escaped)
    return out


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _quoted(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return "{}" if isinstance(value, dict) else "[]"  # an empty container


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _block(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key in sorted(value, key=_utf16):
            item = value[key]
            if isinstance(item, dict | list) and item:
                out.append(f"{pad}{_quoted(key)}:")
                _block(item, indent + 2, out)
            else:
                out.append(f"{pad}{_quoted(key)}: {_scalar(item)}")
    else:
        for item in value:
            if isinstance(item, dict | list) and item:
                out.append(f"{pad}-")
                _block(item, indent + 2, out)
            else:
                out.append(f"{pad}- {_scalar(item)}")


def own_yaml(data: dict[str, Any]) -> str:
    """Another port's canonical writer: block style, sorted keys, every string double-quoted."""
    out: list[str] = []
    _block(data, 0, out)
    return "\n".join(out) + "\n"


def _export_own_quoting(record: Any, messages: Sequence[Any]) -> tuple[dict[str, Any], str]:
    document, _text = export_workflow(record, messages)
    return document, own_yaml(document)


@dataclass(frozen=True)
class CompliantAlternative:
    name: str
    behaviour: str  # what it does differently, in one line
    kit_defined: tuple[str, ...]  # the entries that say this behaviour is allowed
    implementation: type[ReferenceImplementation] = ReferenceImplementation
    pure: PureFunctions = field(default=REFERENCE_PURE)

    def factory(self) -> Any:
        def make(callback: Callback) -> ReferenceImplementation:
            return self.implementation(callback, name=f"alternative:{self.name}", pure=self.pure)

        return make


COMPLIANT_ALTERNATIVES: tuple[CompliantAlternative, ...] = (
    CompliantAlternative(
        "unknown-event-field",
        "every event carries a field the event schema does not know",
        ("KD-EVT-6",),
        _UnknownEventField,
    ),
    CompliantAlternative(
        "no-tokens-model",
        "tokensUsed never names the model (it is optional)",
        ("KD-LIFE-2",),
        _NoTokensModel,
    ),
    CompliantAlternative(
        "sequence-continues-on-resume",
        "a resumed instance continues the session's sequence numbers instead of restarting at 0",
        ("KD-EVT-4",),
        _SequenceContinues,
    ),
    CompliantAlternative(
        "export-quotes-every-string",
        "its own YAML writer double-quotes every string, multi-line ones with escapes",
        ("KD-EXP-6",),
        pure=replace(REFERENCE_PURE, export_workflow=_export_own_quoting),
    ),
    # another exact form where a shape entry fixes one (compliant_shapes.py)
    CompliantAlternative(
        "own-overflow-wording",
        "its context_overflow message has its own wording with the model, the window and the tools",
        ("KD-OVF-2",),
        OwnOverflowWording,
    ),
    CompliantAlternative(
        "fold-as-one-part",
        "same-role folding gives one text part joined by a blank line",
        ("KD-PROJ-2",),
        FoldAsOnePart,
    ),
    CompliantAlternative(
        "own-summary-wrapper",
        "the running summary travels in its own wrapper text",
        ("KD-COMP-3",),
        OwnSummaryWrapper,
    ),
    CompliantAlternative(
        "own-refusal-wording",
        "a content refusal says 'invalid content' (moved here from the breaks: KD-MSG-2 is a shape)",
        ("KD-MSG-2",),
        OwnRefusalWording,
    ),
    CompliantAlternative(
        "summariser-own-labels",
        "a summary pass labels the folded messages USER: and ASSISTANT:",
        ("KD-COMP-11",),
        SummariserOwnLabels,
    ),
)
