"""Generated JSON Schemas made acceptable to strict validators (Ajv's default strict mode), same meaning.

Pure: a function from schema data to schema data.  Every generated schema passes through it when it is
rendered (``relavium_reference._schemas.render``, the workflow schema's ``render_schema``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["strict_clean"]

# Keywords whose value is one schema, a map of schemas, or a list of schemas (the rest are not walked).
_ONE_SCHEMA = {"additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else"}
_ONE_SCHEMA |= {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
# Annotations that stay on the outer schema when a union type is split into branches.
_ANNOTATIONS = {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
_ANNOTATIONS.add("$comment")


def strict_clean(schema: Any) -> Any:
    """``schema`` as strict validators (Ajv's default strict mode) accept it, with the same meaning.

    * ``discriminator`` (an OpenAPI keyword pydantic adds to tagged unions) is dropped: the ``oneOf`` it
      annotates validates the same without it.
    * A union ``type`` (``["string", "null"]``) becomes an ``anyOf`` of one branch per type, each with the
      keywords that apply to its type.
    """
    if isinstance(schema, list):
        return [strict_clean(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "discriminator":
            continue
        if key in _ONE_SCHEMA or key in _SCHEMA_LISTS:
            out[key] = strict_clean(value)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strict_clean(sub) for name, sub in value.items()}
        else:
            out[key] = value
    types = out.get("type")
    if isinstance(types, list) and len(types) > 1 and "anyOf" not in out:
        outer = {key: value for key, value in out.items() if key in _ANNOTATIONS}
        inner = {key: value for key, value in out.items() if key not in _ANNOTATIONS and key != "type"}
        outer["anyOf"] = [{"type": kind, **_applicable(inner, kind)} for kind in types]
        return outer
    return out


_TYPE_KEYWORDS = {
    "number": {"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"},
    "string": {"maxLength", "minLength", "pattern", "format", "contentEncoding", "contentMediaType"},
    "array": {"items", "prefixItems", "contains", "maxItems", "minItems", "uniqueItems", "maxContains"}
    | {"minContains", "unevaluatedItems"},
    "object": {"properties", "patternProperties", "additionalProperties", "propertyNames", "required"}
    | {"dependentRequired", "dependentSchemas", "maxProperties", "minProperties", "unevaluatedProperties"},
}
_TYPED = set().union(*_TYPE_KEYWORDS.values())


def _applicable(keywords: dict[str, Any], kind: str) -> dict[str, Any]:
    mine = _TYPE_KEYWORDS.get("number" if kind == "integer" else kind, set())
    return {key: value for key, value in keywords.items() if key not in _TYPED or key in mine}
