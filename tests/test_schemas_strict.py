"""Every schema in schemas/ is accepted by strict validators: the rules of Ajv's default strict mode that we
know, checked here without Ajv.

* no unknown keyword (strictSchema: ``discriminator`` is OpenAPI, not JSON Schema);
* no union ``type`` (strictTypes: ``["string", "null"]`` must be an ``anyOf``);
* a type-specific keyword only where its type is declared, in the same schema or in one applying to the
  same instance (``allOf``/``anyOf``/``oneOf``/``not``/``if``/``then``/``else``) (strictTypes);
* every ``required`` name defined in the same schema's ``properties`` (strictRequired);
* a ``prefixItems`` tuple bounded by ``minItems`` and ``maxItems`` (or ``items: false``) (strictTuples).

Generated schemas are made so by ``relavium_reference._model.strict_schema.strict_clean`` when rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from relavium_reference._model.strict_schema import strict_clean

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILES = sorted((ROOT / "schemas").rglob("*.json"))

_KEYWORDS = """$schema $id $ref $defs $anchor $dynamicRef $dynamicAnchor $comment $vocabulary type enum const
    multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern maxItems
    minItems uniqueItems maxContains minContains maxProperties minProperties required dependentRequired
    properties patternProperties additionalProperties propertyNames items prefixItems contains allOf anyOf
    oneOf not if then else dependentSchemas unevaluatedItems unevaluatedProperties format contentEncoding
    contentMediaType contentSchema title description default deprecated readOnly writeOnly examples"""
_BY_TYPE = {
    "number": "maximum minimum exclusiveMaximum exclusiveMinimum multipleOf",
    "string": "maxLength minLength pattern contentEncoding contentMediaType",
    "array": "items prefixItems contains maxItems minItems uniqueItems maxContains minContains "
    "unevaluatedItems",
    "object": "properties patternProperties additionalProperties propertyNames required dependentRequired "
    "dependentSchemas maxProperties minProperties unevaluatedProperties",
}
KNOWN = frozenset(_KEYWORDS.split())
TYPE_OF = {keyword: kind for kind, words in _BY_TYPE.items() for keyword in words.split()}
ONE = {"additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else"}
ONE |= {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}
LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
SAME_INSTANCE = {"allOf", "anyOf", "oneOf", "not", "if", "then", "else"}


def _types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    types = set(declared if isinstance(declared, list) else [declared] if declared else [])
    return types | ({"number"} if "integer" in types else set())


def strict_problems(schema: Any, where: str = "#", inherited: frozenset[str] = frozenset()) -> list[str]:
    if not isinstance(schema, dict):
        return []
    out = [f"{where}: unknown keyword {key}" for key in schema if key not in KNOWN]
    if isinstance(schema.get("type"), list) and len(schema["type"]) > 1:
        out.append(f"{where}: union type {schema['type']}")
    types = _types(schema) or set(inherited)
    out += [
        f"{where}: {key} without type {TYPE_OF[key]}"
        for key in schema
        if TYPE_OF.get(key, "") not in types | {""}
    ]
    defined = schema.get("properties", {})
    out += [
        f"{where}: required {name} not in properties"
        for name in schema.get("required", [])
        if name not in defined
    ]
    if "prefixItems" in schema:
        size = len(schema["prefixItems"])
        if schema.get("minItems") != size or not (
            schema.get("items") is False or schema.get("maxItems") == size
        ):
            out.append(f"{where}: a tuple of {size} without minItems and maxItems {size}")
    for key, value in schema.items():
        passed = frozenset(types) if key in SAME_INSTANCE else frozenset()
        if key in ONE:
            out += strict_problems(value, f"{where}/{key}", passed)
        elif key in MAPS and isinstance(value, dict):
            for name, sub in value.items():
                out += strict_problems(sub, f"{where}/{key}/{name}")
        elif key in LISTS and isinstance(value, list):
            for index, sub in enumerate(value):
                out += strict_problems(sub, f"{where}/{key}/{index}", passed)
    return out


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: str(p.relative_to(ROOT / "schemas")))
def test_every_schema_is_strict_clean(path: Path) -> None:
    assert strict_problems(json.loads(path.read_text(encoding="utf-8"))) == []


def test_the_strict_check_bites() -> None:
    assert strict_problems({"type": "object", "oneOf": [], "discriminator": {"propertyName": "t"}}) == [
        "#: unknown keyword discriminator"
    ]
    assert strict_problems({"type": ["string", "null"]}) == ["#: union type ['string', 'null']"]
    assert strict_problems({"properties": {"a": {"maxItems": 1}}}) == [
        "#: properties without type object",
        "#/properties/a: maxItems without type array",
    ]
    assert strict_problems({"type": "object", "then": {"required": ["a"]}}) == [
        "#/then: required a not in properties"
    ]
    assert strict_problems({"type": "array", "prefixItems": [{}]}) == [
        "#: a tuple of 1 without minItems and maxItems 1"
    ]
    # the type of an enclosing schema of the same instance counts; one of another instance does not
    assert strict_problems({"type": "object", "allOf": [{"properties": {}}]}) == []
    assert strict_problems({"type": "object", "properties": {"a": {"minLength": 1}}}) == [
        "#/properties/a: minLength without type string"
    ]


def test_strict_clean_keeps_the_meaning() -> None:
    union = {"description": "d", "type": ["string", "null"], "minLength": 2}
    cleaned = strict_clean(union)
    assert cleaned == {"description": "d", "anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]}
    for value, ok in [("ab", True), (None, True), ("a", False), (3, False)]:
        assert Draft202012Validator(union).is_valid(value) is ok
        assert Draft202012Validator(cleaned).is_valid(value) is ok
    tagged = {"oneOf": [{"$ref": "#/$defs/a"}], "discriminator": {"propertyName": "t"}, "$defs": {"a": {}}}
    assert strict_clean(tagged) == {"oneOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {}}}
    # a property that happens to be named like a keyword is data, not a keyword
    named = {"type": "object", "properties": {"discriminator": {"type": "string"}}}
    assert strict_clean(named) == named
