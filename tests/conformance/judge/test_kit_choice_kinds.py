"""Binding and shape kit choices: every KD entry says which, and every case's labels agree with it.

A shape entry (the kit's own exact wording or layout where a clause states a property) may only be named
inside a ``{$shape: ...}`` expectation, whose mismatch is a note; a whole case, a step or a per-expectation
mark naming it would turn the case's property checks into notes too, so no case may.  The exact texts of
the shape entries may appear in a case's expectations only inside such a ``$shape``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._corpus.cases import Case, CaseExpect
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._judge.judge import case_kit_choices
from relavium_conformance._judge.kit_choices import SHAPE_CHOICES, split_notes
from relavium_conformance._judge.matching import match, overflow_message_problems
from relavium_conformance._report.results import Difference

ROOT = Path(__file__).resolve().parents[3]
ENTRY = re.compile(r"^## (KD-[A-Z]+-\d+):.*?(?=^## |\Z)", re.M | re.S)
KIND = re.compile(r"^Kind: (binding|shape): (\S.*?)^Clauses:", re.M | re.S)

#: the exact texts each shape entry fixes: they may appear in an expectation only inside a $shape
SHAPE_TEXTS = {
    "KD-OVF-2": ("context window exceeded for model", "tools already ran"),
    "KD-COMP-3": ("earlier-conversation-summary", "characters omitted"),
    "KD-COMP-11": ("User: ",),
    "KD-MSG-2": (
        "content part not allowed for this message role",
        "a tool message holds exactly one tool result",
        "raw tool arguments are not allowed",
        "raw tool results are not allowed",
    ),
}


def _entries() -> dict[str, str]:
    text = (ROOT / "docs" / "kit-defined.md").read_text(encoding="utf-8")
    return {m.group(1): m.group(0) for m in ENTRY.finditer(text) if m.group(1) != "KD-AREA-N"}


def test_every_entry_says_its_kind_and_why() -> None:
    entries = _entries()
    assert len(entries) > 50
    problems = []
    for kd, body in entries.items():
        found = KIND.search(body)
        if found is None:
            problems.append(f"{kd}: no 'Kind: binding|shape: <reason>' line just before its Clauses line")
        elif len(found.group(2).split()) < 5:
            problems.append(f"{kd}: the kind's reason is too short to be one")
    assert problems == []


def test_the_judge_knows_exactly_the_shape_entries() -> None:
    shapes = {kd for kd, body in _entries().items() if (m := KIND.search(body)) and m.group(1) == "shape"}
    assert shapes == SHAPE_CHOICES
    assert set(SHAPE_TEXTS) <= SHAPE_CHOICES


def _cases() -> list[Case]:
    return [c for c in load_cases() if isinstance(c, Case)]


def _expectations(expect: CaseExpect) -> Iterator[CaseExpect]:
    yield expect
    for other in (expect.sessions or {}).values():
        yield from _expectations(other)


def test_no_case_names_a_shape_entry_outside_a_shape_expectation() -> None:
    problems = []
    for case in _cases():
        named = {*case.kit_defined, *case_kit_choices(case)}
        named |= {kd for step in case.steps for kd in step.kit_defined}
        named |= {kd for e in _expectations(case.expect) for marks in e.kit_defined.values() for kd in marks}
        problems += [f"{case.id}: {kd}" for kd in sorted(named & SHAPE_CHOICES)]
    assert problems == []


def _walk(value: Any, inside_shape: bool = False) -> Iterator[tuple[Any, bool]]:
    """Every value of an expectation, with whether it sits inside a $shape."""
    yield value, inside_shape
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, inside_shape or key == "$shape")
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item, inside_shape)


def _stated(case: Case) -> Any:
    steps = [s.model_dump(exclude_defaults=True) for s in case.steps]
    return [case.expect.model_dump(exclude_defaults=True), [s.get("expect") for s in steps], steps]


def test_a_shape_names_a_shape_entry_and_shape_texts_sit_only_in_one() -> None:
    problems = []
    for case in _cases():
        for value, inside in _walk(_stated(case)):
            if isinstance(value, dict) and "$shape" in value:
                kd = value["$shape"].get("kit_defined")
                if kd not in SHAPE_CHOICES:
                    problems.append(f"{case.id}: $shape names {kd}, not a shape entry")
            if isinstance(value, str) and not inside:
                problems += [
                    f"{case.id}: {kd}'s text {text!r} outside a $shape"
                    for kd, texts in SHAPE_TEXTS.items()
                    for text in texts
                    if text in value
                ]
    assert problems == []


def test_every_overflow_message_expectation_checks_the_property() -> None:
    """A case that keeps KD-OVF-2's text as a note checks the stated property beside it."""
    for case in _cases():
        for value, _inside in _walk(_stated(case)):
            if isinstance(value, dict) and set(value) == {"$all"}:
                kinds = {next(iter(item)) for item in value["$all"] if isinstance(item, dict)}
                shapes = [i["$shape"]["kit_defined"] for i in value["$all"] if "$shape" in i]
                if "KD-OVF-2" in shapes:
                    assert "$overflow_message" in kinds, case.id


def test_a_shape_mismatch_is_a_note_and_a_property_mismatch_a_failure() -> None:
    expected = {
        "$all": [
            {"$overflow_message": {"model": "m-1", "window": 8000, "tools_ran": False}},
            {
                "$shape": {
                    "kit_defined": "KD-OVF-2",
                    "is": "context window exceeded for model m-1 (8000 tokens)",
                }
            },
        ]
    }
    other_words = match(expected, "m-1 needs more than its 8,000-token context window", "message")
    failing, notes = split_notes(other_words)
    assert failing == []
    assert len(notes) == 1
    assert notes[0].startswith("kit-choice note [KD-OVF-2]: message:")
    wrong_model = match(expected, "context window exceeded for model m-2 (8000 tokens)", "message")
    failing, notes = split_notes(wrong_model)
    assert [d.kind.value for d in failing] == ["spec"]
    assert len(notes) == 1


def test_a_binding_mark_stays_a_kit_choice_failure() -> None:
    marked = Difference(path="p", message="m", kit_defined=("KD-COMP-2",))
    failing, notes = split_notes([marked])
    assert failing == [marked]
    assert notes == []


@pytest.mark.parametrize(
    ("message", "model", "window", "tools_ran"),
    [
        ("context window exceeded for model model-a (8000 tokens)", "model-a", 8000, False),
        (
            "context window exceeded for model model-a (window size unknown); tools already ran",
            "model-a",
            None,
            True,
        ),
        ("model-b: prompt over its 200,000 token window; no tools were run", "model-b", 200000, False),
        (
            "Model gpt-4o-2024 overflowed (context size unknown) after tools had executed",
            "gpt-4o-2024",
            None,
            True,
        ),
        ("claude-3-5 ran out of room in its 1 048 576-token window", "claude-3-5", 1048576, False),
    ],
)
def test_compliant_overflow_wordings_have_the_property(
    message: str, model: str, window: int | None, tools_ran: bool
) -> None:
    assert overflow_message_problems(message, model, window, tools_ran) == []


@pytest.mark.parametrize(
    ("message", "model", "window", "tools_ran", "problem"),
    [
        ("context window exceeded (8000 tokens)", "model-a", 8000, False, "attempted model"),
        (
            "context window exceeded for model model-ab (8000 tokens)",
            "model-a",
            8000,
            False,
            "attempted model",
        ),
        ("context window exceeded for model model-a", "model-a", 8000, False, "window 8000"),
        ("context window exceeded for model model-a (7999 tokens)", "model-a", 8000, False, "window 8000"),
        ("context window exceeded for model model-a (8000 tokens)", "model-a", None, False, "unknown"),
        ("context window exceeded for model model-a (window size unknown)", "model-a", None, True, "tools"),
        (
            "context window exceeded for model model-a (8000 tokens); tools already ran",
            "model-a",
            8000,
            False,
            "tools",
        ),
        (None, "model-a", 8000, False, "not a text"),
    ],
)
def test_overflow_messages_without_the_property_fail(
    message: Any, model: str, window: int | None, tools_ran: bool, problem: str
) -> None:
    problems = overflow_message_problems(message, model, window, tools_ran)
    assert len(problems) == 1, problems
    assert problem in problems[0], problems


def test_joined_text_reads_two_parts_and_one_joined_part_alike() -> None:
    expected = {"$joined_text": "summary\n\nq3"}
    assert match(expected, [{"type": "text", "text": "summary"}, {"type": "text", "text": "q3"}]) == []
    assert match(expected, [{"type": "text", "text": "summary\n\nq3"}]) == []
    assert match(expected, [{"type": "text", "text": "summary q3"}]) != []
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {"role": "assistant", "content": []},
    ]
    assert match({"$joined_text": "a"}, messages) == []
    assert match({"$joined_text": "a"}, "a") != []


ESTIMATE_KEYS = ("estimate", "inputEstimate", "tokensAfter")
BUILT_ON_THE_ESTIMATOR = {"KD-COMP-2", "KD-COMP-6", "KD-COMP-8", "KD-FIN-2"}


def test_an_expectation_on_an_estimate_rests_on_the_estimator() -> None:
    """A number of the kit's estimator (KD-COMP-2, binding) is a kit choice: an expectation stating one is
    marked with it or with an entry built on it (a presence check, ``{$gte: 1}``, needs no mark)."""
    problems = []
    for case in _cases():
        for name, value in case.expect.model_dump(exclude_none=True).items():
            if name in (
                "kit_defined",
                "sessions",
                "admissions",
                "usage",
            ):  # the last two: the judge marks them
                continue
            stated = [
                item[key]
                for item, _inside in _walk(value)
                if isinstance(item, dict)
                for key in ESTIMATE_KEYS
                if key in item and item[key] != {"$gte": 1}
            ]
            marks = {*case_kit_choices(case), *case.expect.kit_defined.get(name, ())}
            if stated and not marks & BUILT_ON_THE_ESTIMATOR:
                problems.append(f"{case.id}: {name}")
    assert problems == []
