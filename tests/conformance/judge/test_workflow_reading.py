"""The kit reads an exported workflow with its own reader and the shipped schema (``_judge/workflow.py``).

Its verdict (refused or not) must be the engine's strict reader's on every text the vectors hold and on
one-place edits of their documents, each of which breaks one rule; the engine is only the witness here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._corpus.vectors import ExportVector, VectorCase
from relavium_conformance._judge.workflow import workflow_refusal
from relavium_reference import InvalidInputError
from relavium_reference._rules.workflow_yaml import ruamel_dump
from relavium_reference.export import parse_workflow

Edit = Callable[[dict[str, Any]], None]


def _documents() -> list[dict[str, Any]]:
    return [
        vector.expected_document
        for case in load_cases()
        if isinstance(case, VectorCase) and case.suite == "export"
        for vector in case.vectors
        if isinstance(vector, ExportVector) and vector.expected_document
    ]


def _messages(document: dict[str, Any]) -> list[dict[str, Any]]:
    export = (document["workflow"].get("metadata") or {}).get("relaviumExport") or {}
    messages: list[dict[str, Any]] = export.get("messages") or []
    return messages


def _swap_first_two(document: dict[str, Any]) -> None:
    messages = _messages(document)
    messages[0], messages[1] = messages[1], messages[0]


EDITS: dict[str, Edit] = {
    "a node id twice": lambda d: d["workflow"]["nodes"].append(dict(d["workflow"]["nodes"][0])),
    "an unknown field": lambda d: d["workflow"].update(extra=1),
    "a number for a string": lambda d: d.update(schema_version=1),
    "messages out of order": _swap_first_two,
    "a message of another session": lambda d: _messages(d)[0].update(sessionId="other"),
    "a part its role may not hold": lambda d: _messages(d)[0].update(role="tool"),
    "compaction on a user row": lambda d: _messages(d)[0].update(compaction={"droppedThroughSequence": 0}),
}

ON_MESSAGES = {"messages out of order", "a message of another session", "a part its role may not hold"}
ON_MESSAGES |= {"compaction on a user row"}


def _texts() -> Iterator[str]:
    for document in _documents():
        yield ruamel_dump(document)
        for name, edit in EDITS.items():
            if name in ON_MESSAGES and len(_messages(document)) < 2:
                continue
            edited = copy.deepcopy(document)
            edit(edited)
            yield ruamel_dump(edited)


ODD_TEXTS = [
    "a: &x 1\nb: *x\n",  # an alias
    "[",  # not well-formed
    "a: 2024-01-01\n",  # a timestamp: not JSON data
    "a: .nan\n",
    "{1: 2}\n",  # a key that is not a string
    "[" * 100 + "]" * 100,  # too deep
    "",
    "a: !!binary aGVsbG8=\n",
    "a: 1\na: 2\n",  # a duplicate key
]


def _engine_refuses(text: str) -> bool:
    try:
        parse_workflow(text)
    except InvalidInputError:
        return True
    return False


def test_the_kit_refuses_exactly_what_the_strict_reader_refuses() -> None:
    texts = [*_texts(), *ODD_TEXTS]
    assert len(texts) > 50
    disagreements = [t[:60] for t in texts if (workflow_refusal(t) is not None) != _engine_refuses(t)]
    assert not disagreements
    kept = [workflow_refusal(ruamel_dump(d)) is None for d in _documents()]
    assert kept.count(False) == 1  # the vector whose text must be refused (a repeated plan pair)


@pytest.mark.parametrize("name", sorted(EDITS))
def test_each_edit_is_refused_with_its_reason(name: str) -> None:
    document = next(d for d in _documents() if len(_messages(d)) >= 2)
    edited = copy.deepcopy(document)
    EDITS[name](edited)
    assert workflow_refusal(ruamel_dump(document)) is None
    assert workflow_refusal(ruamel_dump(edited)) is not None


def test_the_judge_does_not_import_the_engine() -> None:
    import ast
    from pathlib import Path

    import relavium_conformance._judge as judge_room

    for path in Path(judge_room.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        ] + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [n for n in names if n.startswith("relavium_reference")], path.name
