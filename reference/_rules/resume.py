"""Resume reconstruction: from a session row and its durable transcript to a text-only resume state.

:func:`reconstruct_session_state` is pure.  It reads the durable rows in sequence order and groups
them into **slots**:

* a *completed turn*: a user row, any structural rows (tool-call rows, tool-result rows), then one
  terminal assistant row (an assistant row with a text part and no call part).  It contributes the
  user text, plus the final assistant text when that is not empty, and one entry of
  ``completed_turn_spans``;
* a *legacy bare user*: a user row immediately followed by another user row (the old writer stored a
  successful empty final as the user row alone).  Its text stays in the resumed messages, outside
  every span; it has a boundary slot of its own and adds nothing to the turn counter.

Everything else is left out: an exchange interrupted after structural rows, a final user row with no
terminal (it rolls back), rows before the newest compaction/trim boundary, and orphan rows that
follow a boundary without their user row.  Boundary markers are ``system`` rows carrying
``compaction.droppedThroughSequence``; the newest marker with non-empty text is the context preamble,
so a later trim marker (empty text) keeps an earlier summary.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence
from typing import Annotated, Literal, NamedTuple

from pydantic import Field, StrictInt, StrictStr

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.gc_pause import gc_paused
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage, TextPart
from relavium_reference._model.prebuilt import prebuilt
from relavium_reference._model.records import is_structural_row, is_terminal_row
from relavium_reference._model.shapes import WireModel
from relavium_reference._rules.projection import Exchange

__all__ = [
    "ResumeMessage",
    "SessionResumeState",
    "TurnSpan",
    "dropped_through_for_kept",
    "exchanges_from_state",
    "reconstruct_session_state",
    "resume_state_problem",
]

_NonNegative = Annotated[StrictInt, Field(ge=0)]


class ResumeMessage(WireModel):
    """One text-only message of the resumed working transcript."""

    role: Literal["user", "assistant"]
    text: StrictStr


class TurnSpan(WireModel):
    """Indices ``[start, end)`` into ``SessionResumeState.messages`` of one completed turn."""

    start: _NonNegative
    end: _NonNegative


class SessionResumeState(WireModel):
    """What a resumed session starts from (text-only, unfolded).

    ``message_sequences[i]`` is the durable sequence number of ``messages[i]``;
    ``turn_boundary_sequences`` holds, per slot (completed turn or retained legacy bare user, in
    order), the sequence number of the slot's last durable row: the seeds a host needs to turn a
    kept-slot count into a ``droppedThroughSequence`` (see :func:`dropped_through_for_kept`).
    """

    messages: tuple[ResumeMessage, ...]
    completed_turn_spans: tuple[TurnSpan, ...]
    turn_count: _NonNegative
    cumulative_cost_microcents: _NonNegative
    cumulative_input_tokens: _NonNegative = 0
    cumulative_output_tokens: _NonNegative = 0
    context_preamble: StrictStr | None = None
    message_sequences: tuple[_NonNegative, ...] = ()
    turn_boundary_sequences: tuple[_NonNegative, ...] = ()


class _Slot(NamedTuple):
    user: SessionMessage
    terminal: SessionMessage | None  # None: a retained legacy bare user
    last_sequence: int


_by_sequence = operator.attrgetter("sequence_number")


def _text(row: SessionMessage) -> str:
    """The text projection of ``row`` (the common row, one text part, without the join)."""
    content = row.content
    if len(content) == 1 and type(content[0]) is TextPart:
        return content[0].text
    return row.text


def _slots(rows: Iterable[SessionMessage]) -> list[_Slot]:
    """Group transcript rows (markers already removed) into completed turns and legacy bare users."""
    slots: list[_Slot] = []
    append = slots.append
    open_user: SessionMessage | None = None
    saw_structure = False
    for row in rows:
        role = row.role
        if role == "user":
            if open_user is not None and not saw_structure:
                append(_Slot(open_user, None, open_user.sequence_number))
            open_user, saw_structure = row, False
            continue
        content = row.content
        # is_terminal_row, with the common row (one text part) decided without scanning its parts
        if len(content) == 1 and type(content[0]) is TextPart:
            terminal = role == "assistant"
        else:
            terminal = is_terminal_row(role, content)
        if terminal:
            if open_user is not None:
                append(_Slot(open_user, row, row.sequence_number))
            open_user, saw_structure = None, False
        elif open_user is not None and (is_structural_row(role, content) or role == "assistant"):
            # A call/result row, or an assistant row without text: part of the open exchange,
            # never its terminal (KD-RES-1).
            saw_structure = True
    # A trailing open exchange (bare user or interrupted) rolls back.
    return slots


@gc_paused  # a long transcript rebuilds many acyclic values (see gc_pause)
def reconstruct_session_state(
    record: AgentSessionRecord, messages: Sequence[SessionMessage]
) -> SessionResumeState:
    """Build the resume state of ``record`` from its durable ``messages`` (any order).

    Raises :class:`InvalidInputError` when ``record`` is not an ``AgentSessionRecord`` or ``messages``
    not a sequence of ``SessionMessage``, a message belongs to another session or two messages share a
    sequence number.
    """
    if not isinstance(record, AgentSessionRecord):
        raise InvalidInputError("a resume needs an AgentSessionRecord", location="record")
    if (
        not isinstance(messages, Sequence)
        or isinstance(messages, str | bytes)
        or not all(isinstance(message, SessionMessage) for message in messages)
    ):
        raise InvalidInputError("a resume needs a sequence of SessionMessage", location="messages")
    ordered = sorted(messages, key=_by_sequence)
    sequences = list(map(_by_sequence, ordered))
    if any(map(operator.eq, sequences, itertools.islice(sequences, 1, None))):
        raise InvalidInputError("two session messages share a sequence number", location="sequenceNumber")
    if not all(map(operator.eq, itertools.repeat(record.id), map(_by_session, ordered))):
        raise InvalidInputError("a session message belongs to another session", location="sessionId")

    markers = [m for m in ordered if m.role == "system" and m.compaction is not None]
    transcript = [m for m in ordered if m.role != "system"]
    boundary = max((m.compaction.dropped_through_sequence for m in markers if m.compaction), default=-1)
    preamble = next((m.text for m in reversed(markers) if m.text), None)

    all_slots = _slots(transcript)
    kept = all_slots if boundary < 0 else _slots(m for m in transcript if m.sequence_number > boundary)
    out_messages: list[ResumeMessage] = []
    out_sequences: list[int] = []
    spans: list[TurnSpan] = []
    boundaries: list[int] = []
    for user, terminal, last_sequence in kept:
        start = len(out_messages)
        out_messages.append(_resume_message("user", _text(user)))
        out_sequences.append(user.sequence_number)
        boundaries.append(last_sequence)
        if terminal is None:
            continue
        final_text = _text(terminal)
        if final_text:
            out_messages.append(_resume_message("assistant", final_text))
            out_sequences.append(terminal.sequence_number)
        spans.append(prebuilt(TurnSpan, {"start": start, "end": len(out_messages)}, _SPAN_GIVEN))

    # The hard-cap counter counts every completed turn the session ever ran, including turns a
    # compaction or trim has since superseded (KD-RES-3).
    turn_count = sum(1 for slot in all_slots if slot.terminal is not None)
    return SessionResumeState(
        messages=tuple(out_messages),
        completed_turn_spans=tuple(spans),
        turn_count=turn_count,
        cumulative_cost_microcents=record.total_cost_microcents,
        cumulative_input_tokens=record.total_input_tokens,
        cumulative_output_tokens=record.total_output_tokens,
        context_preamble=preamble,
        message_sequences=tuple(out_sequences),
        turn_boundary_sequences=tuple(boundaries),
    )


_by_session = operator.attrgetter("session_id")
_SPAN_GIVEN = {"start", "end"}  # fields sets shared by the built values (see prebuilt)
_RESUME_GIVEN = {"role", "text"}


def _resume_message(role: Literal["user", "assistant"], text: str) -> ResumeMessage:
    """A :class:`ResumeMessage` of values that pass its rules (a fixed role, a message's text)."""
    return prebuilt(ResumeMessage, {"role": role, "text": text}, _RESUME_GIVEN)


def dropped_through_for_kept(state: SessionResumeState, kept_slot_count: int) -> int | None:
    """The ``droppedThroughSequence`` that keeps the newest ``kept_slot_count`` slots of ``state``.

    ``None`` when every slot is kept (no marker is needed).  Refuses a negative count.
    """
    if kept_slot_count < 0:
        raise InvalidInputError("kept slot count must not be negative", location="keptTurnCount")
    seeds = state.turn_boundary_sequences
    if kept_slot_count >= len(seeds):
        return None
    return seeds[len(seeds) - kept_slot_count - 1]


_PROBLEMS = {
    "lengths": "resume message sequences do not match the messages",
    "order": "resume message sequences are not increasing",
    "bounds": "a completed turn span is out of bounds",
    "overlap": "completed turn spans overlap or are out of order",
    "start": "a completed turn span does not start at a user message",
    "shape": "a completed turn span is neither a user alone nor a user and its reply",
}


def resume_state_problem(state: SessionResumeState) -> str | None:
    """Check a resume state's metadata; return a fixed, value-free reason, or ``None`` when sound.

    Spans must be ordered, non-overlapping, in bounds, and each either ``[user]`` or
    ``[user, assistant]``; sequence seeds, when given, must match the messages and increase.  A value
    that is not a ``SessionResumeState`` at all is reported as such.
    """
    if not isinstance(state, SessionResumeState):
        return "the resume state is not a SessionResumeState"
    messages = state.messages
    seqs = state.message_sequences
    if seqs and len(seqs) != len(messages):
        return _PROBLEMS["lengths"]
    if any(b <= a for a, b in itertools.pairwise(seqs)):
        return _PROBLEMS["order"]
    previous_end = 0
    for span in state.completed_turn_spans:
        if not 0 <= span.start < span.end <= len(messages):
            return _PROBLEMS["bounds"]
        if span.start < previous_end:
            return _PROBLEMS["overlap"]
        if messages[span.start].role != "user":
            return _PROBLEMS["start"]
        roles = [m.role for m in messages[span.start : span.end]]
        if roles not in (["user"], ["user", "assistant"]):
            return _PROBLEMS["shape"]
        previous_end = span.end
    return None


def exchanges_from_state(state: SessionResumeState) -> list[Exchange]:
    """The working transcript of a resume state: one exchange per span, one legacy slot per loose user."""
    starts = {span.start: span for span in state.completed_turn_spans}
    out: list[Exchange] = []
    index = 0
    while index < len(state.messages):
        span = starts.get(index)
        if span is not None:
            user = state.messages[span.start].text
            reply = state.messages[span.start + 1].text if span.end - span.start == 2 else ""
            out.append(Exchange(user=user, assistant=reply))
            index = span.end
            continue
        message = state.messages[index]
        if message.role == "user":
            out.append(Exchange(user=message.text, assistant=None))  # legacy: kept, no terminal
        index += 1
    return out
