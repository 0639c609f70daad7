"""The compliant alternatives are what they claim: another writer, byte-stable under its own round trip."""

from __future__ import annotations

import asyncio
from typing import Any

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._data import parse_yaml
from relavium_conformance._judge.export_text import text_property_differences
from relavium_conformance._report.results import CaseStatus, FailureKind, RunResult
from relavium_conformance._run.runner import run_cases
from relavium_conformance._selftest.compliant import own_yaml
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.adapters import InProcessAdapter

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


# --- another exact form where a shape entry fixes one (compliant_shapes.py) -------------------------------


def test_the_own_overflow_wording_has_the_property_and_another_text() -> None:
    from relavium_conformance._judge.matching import overflow_message_problems
    from relavium_conformance._selftest.compliant_shapes import _reworded

    known = _reworded("context window exceeded for model model-b (200000 tokens)")
    unknown = _reworded("context window exceeded for model model-a (window size unknown); tools already ran")
    assert "exceeded" not in known
    assert "exceeded" not in unknown
    assert overflow_message_problems(known, "model-b", 200000, False) == []
    assert overflow_message_problems(unknown, "model-a", None, True) == []


def test_the_request_edits_keep_the_texts() -> None:
    from relavium_conformance._selftest.compliant_shapes import _join_parts

    wrapped = "<earlier-conversation-summary>\nS1\n</earlier-conversation-summary>"
    request: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": wrapped}, {"type": "text", "text": "q3"}]}
        ]
    }
    _join_parts(request)
    assert request["messages"][0]["content"] == [{"type": "text", "text": wrapped + "\n\nq3"}]


class _OverflowWithoutModel(WireVariant):
    """A broken wording: the model is never named (AS-OVF-003)."""

    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        error = event.get("error")
        if isinstance(error, dict) and error.get("code") == "context_overflow":
            error["message"] = "the context window was exceeded"
        return event

    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        error = result.get("error") if isinstance(result, dict) else None
        if isinstance(error, dict) and error.get("code") == "context_overflow":
            error["message"] = "the context window was exceeded"
        return result


def _overflow_run(name: str, factory: Any) -> RunResult:
    cases = [c for c in load_cases() if c.id.startswith("overflow/overflow-")]
    assert cases
    return asyncio.run(run_cases(InProcessAdapter(name, factory), cases, timeout=15.0, snapshots=False)).run


def test_another_wording_passes_with_notes_and_a_wording_without_the_model_fails_the_spec() -> None:
    from relavium_conformance._selftest.compliant_shapes import OwnOverflowWording

    good = _overflow_run("own-wording", OwnOverflowWording)
    assert all(c.status is CaseStatus.PASSED for c in good.cases), [c.differences for c in good.cases]
    assert all(any(w.startswith("kit-choice note [KD-OVF-2]") for w in c.warnings) for c in good.cases)
    broken = _overflow_run("no-model", _OverflowWithoutModel)
    assert all(c.status is CaseStatus.FAILED for c in broken.cases)
    # a step resting on KD-OVF-1 (is the payload an official overflow at all) marks its whole result
    unmarked = [c for c in broken.cases if "names-the-attempted-model" not in c.id]
    assert unmarked
    assert all(c.failure_kind is FailureKind.SPEC for c in unmarked)
