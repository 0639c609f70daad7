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
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, WithJsonSchema
from pydantic.alias_generators import to_camel

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitShapeError
from relavium_conformance._wire import shape_memo

if TYPE_CHECKING:  # jsonschema and referencing are imported by the first shape question, not here: the
    # stdio server parses messages with the models below and never judges a shape
    from jsonschema import Draft202012Validator
    from jsonschema import ValidationError as SchemaError
    from referencing import Registry

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

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, defer_build=True)


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
        defer_build=True,
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
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    for path in sorted(schemas_dir().rglob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        registry = registry.with_resource(contents.get("$id", path.name), Resource.from_contents(contents))
    return registry


@cache
def _shape_registry() -> Registry[Any]:
    """The same schemas for :func:`shape_validator`, each without its ``$schema`` line (2020-12 is
    stated by the resource's specification instead).  jsonschema picks the validator class of a
    ``$ref``'d document from its ``$schema``; without it, it keeps ours (:data:`_ShapeValidator`, the
    same dialect with a faster ``oneOf``) all the way down."""
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    registry: Registry[Any] = Registry()
    for uri in schema_registry():
        contents = {k: v for k, v in schema_registry().contents(uri).items() if k != "$schema"}
        _learn_discriminators(contents, contents)
        registry = registry.with_resource(uri, DRAFT202012.create_resource(contents))
    return registry


# oneOf lists (by identity, the list kept alive beside its table) whose every branch is a local
# ``#/$defs/Name`` whose ``type`` property is a distinct string ``const``: the value's own ``type``
# names the only branch that can match.
_DISCRIMINATED: dict[int, tuple[list[Any], dict[str, int]]] = {}


def _learn_discriminators(node: Any, document: dict[str, Any]) -> None:
    if isinstance(node, list):
        for item in node:
            _learn_discriminators(item, document)
        return
    if not isinstance(node, dict):
        return
    branches = node.get("oneOf")
    if isinstance(branches, list) and branches:
        table: dict[str, int] = {}
        for index, branch in enumerate(branches):
            target = branch.get("$ref", "") if isinstance(branch, dict) and len(branch) == 1 else ""
            name = target.removeprefix("#/$defs/") if target.startswith("#/$defs/") else None
            resolved = document.get("$defs", {}).get(name) if name and "/" not in name else None
            const = (resolved or {}).get("properties", {}).get("type", {}).get("const")
            if not isinstance(const, str) or const in table:
                break
            table[const] = index
        else:
            _DISCRIMINATED[id(branches)] = (branches, table)
    for item in node.values():
        _learn_discriminators(item, document)


def _one_of(validator: Any, branches: Any, instance: Any, schema: Any) -> Iterator[SchemaError]:
    """``oneOf`` that tries the branch a value's ``type`` names first: when that branch accepts the
    value, every other branch refuses it on its ``type`` const, so exactly one matches.  Anything else
    (no table, no such branch, the branch refuses) is judged by jsonschema's own ``oneOf``, so the
    verdict and the first error are jsonschema's in every case."""
    known = _DISCRIMINATED.get(id(branches))
    if known is not None and known[0] is branches and type(instance) is dict:
        index = known[1].get(instance["type"]) if type(instance.get("type")) is str else None
        chosen = branches[index] if index is not None else None
        if chosen is not None and next(validator.descend(instance, chosen, schema_path=index), None) is None:
            return
    yield from _plain_one_of()(validator, branches, instance, schema)


@cache
def _plain_one_of() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator.VALIDATORS["oneOf"]


@cache
def _shape_validator_class() -> type[Draft202012Validator]:
    """The 2020-12 validator with the faster ``oneOf`` (built at the first shape question)."""
    from jsonschema import Draft202012Validator, validators

    extended: type[Draft202012Validator] = validators.extend(Draft202012Validator, {"oneOf": _one_of})  # type: ignore[no-untyped-call]
    return extended


def _shape_id(name: str) -> str:
    file, _, pointer = name.partition("#")
    return f"{SCHEMA_ID_BASE}{file}.schema.json" + (f"#{pointer}" if pointer else "")


@cache
def shape_validator(name: str) -> Draft202012Validator:
    """A validator for one shipped shape: ``session-message``, or ``session-message#/$defs/TextPart``."""
    validator = _shape_validator_class()({"$ref": _shape_id(name)}, registry=_shape_registry())
    return validator


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def _plain_key(value: Any) -> str | None:
    """A text naming ``value`` exactly when it is made of dicts, lists and scalars only (key order and
    list-or-tuple both kept, ``1``/``1.0``/``True`` told apart), else ``None``: no key, no memo."""

    def plain(item: Any) -> bool:
        kind = type(item)
        if kind is dict:
            return all(type(key) is str and plain(inner) for key, inner in item.items())
        if kind is list:
            return all(plain(inner) for inner in item)
        return kind in _PLAIN_SCALARS

    return repr(value) if plain(value) else None


_SHAPE_MEMO: dict[tuple[str, str], str | None] = {}
_SHAPE_MEMO_LIMIT = 4096


def shape_problem(name: str, value: Any) -> str | None:
    """The first way ``value`` breaks the shape's schema (a path and a fixed reason), or ``None``.

    The answer depends only on the schema and the value, so equal plain values are checked once per
    process (a corpus repeats the same stream chunks hundreds of times).
    """
    key = _plain_key(value)
    if key is not None and (name, key) in _SHAPE_MEMO:
        return _SHAPE_MEMO[(name, key)]
    if key is not None:
        found, problem = shape_memo.recall(name, key)  # judged by this same judge in an earlier run
        if found:
            _SHAPE_MEMO[(name, key)] = problem
            return problem
    error = next(iter(shape_validator(name).iter_errors(value)), None)
    problem = None
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top)"
        problem = f"{where}: breaks the {name} schema ({error.validator})"
    if key is not None:
        if len(_SHAPE_MEMO) >= _SHAPE_MEMO_LIMIT:
            _SHAPE_MEMO.clear()
        _SHAPE_MEMO[(name, key)] = problem
        shape_memo.remember(name, key, problem)
    return problem


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
