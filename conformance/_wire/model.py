"""The kit's own model bases and its one judge of shapes: the shipped JSON Schemas.

The kit never parses what crosses the boundary with the engine's models: a broken engine must not break
the judge.  Message envelopes are kit models (:class:`KitWire`, camelCase names; :class:`KitStrict`,
snake_case names, for the kit's own files).  The domain shapes nested inside them (an agent, a durable
message, a provider request, a stream chunk, ...) travel as plain JSON and are judged against the
schema files under ``schemas/`` (:func:`shape_problem`), which are data the kit ships.

* :func:`ref` marks a field as "JSON of this schema" for the generated protocol schemas (a ``$ref``),
  without checking it at parse time (``--validate-protocol`` checks it on the wire).
* :func:`checked` also checks the value against the schema when the kit parses it (the kit's own
  fixtures).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, TypeVar

from jsonschema import Draft202012Validator
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, WithJsonSchema
from pydantic.alias_generators import to_camel
from referencing import Registry, Resource

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitShapeError

__all__ = [
    "SCHEMA_DIALECT",
    "SCHEMA_ID_BASE",
    "KitStrict",
    "KitWire",
    "checked",
    "kit_parse",
    "ref",
    "schema_registry",
    "shape_problem",
    "shape_validator",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID_BASE = "https://relavium.dev/conformance/schemas/"

M = TypeVar("M", bound=BaseModel)

_FIXED = {
    "extra_forbidden": "unknown field refused",
    "missing": "required field missing",
}


class KitStrict(BaseModel):
    """Frozen, closed model with snake_case names: the kit's own files (cases, results, baselines)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


class KitWire(BaseModel):
    """Frozen, closed model whose names are camelCase on the wire: the protocol's messages."""

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


def kit_parse(model: type[M], data: Any) -> M:
    """Validate ``data`` as ``model``; raise :class:`KitShapeError` naming the field, never the value."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        kind = first["type"]
        message = _FIXED.get(kind) or (first["msg"] if kind == "value_error" else f"invalid: {kind}")
        raise KitShapeError(message, location=location) from None


@cache
def schema_registry() -> Registry[Any]:
    """Every schema file the kit ships, by its ``$id`` (so ``$ref`` between files resolves)."""
    registry: Registry[Any] = Registry()
    for path in sorted(schemas_dir().rglob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        registry = registry.with_resource(contents.get("$id", path.name), Resource.from_contents(contents))
    return registry


def _shape_id(name: str) -> str:
    file, _, pointer = name.partition("#")
    return f"{SCHEMA_ID_BASE}{file}.schema.json" + (f"#{pointer}" if pointer else "")


@cache
def shape_validator(name: str) -> Draft202012Validator:
    """A validator for one shipped shape: ``session-message``, or ``session-message#/$defs/TextPart``."""
    return Draft202012Validator({"$ref": _shape_id(name)}, registry=schema_registry())


def shape_problem(name: str, value: Any) -> str | None:
    """The first way ``value`` breaks the shape's schema (a path and a fixed reason), or ``None``."""
    error = next(iter(shape_validator(name).iter_errors(value)), None)
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top)"
    return f"{where}: breaks the {name} schema ({error.validator})"


def ref(name: str) -> WithJsonSchema:
    """Annotated metadata: the field is JSON of the named shipped schema (a ``$ref`` in generated schemas).

    ``Annotated[Any, ref("session-message")]`` is not checked at parse time (``--validate-protocol``
    checks it on the wire); add :func:`checked` to check it whenever the kit parses it.
    """
    return WithJsonSchema({"$ref": _shape_id(name)})


def checked(name: str) -> AfterValidator:
    """Annotated metadata: check the value against the named shipped schema when the kit parses it."""

    def check(value: Any) -> Any:
        problem = shape_problem(name, value)
        if problem is not None:
            raise ValueError(problem)
        return value

    return AfterValidator(check)
