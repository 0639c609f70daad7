"""Compaction planning: what is folded, in how many passes, and what each summariser request holds.

Pure.  The working transcript is a list of slots (completed exchanges, empty finals, legacy bare users).
The **kept part** starts at the latest completed exchange and runs to the end (legacy text after it stays
with it); the pending user of a turn is kept too but is no slot.  Everything before the kept part is
**foldable**: its messages are folded, oldest first, greedily, into at most :data:`MAX_PASSES` summary
passes.  Each pass is one summariser request (KD-COMP-7): the fixed instructions as system text and one
user message whose first part is the fold block (the running summary, then ``User: ...`` /
``Assistant: ...`` blocks) followed by the kept messages and the pending user, verbatim, one part each.

Every request must fit the pass input limit (KD-COMP-6) by the KD-COMP-2 estimate.  The first pass carries
the running summary as it is; a later pass reserves room for the largest summary a pass may return
(:data:`SUMMARY_MAX_TOKENS`).  A message too large for an empty pass is cut to head and tail with the
KD-COMP-3 note; the system text, the running summary, the kept messages and the pending user are never
cut.  When the foldable messages need more than four passes, the fold stops at the last whole slot the
four passes cover: the rest stays verbatim with the kept part, so boundaries keep whole turns.

:func:`decide_compaction` makes the whole decision once, from the transcript and what the host's plan
entries resolved to: one immutable :class:`CompactionPlan` (the passes, the slots folded and kept, the
pass input limit, whether the host must acknowledge an unknown window, and each pass's request given the
summary the previous pass returned), or the :class:`Unplanned` reason it cannot run.  The runner
(``_host/compaction_runner.py``) only sequences it: admission, the provider calls, the install.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from relavium_reference._model.llm import LlmMessage, LlmRequest, LlmTextPart
from relavium_reference._rules.compaction_measure import SUMMARY_MAX_TOKENS, EntryWindow, pass_input_limit
from relavium_reference._rules.projection import (
    Exchange,
    HistoryMessage,
    ProjectedRequest,
    estimate_tokens,
    working_messages,
)

__all__ = [
    "KEPT_HEADER",
    "MAX_PASSES",
    "SUMMARISER_SYSTEM",
    "CompactionPlan",
    "PassPlan",
    "Unplanned",
    "decide_compaction",
    "fits",
    "kept_slot_count",
    "nothing_to_fold",
    "plan_compaction",
    "request_tokens",
    "summary_request",
    "truncate_middle",
]

MAX_PASSES = 4
_MESSAGE_OVERHEAD = 8
_SEPARATOR = "\n\n"

SUMMARISER_SYSTEM = (
    "You write the working notes of a conversation for the assistant that continues it. Keep open tasks "
    "and where they stand, decisions and their reasons, exact names, paths, commands and values, and the "
    "user's preferences and limits. Leave out small talk. Answer with the notes alone."
)
"""The summariser's instructions (KD-COMP-7, in the kit's own words)."""

KEPT_HEADER = "The conversation goes on with these messages, kept as they are (do not summarise them):"
_SUMMARY_HEADER = "Notes on the conversation so far:\n"
_CONTINUED = "\nThe conversation continued:"


def kept_slot_count(exchanges: Sequence[Exchange]) -> int:
    """Slots that stay verbatim: from the latest completed exchange to the end (all, when there is none)."""
    for index in range(len(exchanges) - 1, -1, -1):
        if exchanges[index].assistant is not None:
            return len(exchanges) - index
    return len(exchanges)


def truncate_middle(text: str, budget: int) -> str | None:
    """``text`` cut to at most ``budget`` characters: its head and tail joined by the KD-COMP-3 note.

    ``None`` when not even the note fits.  The head keeps the odd character when the kept count is odd.
    """
    if len(text) <= budget:
        return text
    keep = max(budget - len(_note(len(text))), 0)
    while keep >= 0:
        if keep + len(_note(len(text) - keep)) <= budget:
            head, tail = (keep + 1) // 2, keep // 2
            return text[:head] + _note(len(text) - keep) + (text[len(text) - tail :] if tail else "")
        keep -= 1
    return None


def _note(omitted: int) -> str:
    return f"\n[... {omitted} characters omitted ...]\n"


def _label(message: HistoryMessage) -> str:
    return "User: " if message.role == "user" else "Assistant: "


def _summary_block(summary: str) -> str:
    return f"{_SUMMARY_HEADER}{summary}{_CONTINUED}"


@dataclass(frozen=True)
class PassPlan:
    """One summary pass: the message blocks it folds (a cut block carries the note)."""

    blocks: tuple[str, ...]
    first_message: int
    message_count: int
    truncated: bool


@dataclass(frozen=True)
class CompactionPlan:
    """What one compaction will do: its passes, the slots it folds and the slots it keeps, under which
    pass input limit, and whether the host must first acknowledge that the limit is a soft bound."""

    passes: tuple[PassPlan, ...]
    folded_slots: int
    kept_slots: int
    limit_tokens: int = 0
    kept: tuple[HistoryMessage, ...] = ()
    """The messages that stay verbatim (every pass request carries them)."""
    pending_user: str | None = None
    needs_acknowledgement: bool = False
    """No attemptable entry has an authoritative window: a manual compaction runs under the soft bound
    once the host acknowledged it (KD-COMP-6)."""

    def pass_request(self, number: int, running_summary: str | None) -> LlmRequest | None:
        """Pass ``number``'s summariser request, given the summary so far (the previous pass's, or the
        session's for the first); ``None`` when it does not fit the limit (a summary came back too large)."""
        request = summary_request(
            self.passes[number].blocks, running_summary, self.kept, self.pending_user, ""
        )
        return request if fits(request, self.limit_tokens) else None


@dataclass(frozen=True)
class Unplanned:
    """Why a compaction cannot run: no provider of the plan resolves, no window to size a pass, no room."""

    reason: Literal["no_provider", "no_window", "no_room"]


def nothing_to_fold(exchanges: Sequence[Exchange]) -> bool:
    """Every slot is in the kept part: a compaction has nothing to do (decided before any provider)."""
    return kept_slot_count(exchanges) >= len(exchanges)


def decide_compaction(
    exchanges: Sequence[Exchange],
    running_summary: str | None,
    pending_user: str | None,
    windows: Sequence[EntryWindow],
    *,
    manual: bool,
    max_passes: int = MAX_PASSES,
) -> CompactionPlan | Unplanned:
    """The one plan of a compaction with something to fold (see :func:`nothing_to_fold`), given each plan
    entry's window and whether it resolved; or why it cannot run."""
    if not any(window.attemptable for window in windows):
        return Unplanned("no_provider")
    limit, soft = pass_input_limit(windows, manual=manual)
    if limit is None:
        return Unplanned("no_window")
    plan = plan_compaction(exchanges, running_summary, pending_user, limit, max_passes=max_passes)
    if isinstance(plan, str):
        return Unplanned("no_room")
    return CompactionPlan(
        plan.passes,
        plan.folded_slots,
        plan.kept_slots,
        limit_tokens=plan.limit_tokens,
        kept=plan.kept,
        pending_user=plan.pending_user,
        needs_acknowledgement=soft,
    )


def _kept_parts(kept: Sequence[HistoryMessage], pending_user: str | None) -> list[str]:
    texts = [message.text for message in kept]
    if pending_user is not None:
        texts.append(pending_user)
    return [KEPT_HEADER, *texts] if texts else []


def summary_request(
    blocks: Sequence[str],
    running_summary: str | None,
    kept: Sequence[HistoryMessage],
    pending_user: str | None,
    model: str,
) -> LlmRequest:
    """The summariser request of one pass (KD-COMP-7); no tools, ``maxTokens`` the summary cap."""
    head = [_summary_block(running_summary)] if running_summary else []
    fold = _SEPARATOR.join([*head, *blocks])
    parts = [LlmTextPart(text=fold), *(LlmTextPart(text=t) for t in _kept_parts(kept, pending_user))]
    return LlmRequest(
        model=model,
        system=SUMMARISER_SYSTEM,
        messages=[LlmMessage(role="user", content=list(parts))],
        max_tokens=SUMMARY_MAX_TOKENS,
    )


def request_tokens(request: LlmRequest) -> int:
    """The KD-COMP-2 estimate of a summariser request."""
    return estimate_tokens(
        ProjectedRequest(system=request.system or "", messages=request.messages, tools=None)
    )


def _fixed_chars(kept: Sequence[HistoryMessage], pending_user: str | None) -> int:
    return len(SUMMARISER_SYSTEM) + _MESSAGE_OVERHEAD + sum(len(t) for t in _kept_parts(kept, pending_user))


def _greedy(messages: Sequence[HistoryMessage], budgets: Sequence[int]) -> list[PassPlan] | None:
    """Fold ``messages`` in order; pass ``k`` holds at most ``budgets[min(k, last)]`` characters of blocks.

    ``None`` when some pass has no room even for a cut message.
    """
    passes: list[PassPlan] = []
    blocks: list[str] = []
    used = 0
    first = 0
    truncated = False
    index = 0
    while index < len(messages):
        budget = budgets[min(len(passes), len(budgets) - 1)]
        message = messages[index]
        block = _label(message) + message.text
        cost = len(block) + (len(_SEPARATOR) if blocks else 0)
        if used + cost <= budget:
            blocks.append(block)
            used += cost
            index += 1
            continue
        if blocks:  # close this pass; the message starts the next one
            passes.append(PassPlan(tuple(blocks), first, index - first, truncated))
            blocks, used, first, truncated = [], 0, index, False
            continue
        cut = truncate_middle(message.text, budget - len(_label(message)))
        if cut is None or budget <= len(_label(message)):
            return None
        blocks.append(_label(message) + cut)
        used, truncated = len(blocks[-1]), True
        index += 1
    if blocks:
        passes.append(PassPlan(tuple(blocks), first, index - first, truncated))
    return passes


def plan_compaction(
    exchanges: Sequence[Exchange],
    running_summary: str | None,
    pending_user: str | None,
    limit_tokens: int,
    *,
    max_passes: int = MAX_PASSES,
) -> CompactionPlan | str:
    """Plan one compaction under a pass input limit; a fixed reason text when it cannot be done.

    The caller has already established that something is foldable (:func:`kept_slot_count` is less than
    the number of slots).
    """
    kept_slots = kept_slot_count(exchanges)
    foldable = list(exchanges[: len(exchanges) - kept_slots])
    first_head = len(_summary_block(running_summary)) + len(_SEPARATOR) if running_summary else 0
    later_head = len(_summary_block("x" * SUMMARY_MAX_TOKENS * 4)) + len(_SEPARATOR)
    ends: list[int] = []  # message count after each foldable slot
    for exchange in foldable:
        ends.append((ends[-1] if ends else 0) + len(working_messages([exchange])))
    slots = len(foldable)
    while slots > 0:
        # what is not folded stays verbatim in every request: the room is measured with it
        kept = working_messages(exchanges[slots:])
        room = limit_tokens * 4 - _fixed_chars(kept, pending_user)
        passes = _greedy(working_messages(foldable[:slots]), [room - first_head, room - later_head])
        if passes is None:
            return "there is no room in a summary pass for the conversation to fold"
        if len(passes) <= max_passes:
            return CompactionPlan(
                tuple(passes),
                folded_slots=slots,
                kept_slots=len(exchanges) - slots,
                limit_tokens=limit_tokens,
                kept=tuple(kept),
                pending_user=pending_user,
            )
        covered = sum(p.message_count for p in passes[:max_passes])
        fewer = max((i + 1 for i, end in enumerate(ends) if end <= covered), default=0)
        slots = min(fewer, slots - 1)
    return "there is no room in a summary pass for the conversation to fold"


def fits(request: LlmRequest, limit_tokens: int) -> bool:
    return request_tokens(request) <= limit_tokens
