"""Real diffs on broken implementations: missing and extra list items, unified text diffs, the refused field
named first; and the case's id reaching the implementation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from relavium_conformance._corpus.cases import AnyCase
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._judge.matching import match
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._report.results import CaseResult, CaseStatus, DifferenceForm, RunResult
from relavium_conformance._report.wording import difference_lines
from relavium_conformance._run.runner import run_cases
from relavium_conformance._selftest.breaks import broken_by_name
from relavium_conformance._wire.adapters import InProcessAdapter
from relavium_conformance._wire.protocol import Callback


def _run(factory: Any, cases: list[AnyCase]) -> RunResult:
    return asyncio.run(run_cases(InProcessAdapter("test", factory), cases, snapshots=False)).run


def _cases(*ids: str) -> list[AnyCase]:
    by_id = {case.id: case for case in load_cases()}
    return [by_id[case_id] for case_id in ids]


def _failed(run: RunResult, case_id: str) -> CaseResult:
    case = next(c for c in run.cases if c.id == case_id)
    assert case.status is CaseStatus.FAILED, case
    return case


# --- the matcher itself --------------------------------------------------------------------------------


def test_a_list_diff_names_missing_extra_and_changed_items() -> None:
    differences = match(["a", "b", "c", "d"], ["a", "x", "c", "e", "f"], "list")
    summary, *items = differences
    assert summary.form is DifferenceForm.LENGTH
    assert summary.message.startswith("expected 4 items, got 5")
    by_form = {(d.form, d.path): d for d in items}
    assert by_form[(DifferenceForm.VALUE, "list[1]")].actual == "x"  # b -> x, paired in its gap
    assert by_form[(DifferenceForm.VALUE, "list[3]")].actual == "e"  # d -> e
    assert by_form[(DifferenceForm.EXTRA, "list[4]")].actual == "f"
    assert len(items) == 3


def test_an_empty_actual_list_lists_every_missing_item_whole() -> None:
    long = {"text": "x" * 500}
    summary, *items = match([long, {"k": 1}], [], "rows")
    assert "2 missing" in summary.message
    assert [d.form for d in items] == [DifferenceForm.MISSING, DifferenceForm.MISSING]
    assert items[0].expected == long  # whole, not a cut string of JSON


def test_multi_line_texts_get_a_unified_diff() -> None:
    (difference,) = match({"y": "a: 1\nb: 2\nc: 3\n"}, {"y": "a: 1\nb: 9\nc: 3\n"})
    assert difference.diff is not None
    assert difference.diff.splitlines()[:2] == ["--- expected", "+++ actual"]
    assert "-b: 2" in difference.diff
    assert "+b: 9" in difference.diff
    assert difference.expected == "a: 1\nb: 2\nc: 3\n"


def test_display_shortens_visibly_but_the_value_stays_whole() -> None:
    (difference,) = match({"t": "short"}, {"t": "y" * 1000})
    assert difference.actual == "y" * 1000
    (line,) = difference_lines(difference)
    assert "(+842 characters; the whole value is in results.json)" in line


# --- broken implementations ----------------------------------------------------------------------------


def test_extra_events_of_a_broken_implementation_are_named_item_by_item() -> None:
    broken = broken_by_name("idle-abort-emits")
    run = _run(broken.factory(), _cases("lifecycle/abort-idle-noop"))
    case = _failed(run, "lifecycle/abort-idle-noop")
    extra = [
        d for d in case.differences if d.form is DifferenceForm.EXTRA and d.path.startswith("event_types")
    ]
    assert [d.actual for d in extra] == ["session:turn_completed", "session:turn_completed"]
    assert "2 extra" in case.differences[0].message


def test_a_dropped_export_node_is_named_missing_and_its_merged_text_diffed() -> None:
    broken = broken_by_name("export-drops-empty-final-turn")
    run = _run(broken.factory(), _cases("vectors/export/turns"))
    case = _failed(run, "vectors/export/turns")
    missing = [d for d in case.differences if d.form is DifferenceForm.MISSING and ".nodes[" in d.path]
    assert missing
    assert missing[0].expected["prompt_template"] == "second"
    merged = next(d for d in case.differences if d.path.endswith(".nodes[1].prompt_template"))
    assert merged.diff is not None
    assert "+second" in merged.diff


def _prompt_editing_factory(callback: Callback) -> ReferenceImplementation:
    """The reference engine, but a multi-line prompt of the exported document loses its last line."""

    class Editing(ReferenceImplementation):
        async def on_pure_export_workflow(self, params: Any) -> Any:
            answer = await super().on_pure_export_workflow(params)
            for node in answer["document"]["workflow"]["nodes"]:
                prompt = node.get("prompt_template")
                if isinstance(prompt, str) and "\n" in prompt:
                    node["prompt_template"] = prompt.rsplit("\n", 1)[0] + "\nWhat is right?"
            return answer

    return Editing(callback, name="prompt-editing")


def test_a_changed_multi_line_text_shows_a_unified_diff() -> None:
    run = _run(_prompt_editing_factory, _cases("vectors/export/turns"))
    case = _failed(run, "vectors/export/turns")
    texts = [d for d in case.differences if d.diff is not None]
    assert texts
    assert texts[0].diff.startswith("--- expected\n+++ actual\n@@")  # type: ignore[union-attr]
    assert "-What is wrong?" in texts[0].diff  # type: ignore[operator]
    assert "+What is right?" in texts[0].diff  # type: ignore[operator]
    assert isinstance(texts[0].expected, str)
    assert isinstance(texts[0].actual, str)


def _renaming_factory(callback: Callback) -> ReferenceImplementation:
    """The reference engine, but the user row of every committed turn carries ``contnet`` for ``content``."""

    async def renaming(method: str, params: dict[str, Any]) -> Any:
        if method == "host.commitTurn":
            turn = dict(params["turn"])
            user = dict(turn["user"])
            user["contnet"] = user.pop("content")
            params = {**params, "turn": {**turn, "user": user}}
        return await callback(method, params)

    return ReferenceImplementation(renaming)


def test_a_refused_commit_names_the_renamed_field_first() -> None:
    run = _run(_renaming_factory, _cases("persistence/completed-turn-rows"))
    case = _failed(run, "persistence/completed-turn-rows")
    root = case.differences[0]  # the root cause comes before the symptoms it explains
    assert root.path == "commits[0].user.contnet"
    assert "unknown field: user.contnet" in root.message
    assert "required field missing: user.content" in root.message
    assert case.reason is not None
    assert "contnet" in case.reason
    assert any(d.path == "rows" for d in case.differences[1:])  # the downstream symptom is still listed


# --- the case reaches the implementation ---------------------------------------------------------------


def test_session_create_carries_the_case_id_and_title() -> None:
    seen: list[dict[str, Any]] = []

    class Recording(ReferenceImplementation):
        async def handle(self, method: str, params: dict[str, Any]) -> Any:
            if method == "session.create":
                seen.append(params.get("case"))  # type: ignore[arg-type]
            return await super().handle(method, params)

    cases = _cases("lifecycle/abort-idle-noop")
    run = _run(Recording, cases)
    assert run.cases[0].status is CaseStatus.PASSED
    assert seen == [{"id": "lifecycle/abort-idle-noop", "title": cases[0].title}]


@pytest.mark.parametrize("value", [{"id": ""}, {"title": "no id"}, {"id": "a/b", "extra": 1}])
def test_the_case_label_is_strict(value: dict[str, Any]) -> None:
    from relavium_conformance._wire.protocol_messages import CaseLabel

    with pytest.raises(ValueError, match="validation error"):
        CaseLabel.model_validate(value)
