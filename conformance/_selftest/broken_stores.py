"""Broken session stores: the reference stores with one obligation of the declaration taken away.

Each is caught when at least one store case citing its clauses fails against it while the reference
store of the same kind passes them all (``store_proofs.py``).  Most are the durable SQLite store with
one method changed; one is the TTL store (its sweep), some swap one pure helper, one declares two
durabilities at once.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from relavium_conformance._reference.session_store_impl import (
    REFERENCE_STORE_PURE,
    ReferenceStoreImplementation,
    StoreKind,
    StorePure,
    store_capabilities,
)
from relavium_conformance._selftest import broken_store_classes as bs
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._rules.session_store_helpers import bounded_tail

__all__ = ["BROKEN_STORES", "BrokenStore"]


@dataclass(frozen=True)
class BrokenStore:
    name: str
    rule: str
    clauses: tuple[str, ...]
    kind: StoreKind = "sqlite"
    store: type[Any] | None = None
    pure: StorePure = REFERENCE_STORE_PURE
    capabilities: tuple[str, ...] | None = None
    per_instance_storage: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def implementation(self) -> ReferenceStoreImplementation:
        opener = None
        if self.store is not None:
            cls = self.store
            if self.kind == "sqlite":

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    where = tempfile.mkdtemp(prefix="broken-") if self.per_instance_storage else location
                    return cls.open(where, clock=clock)

            else:

                def opener(location: str, clock: Callable[[], int]) -> Any:
                    return cls(clock=clock)

        return ReferenceStoreImplementation(
            self.kind,
            opener=opener,
            pure=self.pure,
            capabilities=self.capabilities
            if self.capabilities is not None
            else store_capabilities(self.kind),
            name=f"broken:{self.name}",
        )


# --- pure helpers, one changed ---------------------------------------------------------------------


def _tail_first_compaction(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    whole = list(entries)
    for entry in whole:
        if entry.get("type") == "compaction":
            floor = entry.get("firstKeptEntryId")
            for index, candidate in enumerate(whole):
                if candidate.get("id") == floor:
                    return whole[index:], floor
    return whole, None


def _tail_after_floor(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    tail, floor = bounded_tail(entries)
    return (tail[1:], floor) if floor is not None else (tail, floor)


def _tail_empty_off_path(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    tail, floor = bounded_tail(entries)
    compacted = any(e.get("type") == "compaction" for e in entries)
    return ([], None) if compacted and floor is None else (tail, floor)


def _tail_strips_fields(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], str | None]:
    for entry in entries:
        if isinstance(entry, dict):
            for key in [k for k in entry if k not in ("id", "parentId", "type", "firstKeptEntryId")]:
                del entry[key]
    return bounded_tail(entries)


def _conflict_unguarded(value: object) -> bool:
    return getattr(value, "code", None) == "conflict" and type(value).__name__ == "SessionError"


def _conflict_by_message(value: object) -> bool:
    try:
        return "conflict" in str(value).lower() or getattr(value, "code", None) == "conflict"
    except Exception:
        return False


def _conflict_never(value: object) -> bool:
    return False


def _content_by_count(branch: Sequence[Mapping[str, Any]]) -> bool:
    return len(branch) > 0


def _content_counts_metadata(branch: Sequence[Mapping[str, Any]]) -> bool:
    return any(e.get("type") in ("message", "session_info") for e in branch)


def _pure(**changes: Any) -> StorePure:
    return replace(REFERENCE_STORE_PURE, **changes)


_SQLITE_CAPS = store_capabilities("sqlite")

BROKEN_STORES: tuple[BrokenStore, ...] = (
    BrokenStore(
        "owner-of-collapses-unknown",
        "ownerOf answers null for an id with no row",
        ("SS-OWN-002", "SS-OWN-003"),
        store=bs.OwnerOfCollapses,
    ),
    BrokenStore(
        "owner-of-anonymous-reads-unknown",
        "ownerOf answers no row for an anonymous session",
        ("SS-OWN-002", "SS-OWN-004"),
        store=bs.AnonymousReadsUnknown,
    ),
    BrokenStore(
        "owner-of-owned-reads-anonymous",
        "ownerOf answers null for an owned session",
        ("SS-OWN-002", "SS-OWN-005"),
        store=bs.OwnedReadsAnonymous,
    ),
    BrokenStore(
        "list-newest-only", "list answers only the newest session", ("SS-RUN-026",), store=bs.ListNewestOnly
    ),
    BrokenStore(
        "ttl-hides-placement-argument",
        "a store without placements still treats a placed acquire specially",
        ("SS-PLACE-009",),
        kind="ttl",
        store=bs.TtlHidesPlacementArgument,
    ),
    BrokenStore(
        "register-read-then-write",
        "register reads its own view, then writes with REPLACE",
        ("SS-REG-003", "SS-REG-004"),
        store=bs.RegisterReadThenWrite,
    ),
    BrokenStore(
        "forget-deletes", "forget deletes the session's history", ("SS-LIFE-012",), store=bs.ForgetDeletes
    ),
    BrokenStore(
        "fork-drops-ownership",
        "a fork without an owner argument gets no ownership row",
        ("SS-FORK-012", "SS-FORK-013"),
        store=bs.ForkDropsOwnership,
    ),
    BrokenStore(
        "fork-ignores-owner", "fork ignores its owner argument", ("SS-FORK-011",), store=bs.ForkIgnoresOwner
    ),
    BrokenStore(
        "fork-copies-uncommitted",
        "fork copies the source's turn in flight",
        ("SS-FORK-014",),
        store=bs.ForkCopiesUncommitted,
    ),
    BrokenStore(
        "fork-copies-nothing", "fork makes an empty session", ("SS-FORK-004",), store=bs.ForkCopiesNothing
    ),
    BrokenStore(
        "fork-of-missing-creates",
        "fork of a missing source answers a new empty session",
        ("SS-FORK-005",),
        store=bs.ForkOfMissingCreates,
    ),
    BrokenStore(
        "fork-shares-history",
        "writes to a fork land in its source too",
        ("SS-FORK-006",),
        store=bs.ForkSharesHistory,
    ),
    BrokenStore(
        "forked-from-wrong",
        "a fork's summary names itself as its source",
        ("SS-FORK-001",),
        store=bs.ForkedFromWrong,
    ),
    BrokenStore(
        "forked-from-everywhere",
        "every summary carries a forkedFrom",
        ("SS-FORK-002",),
        store=bs.ForkedFromEverywhere,
    ),
    BrokenStore(
        "placed-visible-in-list",
        "placed sessions appear in list()",
        ("SS-PLACE-012",),
        store=bs.PlacedVisible,
    ),
    BrokenStore(
        "placed-id-claimable",
        "a claim-form acquire attaches to a placed session",
        ("SS-PLACE-016",),
        store=bs.PlacedClaimable,
    ),
    BrokenStore(
        "placement-reacquire-refused",
        "the creating chain's re-acquire with its placement is refused",
        ("SS-PLACE-017",),
        store=bs.PlacementReacquireRefused,
    ),
    BrokenStore(
        "placement-ignored",
        "a store declaring placements creates ordinary sessions",
        ("SS-PLACE-001", "SS-PLACE-002", "SS-PLACE-018"),
        store=bs.PlacementIgnored,
    ),
    BrokenStore(
        "placement-rewritten",
        "re-opening with another placement rewrites the tuple",
        ("SS-PLACE-015",),
        store=bs.PlacementRewritten,
    ),
    BrokenStore(
        "placed-at-on-reopen",
        "placedAt is stamped again at every re-open",
        ("SS-PLACE-003",),
        store=bs.PlacedAtOnReopen,
    ),
    BrokenStore(
        "tuple-guessed",
        "listPlaced fills a missing scope or handle with an empty string",
        ("SS-PLACE-005",),
        store=bs.TupleGuessed,
    ),
    BrokenStore(
        "older-than-ignored", "listPlaced ignores olderThanMs", ("SS-PLACE-020",), store=bs.OlderThanIgnored
    ),
    BrokenStore(
        "release-placed-keeps-history",
        "release of a placed session drops only the cached view",
        ("SS-PLACE-014",),
        store=bs.ReleasePlacedKeeps,
    ),
    BrokenStore(
        "placed-lost-on-restart",
        "placed sessions do not survive a restart despite the declaration",
        ("SS-PLACE-006", "SS-PLACE-008", "SS-PLACE-011"),
        store=bs.PlacedLostOnRestart,
    ),
    BrokenStore(
        "require-existing-creates",
        "requireExisting creates the session on a miss",
        ("SS-LIFE-006", "SS-LIFE-007"),
        store=bs.RequireExistingCreates,
    ),
    BrokenStore(
        "acquire-not-single-flight",
        "each acquire hands out a new live session object",
        ("SS-LIFE-004",),
        store=bs.AcquireNotSingleFlight,
    ),
    BrokenStore(
        "acquire-recreates",
        "a claim-form acquire of an existing id starts it afresh",
        ("SS-LIFE-005", "SS-PLACE-013"),
        store=bs.AcquireRecreates,
    ),
    BrokenStore(
        "minted-id-not-resolved",
        "acquire without an id answers an id that is not the session's",
        ("SS-TYPE-006",),
        store=bs.MintedIdNotResolved,
    ),
    BrokenStore(
        "not-durable",
        "declares durable but each instance has storage of its own",
        ("SS-LIFE-003", "SS-GEN-007", "SS-RUN-027", "SS-FORK-009"),
        store=SqliteSessionStore,
        per_instance_storage=True,
    ),
    BrokenStore("list-oldest-first", "list answers oldest first", ("SS-RUN-002",), store=bs.ListOldestFirst),
    BrokenStore(
        "note-task-run-keeps-run-id",
        "noteTaskRun without runId keeps the previous run id",
        ("SS-RUN-024", "SS-RUN-018"),
        store=bs.NoteTaskRunKeepsRunId,
    ),
    BrokenStore(
        "note-task-run-ignored",
        "noteTaskRun records nothing",
        ("SS-RUN-003", "SS-RUN-011", "SS-RUN-019", "SS-RUN-022"),
        store=bs.NoteTaskRunIgnored,
    ),
    BrokenStore(
        "last-task-defaults-to-session",
        "lastTaskId answers the session id before any run",
        ("SS-RUN-010",),
        store=bs.LastTaskDefaultsToSession,
    ),
    BrokenStore(
        "note-task-run-throws",
        "noteTaskRun throws for an unknown session",
        ("SS-RUN-020",),
        store=bs.NoteTaskRunThrows,
    ),
    BrokenStore(
        "touch-ignored",
        "touch does not mark the session active",
        ("SS-LIFE-008", "SS-RUN-008"),
        store=bs.TouchIgnored,
    ),
    BrokenStore(
        "created-at-not-iso", "createdAt is not an ISO time", ("SS-RUN-007",), store=bs.CreatedAtNotIso
    ),
    BrokenStore(
        "release-keeps-live",
        "release leaves the session in the live set",
        ("SS-LIFE-010",),
        store=bs.ReleaseKeepsLive,
    ),
    BrokenStore("size-counts-nothing", "size is always zero", ("SS-LIFE-020",), store=bs.SizeCountsNothing),
    BrokenStore(
        "register-overwrites",
        "register overwrites the first owner",
        ("SS-REG-001", "SS-REG-002"),
        store=bs.RegisterOverwrites,
    ),
    BrokenStore(
        "register-throws-later",
        "a later register throws instead of a silent no-op",
        ("SS-REG-002",),
        store=bs.RegisterThrowsLater,
    ),
    BrokenStore(
        "register-swallows-invalid",
        "a first register with a non-string owner is silently dropped",
        ("SS-REG-006",),
        store=bs.RegisterSwallowsInvalid,
    ),
    BrokenStore(
        "ownership-dropped-with-view",
        "forget drops the ownership row of a live session",
        ("SS-REG-005",),
        store=bs.OwnershipDroppedWithView,
    ),
    BrokenStore(
        "incarnation-reminted",
        "each cached view mints a new incarnation",
        ("SS-INC-001", "SS-INC-004"),
        store=bs.IncarnationReminted,
    ),
    BrokenStore(
        "incarnation-of-unknown-answers",
        "incarnationOf answers a value for an id with no row",
        ("SS-INC-002",),
        store=bs.IncarnationOfUnknownAnswers,
    ),
    BrokenStore(
        "dispose-throws",
        "dispose throws once the connection is closed",
        ("SS-LIFE-021",),
        store=bs.DisposeThrows,
    ),
    BrokenStore(
        "sweep-ignores-pin",
        "the TTL sweep evicts pinned sessions",
        ("SS-LIFE-016",),
        kind="ttl",
        store=bs.SweepIgnoresPin,
    ),
    BrokenStore(
        "declaration-contradictory",
        "declares durable and process-local at once",
        ("SS-GEN-009",),
        capabilities=(*_SQLITE_CAPS, "store:process-local"),
    ),
    BrokenStore(
        "bounded-tail-first-compaction",
        "boundedTail floors at the first compaction",
        ("SS-HIST-003",),
        pure=_pure(bounded_tail=_tail_first_compaction),
    ),
    BrokenStore(
        "bounded-tail-after-floor",
        "boundedTail's tail starts after the floor entry",
        ("SS-HIST-002", "SS-HIST-004"),
        pure=_pure(bounded_tail=_tail_after_floor),
    ),
    BrokenStore(
        "bounded-tail-empty-off-path",
        "boundedTail answers nothing when the floor is off the path",
        ("SS-HIST-009",),
        pure=_pure(bounded_tail=_tail_empty_off_path),
    ),
    BrokenStore(
        "bounded-tail-modifies-entries",
        "boundedTail strips fields from the entries it was given",
        ("SS-HIST-008",),
        pure=_pure(bounded_tail=_tail_strips_fields),
    ),
    BrokenStore(
        "conflict-raises-on-unreadable",
        "isSessionConflict reads the value unguarded",
        ("SS-GEN-005",),
        pure=_pure(is_session_conflict=_conflict_unguarded),
    ),
    BrokenStore(
        "conflict-by-message",
        "isSessionConflict trusts a value that mentions a conflict",
        ("SS-GEN-006",),
        pure=_pure(is_session_conflict=_conflict_by_message),
    ),
    BrokenStore(
        "conflict-never",
        "isSessionConflict is never true",
        ("SS-GEN-003", "SS-GEN-004"),
        pure=_pure(is_session_conflict=_conflict_never),
    ),
    BrokenStore(
        "content-by-count",
        "hasConversationContent counts entries",
        ("SS-HIST-010", "SS-HIST-011", "SS-HIST-012"),
        pure=_pure(has_conversation_content=_content_by_count),
    ),
    BrokenStore(
        "content-counts-session-info",
        "hasConversationContent counts session_info rows",
        ("SS-HIST-013",),
        pure=_pure(has_conversation_content=_content_counts_metadata),
    ),
)
