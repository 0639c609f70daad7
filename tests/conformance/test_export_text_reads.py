"""The export text's two reads share one scan: they must say what the two separate reads say.

``read_yaml_text`` must return (or raise) what the kit's one loader, ``parse_yaml``, does; the text
properties must be the findings of a walk over a separately composed node tree.  Both are checked on
the corpus's export texts, on another port's writer's texts and on generated texts (block YAML from
data, and fragments that are not YAML at all).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, ScalarNode

from relavium_conformance._corpus.cases import load_cases
from relavium_conformance._corpus.vectors import ExportVector, VectorCase
from relavium_conformance._data import parse_yaml
from relavium_conformance._report.results import Difference
from relavium_conformance._run.export_text import (
    YAML11_LOOKALIKE,
    _read,
    _utf16,
    _walk,
    read_yaml_text,
    text_property_differences,
)
from relavium_conformance._selftest.compliant import own_yaml


def _plain_properties(text: str, path: str) -> list[Difference]:
    """The text properties as the kit read them before the scan was shared: a compose of their own."""
    try:
        root = YAML(typ="safe", pure=True).compose(text)
    except Exception as exc:
        return [Difference(path=path, message=f"the YAML text cannot be read: {type(exc).__name__}")]
    if root is None:
        return [Difference(path=path, message="the YAML text holds no document")]
    out = []
    for where, node in _walk(root, path):
        if isinstance(node, MappingNode):
            keys = [str(key.value) for key, _value in node.value]
            if keys != sorted(keys, key=_utf16):
                out.append(
                    Difference(
                        path=where,
                        message="mapping keys are not sorted (KD-EXP-6)",
                        expected=sorted(keys, key=_utf16),
                        actual=keys,
                        kit_defined=("KD-EXP-6",),
                    )
                )
        elif (
            isinstance(node, ScalarNode)
            and node.style is None
            and node.tag == "tag:yaml.org,2002:str"
            and YAML11_LOOKALIKE.match(node.value)
        ):
            out.append(
                Difference(
                    path=where,
                    message="a string a YAML 1.1 reader takes for another type is not quoted (KD-EXP-6)",
                    actual=node.value,
                    kit_defined=("KD-EXP-6",),
                )
            )
    return out


def _outcome(read: Any, text: str) -> tuple[str, Any]:
    try:
        return "data", read(text)
    except Exception as exc:
        return "raised", (type(exc).__name__, str(exc))


def _agrees(text: str) -> None:
    _read.cache_clear()
    assert _outcome(read_yaml_text, text) == _outcome(parse_yaml, text)
    assert text_property_differences(text, "t.yaml") == _plain_properties(text, "t.yaml")
    # asked again, from the memo, in the other order
    _read.cache_clear()
    assert text_property_differences(text, "u.yaml") == _plain_properties(text, "u.yaml")
    assert _outcome(read_yaml_text, text) == _outcome(parse_yaml, text)


def _export_vectors() -> list[ExportVector]:
    return [
        v
        for case in load_cases()
        if isinstance(case, VectorCase)
        for v in case.vectors
        if isinstance(v, ExportVector)
    ]


def test_the_corpus_export_texts_read_as_before() -> None:
    vectors = _export_vectors()
    assert vectors
    for vector in vectors:
        if vector.expected_yaml is not None:
            _agrees(vector.expected_yaml)
        if vector.expected_document is not None:
            _agrees(own_yaml(vector.expected_document))


def test_merge_keys_and_odd_texts_read_as_before() -> None:
    for text in (
        "base: &b {k: 1, yes: on}\nuse:\n  <<: *b\n  z: 2\n  a: 1:20\n",
        "- &a [1, 2]\n- *a\n- ~\n",
        "",
        "# only a comment\n",
        "a: 1\na: 2\n",
        "a: [1\n",
        "--- 1\n--- 2\n",
        "a: !!binary aGk=\n",
        "? [a]\n: b\n",
    ):
        _agrees(text)


_SCALARS = st.one_of(
    st.sampled_from(["yes", "No", "on", "~", "1:20", "0o7", "0b1", ".inf", "2026-01-01", "x", "", "-_"]),
    st.text(alphabet="ab:-#&*!<>|%@ \n'\"{}[],", max_size=6),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("bBa_1é", max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def _ruamel_block(data: Any) -> str:
    import io

    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, out)
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(data=_DATA, writer=st.sampled_from(["ruamel", "own"]))
def test_generated_yaml_reads_as_before(data: Any, writer: str) -> None:
    if writer == "own" and not isinstance(data, dict):
        data = {"root": data}
    _agrees(_ruamel_block(data) if writer == "ruamel" else own_yaml(data))


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab1:-#&*!<>|%@ \n\t'\"{}[],?=~.", max_size=30))
def test_generated_fragments_read_as_before(text: str) -> None:
    _agrees(text)
