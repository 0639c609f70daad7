"""The JUnit XML the runner writes validates against schemas/junit.xsd (and a broken one does not)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from test_reports import mixed_run

from relavium_conformance._report.writers import junit_tree, write_junit

SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parents[2] / "schemas" / "junit.xsd")


def test_a_mixed_run_validates(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(mixed_run(), path)
    SCHEMA.validate(str(path))


@pytest.mark.parametrize(
    "damage",
    [
        lambda root: root.attrib.pop("tests"),
        lambda root: root.find("testsuite").find("testcase").attrib.pop("name"),  # type: ignore[union-attr]
        lambda root: root.find("testsuite").append(ET.Element("surprise")),  # type: ignore[union-attr]
        lambda root: root.set("failures", "-1"),
    ],
)
def test_a_damaged_document_does_not_validate(damage) -> None:  # type: ignore[no-untyped-def]
    root = junit_tree(mixed_run())
    damage(root)
    assert not SCHEMA.is_valid(ET.tostring(root, encoding="unicode"))
