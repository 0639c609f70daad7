"""The strict workflow reader screens each YAML event as the composer asks for it: one scan of the text.

The screen (aliases, collection keys, nesting past MAX_DEPTH) used to run over the whole event stream
before a second scan loaded the data.  These tests hold the one-scan reader (KD-EXP-6) to that older
definition: the same texts are refused and the same data is read, the recursive composer never meets
what the screen refuses, and the text is scanned once.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scanner import Scanner

from relavium_reference import InvalidInputError
from relavium_reference._rules import workflow_yaml
from relavium_reference._rules.workflow_yaml import MAX_DEPTH, dump_yaml, ensure_json_data, load_yaml

_REFUSED = "refused"


def _two_scans(text: str) -> Any:
    """The older definition: screen every event of the text, then load it afresh."""
    yaml = YAML(typ="safe", pure=True)
    open_collections: list[list[Any]] = []
    try:
        for event in yaml.parse(text):
            workflow_yaml._screen(open_collections, event)
        reader = YAML(typ="safe", pure=True)
        reader.composer.warn_double_anchors = False  # (as the reader: an anchor named twice is YAML)
        data = reader.load(text)
        ensure_json_data(data)
    except (InvalidInputError, YAMLError, ValueError):
        return _REFUSED
    return data


def _one_scan(text: str) -> Any:
    try:
        return load_yaml(text)
    except InvalidInputError:
        return _REFUSED


def _nested(depth: int, *, flow: bool) -> str:
    if flow:
        return "k: " + "[" * depth + "1" + "]" * depth + "\n"
    lines = [f"{'  ' * level}k{level}:" for level in range(depth)]
    return "\n".join(lines) + " 1\n"


ADVERSARIAL = [
    "a: &x [1]\nb: *x\n",
    "a: &x 1\n",  # an anchor alone holds no alias
    "[&x a, &x b]\n",  # an anchor named twice: YAML, and no alias refers to either
    "&x [&x null",  # the same, then the text breaks off: refused by either order of work
    "- &a [x]\n- *a\n",
    "k: [*undefined]\n",
    "a: &a [1, 1]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n",  # a small alias bomb
    "? [a]\n: 1\n",
    "{[1]: 2}\n",
    "{{a: 1}: 2}\n",
    "? {a: 1}\n: 2\n",
    "[{a: [1, {b: 2}]}]\n",
    "a: 1\n---\nb: *x\n",
    "a: 1\n---\nb: 2\n",
    "",
    "# only a comment\n",
    "k: [unclosed\n",
    "k: 1\nk: 2\n",
    "<<: {a: 1}\nb: 2\n",
    _nested(MAX_DEPTH - 1, flow=True),
    _nested(MAX_DEPTH, flow=True),
    _nested(MAX_DEPTH + 1, flow=True),
    _nested(MAX_DEPTH - 1, flow=False),
    _nested(MAX_DEPTH, flow=False),
    _nested(MAX_DEPTH + 1, flow=False),
]


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_the_one_scan_reader_agrees_with_screening_first(text: str) -> None:
    assert _one_scan(text) == _two_scans(text)


KEYS = st.sampled_from(["a", "b", "k", "<<", "1", "true", "[x]", "{y: 1}"])
FRAGMENTS = st.sampled_from(
    ["&x ", "*x", "[", "]", "{", "}", "? ", ": ", "- ", "\n", "  ", ", ", "1", "a", "'q'", "---\n", "!!str "]
)
DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DATA, st.lists(st.tuples(st.integers(min_value=0), FRAGMENTS), max_size=4))
def test_texts_with_spliced_fragments_read_the_same_either_way(data: Any, splices: list[Any]) -> None:
    text = dump_yaml(data)
    for where, fragment in splices:
        at = where % (len(text) + 1)
        text = text[:at] + fragment + text[at:]
    assert _one_scan(text) == _two_scans(text)


def test_the_reader_scans_the_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fetches: list[int] = []
    original = Scanner.fetch_more_tokens

    def counting(self: Scanner) -> None:
        fetches.append(1)
        original(self)

    monkeypatch.setattr(Scanner, "fetch_more_tokens", counting)
    data = {"a": [1, {"b": "c"}], "d": None, "e": ["x", "y", {"f": [True, 2.5]}]}
    text = dump_yaml(data)
    list(YAML(typ="safe", pure=True).parse(text))  # one scan of the text: the floor
    one_scan = len(fetches)
    fetches.clear()
    assert load_yaml(text) == data
    assert one_scan > 10
    assert len(fetches) == one_scan


@pytest.mark.parametrize("flow", [True, False])
def test_nesting_far_past_the_limit_is_refused_before_the_composer_recurses(flow: bool) -> None:
    with pytest.raises(InvalidInputError, match="nested too deeply"):
        load_yaml(_nested(20_000, flow=flow))


def test_an_alias_is_refused_before_it_is_spelt_out() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
    )
    with pytest.raises(InvalidInputError, match="aliases"):
        load_yaml(bomb)
