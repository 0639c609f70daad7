"""Broken stores of the history helpers (clauses SS-HIST-*): boundedTail and hasConversationContent,
each replaced by a helper that is wrong in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relavium_conformance._selftest.stores.registry import store_break_of
from relavium_reference._rules.session_store_helpers import bounded_tail

__all__: list[str] = []  # the broken stores register themselves (see ``registry.store_break_of``)


@store_break_of(
    name="bounded-tail-first-compaction",
    summary="boundedTail floors at the first compaction",
    clauses=("SS-HIST-003",),
    replaces="bounded_tail",
)
def _tail_first_compaction(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    whole = list(entries)
    for entry in whole:
        if entry.get("type") == "compaction":
            floor = entry.get("firstKeptEntryId")
            for index, candidate in enumerate(whole):
                if candidate.get("id") == floor:
                    return whole[index:], floor
    return whole, None


@store_break_of(
    name="bounded-tail-after-floor",
    summary="boundedTail's tail starts after the floor entry",
    clauses=("SS-HIST-002", "SS-HIST-004"),
    replaces="bounded_tail",
)
def _tail_after_floor(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    tail, floor = bounded_tail(entries)
    return (tail[1:], floor) if floor is not None else (tail, floor)


@store_break_of(
    name="bounded-tail-empty-off-path",
    summary="boundedTail answers nothing when the floor is off the path",
    clauses=("SS-HIST-009",),
    replaces="bounded_tail",
)
def _tail_empty_off_path(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    tail, floor = bounded_tail(entries)
    compacted = any(e.get("type") == "compaction" for e in entries)
    return ([], None) if compacted and floor is None else (tail, floor)


@store_break_of(
    name="bounded-tail-modifies-entries",
    summary="boundedTail strips fields from the entries it was given",
    clauses=("SS-HIST-008",),
    replaces="bounded_tail",
)
def _tail_strips_fields(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    for entry in entries:
        if isinstance(entry, dict):
            for key in [k for k in entry if k not in ("id", "parentId", "type", "firstKeptEntryId")]:
                del entry[key]
    return bounded_tail(entries)


@store_break_of(
    name="content-by-count",
    summary="hasConversationContent counts entries",
    clauses=("SS-HIST-010", "SS-HIST-011", "SS-HIST-012"),
    replaces="has_conversation_content",
)
def _content_by_count(branch: Sequence[Mapping[str, Any]]) -> bool:
    return len(branch) > 0


@store_break_of(
    name="content-counts-session-info",
    summary="hasConversationContent counts session_info rows",
    clauses=("SS-HIST-013",),
    replaces="has_conversation_content",
)
def _content_counts_metadata(branch: Sequence[Mapping[str, Any]]) -> bool:
    return any(e.get("type") in ("message", "session_info") for e in branch)
