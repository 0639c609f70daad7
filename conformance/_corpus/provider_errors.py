"""Recorded provider failures, by name, as a case's provider script uses them (KD-OVF-1, KD-OVF-3).

``fixtures/wire/provider-errors.yaml`` holds the vendors' own error payloads (status and body per
dialect) with the classification a conforming provider layer gives each one.  A case names one in its
provider script, ``{provider_error: openai-context-length-exceeded}``, instead of writing a chunk:

* at the seam (this module), the kit plays the provider layer and answers with the classified error
  chunk the payload stands for: ``kind`` as recorded, ``status``, the dialect as ``provider``, the
  vendor's structured code and the vendor's own message (so a terminal that repeats provider text is
  caught), and for an overflow its evidence (``official``, or ``downgraded`` from a custom endpoint);
* at the wire level the same step is served as the recorded status and body in the vendor's dialect,
  so one script serves both levels.

The payload is data: adding a dialect's look-alike is one entry in the YAML file, no code.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Literal

from pydantic import Field, field_validator

from relavium_conformance._data import fixtures_dir, read_yaml
from relavium_conformance._errors import KitShapeError
from relavium_conformance._wire.model import KitStrict

__all__ = [
    "ProviderErrorStep",
    "RecordedProviderError",
    "provider_error",
    "provider_errors",
    "seam_error_chunk",
]

Evidence = Literal["official", "downgraded"]


class RecordedProviderError(KitStrict):
    """One entry of ``fixtures/wire/provider-errors.yaml``."""

    name: str
    dialect: Literal["anthropic", "openai", "gemini", "deepseek"]
    status: int | None  # ``None``: an error frame inside a stream that had answered 200
    body: dict[str, Any]
    kind: str
    evidence: Evidence | None
    base_url: str | None = None

    @property
    def inner(self) -> Mapping[str, Any]:
        error = self.body.get("error")
        return error if isinstance(error, Mapping) else self.body

    @property
    def vendor_message(self) -> str:
        message = self.inner.get("message")
        return message if isinstance(message, str) else ""

    @property
    def vendor_code(self) -> str | None:
        """The vendor's most specific structured signal: ``code`` (OpenAI), else ``type``/``status``."""
        for key in ("code", "type", "status"):
            value = self.inner.get(key)
            if isinstance(value, str) and value:
                return value
        return None


@cache
def provider_errors() -> dict[str, RecordedProviderError]:
    """Every recorded failure by name (read once; the names are unique)."""
    entries = read_yaml(fixtures_dir() / "wire" / "provider-errors.yaml")
    if not isinstance(entries, list):
        raise KitShapeError("fixtures/wire/provider-errors.yaml must be a list of recorded failures")
    table: dict[str, RecordedProviderError] = {}
    for entry in entries:
        recorded = RecordedProviderError.model_validate(entry)
        if recorded.name in table:
            raise KitShapeError(f"provider-errors.yaml names {recorded.name!r} twice")
        table[recorded.name] = recorded
    return table


def provider_error(name: str) -> RecordedProviderError:
    try:
        return provider_errors()[name]
    except KeyError:
        raise KitShapeError(f"no recorded provider error named {name!r}") from None


def seam_error_chunk(name: str) -> dict[str, Any]:
    """The classified ``error`` chunk a seam provider answers for the recorded failure ``name``."""
    recorded = provider_error(name)
    error: dict[str, Any] = {
        "kind": recorded.kind,
        "message": recorded.vendor_message,
        "provider": recorded.dialect,
    }
    if recorded.status is not None:
        error["status"] = recorded.status
    if recorded.vendor_code is not None:
        error["code"] = recorded.vendor_code
    if recorded.evidence is not None:
        error["evidence"] = recorded.evidence
    return {"type": "error", "error": error}


class ProviderErrorStep(KitStrict):
    """A provider script step: answer with the recorded failure of this name (see the module text)."""

    provider_error: str = Field(description="a name in fixtures/wire/provider-errors.yaml")

    @field_validator("provider_error")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in provider_errors():
            raise ValueError(
                f"no recorded provider error named {name!r} (fixtures/wire/provider-errors.yaml)"
            )
        return name

    def seam_chunk(self) -> dict[str, Any]:
        return seam_error_chunk(self.provider_error)
