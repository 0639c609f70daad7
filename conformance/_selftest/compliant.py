"""Compliant alternatives: implementations that choose another behaviour the specification allows.

Each must pass every case the reference engine passes (``selftest`` checks it), so the kit never turns
an optional field, or one of several compliant behaviours, into a demand:

* ``unknown-event-field``: every event carries a field the event schema does not know; consumers ignore
  unknown fields, so it is a warning in the case result, never a failure (KD-EVT-6);
* ``no-tokens-model``: ``tokensUsed.model`` is optional (KD-LIFE-2): left out of every send result and
  every ``session:turn_completed``;
* ``sequence-continues-on-resume``: a resumed instance continues the session's event numbering instead
  of restarting at 0 (both allowed, KD-EVT-4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
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


@dataclass(frozen=True)
class CompliantAlternative:
    name: str
    behaviour: str  # what it does differently, in one line
    kit_defined: tuple[str, ...]  # the entries that say this behaviour is allowed
    implementation: type[ReferenceImplementation]

    def factory(self) -> Any:
        def make(callback: Callback) -> ReferenceImplementation:
            return self.implementation(callback, name=f"alternative:{self.name}")

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
)
