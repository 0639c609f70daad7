"""Strict data shapes at the engine's boundary: the session context and the agent snapshot.

Every model is frozen and refuses unknown fields.  Wire names follow the companion contracts:
camelCase for session shapes, snake_case for the authored agent document.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.vocabulary import FsScopeTier, ProviderId

__all__ = [
    "KEBAB_ID_PATTERN",
    "AgentSnapshot",
    "FallbackEntry",
    "MemoryNone",
    "MemoryPolicySpec",
    "MemorySummary",
    "MemoryWindow",
    "Selection",
    "SessionContext",
    "StrictModel",
    "WireModel",
    "parse_strict",
]

KEBAB_ID_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
_KEBAB = re.compile(KEBAB_ID_PATTERN)


class StrictModel(BaseModel):
    """Frozen, closed model with snake_case wire names."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False, validate_default=True)


class WireModel(BaseModel):
    """Frozen, closed model whose wire names are camelCase (the session/event contracts)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready form: camelCase names, absent optionals omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


M = TypeVar("M", bound=BaseModel)

_FIXED_MESSAGES = {
    "extra_forbidden": "unknown field refused",
    "missing": "required field missing",
}


def parse_strict(model: type[M], data: Any) -> M:
    """Validate ``data`` as ``model``; raise :class:`InvalidInputError` with a fixed message.

    The message never echoes the offending value (it may be user data or a secret).  A ``model`` that
    is not a pydantic model class is refused the same way.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvalidInputError("parse_strict needs a model class", location="model")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        message = _FIXED_MESSAGES.get(first["type"], f"invalid {model.__name__}: {first['type']}")
        raise InvalidInputError(message, location=location) from None


class Selection(WireModel):
    file: Annotated[str, Field(min_length=1)]
    start_line: Annotated[int, Field(ge=0)]
    end_line: Annotated[int, Field(ge=0)]

    @model_validator(mode="after")
    def _start_not_after_end(self) -> Selection:
        if self.start_line > self.end_line:
            raise ValueError("selection startLine is after endLine")
        return self


class SessionContext(WireModel):
    """The workspace situation a session runs against (echoed verbatim by ``session:started``)."""

    working_dir: Annotated[str, Field(min_length=1)]
    active_file: str | None = None
    selection: Selection | None = None
    git_ref: str | None = None
    fs_scope_tier: FsScopeTier = FsScopeTier.SANDBOXED
    variables: dict[str, str] | None = None


class MemoryNone(StrictModel):
    type: Literal["none"]


class MemorySummary(StrictModel):
    type: Literal["summary"]


class MemoryWindow(StrictModel):
    type: Literal["window"]
    window_size: Annotated[int, Field(gt=0)]


MemoryPolicySpec = Annotated[MemoryNone | MemorySummary | MemoryWindow, Field(discriminator="type")]


class FallbackEntry(StrictModel):
    model: Annotated[str, Field(min_length=1)]
    provider: ProviderId
    max_attempts: Annotated[int, Field(gt=0)] = 1


class AgentSnapshot(StrictModel):
    """The frozen agent a session binds: the fields of the authored agent the engine uses."""

    id: Annotated[str, Field(pattern=KEBAB_ID_PATTERN)]
    name: str | None = None
    model: Annotated[str, Field(min_length=1)]
    provider: ProviderId
    system_prompt: Annotated[str, Field(min_length=1)]
    tools: tuple[str, ...] = ()
    memory: MemoryPolicySpec | None = None
    fallback_chain: tuple[FallbackEntry, ...] = ()
    max_tokens: Annotated[int, Field(gt=0)] | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=False)


def is_kebab_id(value: str) -> bool:
    return bool(_KEBAB.match(value))
