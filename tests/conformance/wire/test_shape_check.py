"""The kit's shape judge takes two short cuts (a ``oneOf`` that tries the branch a value's ``type`` names,
and a per-process memo of answers); both must give jsonschema's own verdict and first error, always."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from relavium_conformance._data import fixtures_dir, read_yaml
from relavium_conformance._wire import model
from relavium_conformance._wire.model import shape_problem, shape_validator

SHAPES = ("stream-chunk", "session-message")  # the shapes whose oneOf lists the short cut serves


def _typed_dicts(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("type"), str) or "role" in node:
            yield node
        for item in node.values():
            yield from _typed_dicts(item)
    elif isinstance(node, list):
        for item in node:
            yield from _typed_dicts(item)


def _mutants(value: dict[str, Any]) -> Iterator[Any]:
    yield value
    yield {**value, "unexpected": 1}
    for key in list(value)[:3]:
        yield {k: v for k, v in value.items() if k != key}
    if "type" in value:
        yield {**value, "type": "no_such_type"}
        yield {**value, "type": 7}
    if isinstance(value.get("content"), list) and value["content"]:
        broken = copy.deepcopy(value)
        broken["content"][0] = {"type": "text"}
        yield broken
    yield [value]


def _values() -> list[Any]:
    found: dict[str, Any] = {}
    for path in sorted(fixtures_dir().rglob("*.yaml")):
        for value in _typed_dicts(read_yaml(path)):
            found.setdefault(repr(value), value)
    return [mutant for value in found.values() for mutant in _mutants(value)]


VALUES = _values()


def _plain_problem(name: str, value: Any) -> str | None:
    plain = Draft202012Validator({"$ref": model._shape_id(name)}, registry=model.schema_registry())
    error = next(iter(plain.iter_errors(value)), None)
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top)"
    return f"{where}: breaks the {name} schema ({error.validator})"


@pytest.mark.parametrize("name", SHAPES)
def test_the_fast_judge_agrees_with_jsonschema_on_every_corpus_value_and_its_mutants(name: str) -> None:
    assert len(VALUES) > 1000
    verdicts = set()
    for value in VALUES:
        model._SHAPE_MEMO.clear()
        expected = _plain_problem(name, value)
        assert shape_problem(name, value) == expected, value
        assert shape_problem(name, value) == expected, value  # the memo's answer
        verdicts.add(expected is None)
    assert verdicts == {True, False}  # both outcomes were exercised


def test_the_short_cut_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream-chunk and message-part ``oneOf`` lists are known by their ``type`` const, and a valid
    chunk is judged without trying the other branches."""
    model.shape_validator("stream-chunk")
    tables = [sorted(table) for _, table in model._DISCRIMINATED.values()]
    assert any("text_delta" in table and "stop" in table for table in tables)
    assert any("tool_call" in table and "text" in table for table in tables)
    tried: list[int] = []
    plain_one_of = model._plain_one_of()

    def counting(*args: Any) -> Any:
        tried.append(1)
        return plain_one_of(*args)

    monkeypatch.setattr(model, "_plain_one_of", lambda: counting)
    chunks = shape_validator("stream-chunk")
    assert next(chunks.iter_errors({"type": "text_delta", "text": "hi"}), None) is None
    assert tried == []
    assert next(chunks.iter_errors({"type": "text_delta"}), None) is not None
    assert tried == [1]  # a refusal is jsonschema's own, first error and all


def test_the_memo_tells_apart_what_json_schema_tells_apart() -> None:
    assert model._plain_key({"a": 1}) != model._plain_key({"a": 1.0}) != model._plain_key({"a": True})
    assert model._plain_key({"a": [1]}) is not None
    assert model._plain_key({"a": (1,)}) is None  # a tuple is not a JSON array to jsonschema: no memo
    assert model._plain_key({1: "a"}) is None
    assert model._plain_key({"a": 1, "b": 2}) != model._plain_key({"b": 2, "a": 1})  # order kept
