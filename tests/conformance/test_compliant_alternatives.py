"""The compliant alternatives are what they claim: another writer, byte-stable under its own round trip."""

from __future__ import annotations

from relavium_conformance._data import parse_yaml
from relavium_conformance._judge.export_text import text_property_differences
from relavium_conformance._selftest.compliant import own_yaml

DOCUMENT = {
    "workflow": {
        "metadata": {"note": "line one\nline two\n", "flag": "yes", "time": "1:20"},
        "nodes": [{"id": "input", "type": "input"}, {"id": "turn-1", "tools": []}],
    },
    "schema_version": "1.0",
}


def test_the_other_writer_round_trips_byte_for_byte_and_has_the_text_properties() -> None:
    text = own_yaml(DOCUMENT)
    assert '"line one\\nline two\\n"' in text  # multi-line strings quoted its own way
    assert parse_yaml(text) == DOCUMENT
    assert own_yaml(parse_yaml(text)) == text
    assert text_property_differences(text, "doc") == []


def test_text_properties_catch_unsorted_keys_and_plain_lookalikes() -> None:
    unsorted = "b: '1'\na: '2'\n"
    plain = "a: yes\nb: '1:20'\nc: 1:20\n"
    assert [d.message for d in text_property_differences(unsorted, "doc")] == [
        "mapping keys are not sorted (KD-EXP-6)"
    ]
    found = text_property_differences(plain, "doc")
    assert [d.path for d in found] == ["doc.a", "doc.c"]
    assert all(d.kit_defined == ("KD-EXP-6",) for d in found)
