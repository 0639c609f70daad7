"""The JUnit XML validates against Jenkins' junit-10.xsd (vendored) and reads right in junitparser."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest
import xmlschema
from test_reports import mixed_run

from relavium_conformance._report.writers import junit_tree, write_junit

SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parents[3] / "schemas" / "junit-10.xsd")


def test_the_vendored_schema_carries_its_licence() -> None:
    text = (Path(__file__).resolve().parents[3] / "schemas" / "junit-10.xsd").read_text(encoding="utf-8")
    assert "The MIT License (MIT)" in text
    assert "Copyright (c) 2014, Gregory Boissinot" in text


def test_a_mixed_run_validates(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(mixed_run(), path)
    SCHEMA.validate(str(path))


@pytest.mark.parametrize(
    "damage",
    [
        lambda root: root.find("testsuite").attrib.pop("tests"),  # type: ignore[union-attr]
        lambda root: root.find("testsuite").find("testcase").attrib.pop("name"),  # type: ignore[union-attr]
        lambda root: root.find("testsuite").append(ET.Element("surprise")),  # type: ignore[union-attr]
        lambda root: root.set("skipped", "1"),  # the old writer's mistake: no skipped count on the root
        lambda root: (
            root.find("testsuite")
            .find("testcase")
            .append(  # type: ignore[union-attr]
                ET.Element("properties")  # nor properties on a test case
            )
        ),
        lambda root: root.set("time", "1.2s"),
    ],
)
def test_a_damaged_document_does_not_validate(damage) -> None:  # type: ignore[no-untyped-def]
    root = junit_tree(mixed_run())
    assert SCHEMA.is_valid(ET.tostring(root, encoding="unicode"))
    damage(root)
    assert not SCHEMA.is_valid(ET.tostring(root, encoding="unicode"))


def test_junitparser_reads_every_case_with_its_result(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    run = mixed_run()
    write_junit(run, path)
    xml = junitparser.JUnitXml.fromfile(str(path))
    cases = {case.name: case for suite in xml for case in suite}
    assert set(cases) == {case.id for case in run.cases}
    assert cases["lifecycle/start-emits-started"].is_passed
    failed = cases["lifecycle/abort-idle-is-noop"]
    assert [type(r).__name__ for r in failed.result] == ["Failure"]
    assert "AS-LIFE-002" in (failed.result[0].message or "")
    errored = cases["turns/tool-loop"]
    assert [type(r).__name__ for r in errored.result] == ["Error"]
    assert "panic: x" in (errored.system_err or "")  # the stderr tail, where readers look for it
    assert "panic" not in (errored.result[0].text or "")
    assert cases["turns/compaction-ack"].is_skipped
    suites = {suite.name: suite for suite in xml}
    assert suites["turns"].tests == 3
    assert suites["turns"].errors == 1
    assert suites["turns"].skipped == 1
    assert suites["lifecycle"].failures == 1
