"""The corpus reads alike in other languages' YAML readers: js-yaml 5 (Node) refuses a flow collection
whose closing bracket stands on its own line no deeper than the key that opened it (YAML wants flow
content inside a block mapping indented past its key); two cases of the turn-cap area did that."""

from __future__ import annotations

import re

from relavium_conformance._data import fixtures_dir

_OPENS = re.compile(r"^(?P<indent> *)(?:- )?[^#\s][^#]*:\s*[\[{]\s*(?:#.*)?$")
_CLOSES = re.compile(r"^(?P<indent> *)[\]}]\s*,?\s*$")


def _misplaced_closers(text: str) -> list[int]:
    """Line numbers of a lone ``]`` or ``}`` indented no deeper than the key whose flow it closes."""
    opened: list[int] = []
    bad: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if (match := _OPENS.match(line)) is not None:
            opened.append(len(match["indent"]))
        elif (match := _CLOSES.match(line)) is not None and opened:
            key_indent = opened.pop()
            if len(match["indent"]) <= key_indent and key_indent > 0:
                bad.append(number)
    return bad


def test_no_flow_collection_closes_at_its_keys_indentation() -> None:
    found = {
        path.relative_to(fixtures_dir()).as_posix(): lines
        for path in sorted(fixtures_dir().rglob("*.yaml"))
        if (lines := _misplaced_closers(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_finds_what_js_yaml_refuses() -> None:
    refused = "expect:\n  events:\n    completed: [\n      a, b,\n    ]\n"
    accepted = "expect:\n  events:\n    completed: [\n      a, b,\n      ]\nsteps: [\n  a,\n]\n"
    assert _misplaced_closers(refused) == [5]
    assert _misplaced_closers(accepted) == []
