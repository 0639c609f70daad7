"""Which kit-defined choices bind a verdict and which only describe the kit's own shape.

Every entry of ``docs/kit-defined.md`` says its kind (``Kind: binding`` or ``Kind: shape``):

* **binding**: a clause cannot be judged without it (the token estimator, the names and shapes taken from
  companion documents, the adapter's callbacks).  An unmet expectation resting on it fails the case as a
  kit-choice failure, told apart from a spec failure;
* **shape**: the kit fixed an exact form (a wording, a text layout, an order) where the clause states only
  a property.  A case checks the property (a spec expectation) and may keep the exact form inside a
  ``{$shape: {kit_defined: KD-..., is: ...}}`` expectation; a difference resting on a shape entry is a
  kit-choice **note**: shown with the case's warnings, it never fails the case.

``SHAPE_CHOICES`` is held equal to the ``Kind: shape`` entries of the document by a test.
"""

from __future__ import annotations

from collections.abc import Iterable

from relavium_conformance._report.results import Difference

__all__ = ["SHAPE_CHOICES", "is_note", "note_text", "split_notes"]

SHAPE_CHOICES: frozenset[str] = frozenset(
    {
        "KD-COMP-3",  # the summary wrapper text and the truncation note's text
        "KD-COMP-11",  # the summariser request's layout (header lines, one text part per kept message)
        "KD-MSG-2",  # the exact refusal messages of the strict message union
        "KD-OVF-2",  # the context_overflow message's exact text
        "KD-PROJ-2",  # two text parts where one joined by a blank line is as good
    }
)


def is_note(difference: Difference) -> bool:
    """Whether ``difference`` rests on a shape entry: a kit-choice note, never a failure."""
    return any(mark in SHAPE_CHOICES for mark in difference.kit_defined)


def note_text(difference: Difference) -> str:
    """The warning line a kit-choice note becomes."""
    marks = ", ".join(m for m in difference.kit_defined if m in SHAPE_CHOICES)
    where = f"{difference.path}: {difference.message}"
    return f"kit-choice note [{marks}]: {where} (the kit's own shape, not a failure)"


def split_notes(differences: Iterable[Difference]) -> tuple[list[Difference], list[str]]:
    """(the differences that fail the case, the notes as warning lines)."""
    failing: list[Difference] = []
    notes: list[str] = []
    for difference in differences:
        if is_note(difference):
            notes.append(note_text(difference))
        else:
            failing.append(difference)
    return failing, notes
