"""``run --shard INDEX/COUNT`` and ``report``'s merge of the shards' results into one run.

A CI matrix splits one selection over COUNT jobs: the selected cases, sorted by id, are dealt
round-robin (the i-th to shard ``i mod COUNT + 1``), so the split depends only on the selection, never on
the order the corpus was read in or on the machine.  Each shard's results record the whole selection's
size and a hash of its sorted ids (:class:`ShardInfo`); :func:`merge_shards` refuses shards that do not
cover that selection exactly once (a shard missing or given twice, shards of different selections,
corpora or implementations, an interrupted shard) and builds the run that one job would have reported.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Protocol, TypeVar

from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.results import (
    BaselineComparison,
    RunContext,
    RunResult,
    ShardInfo,
    StaleEntry,
)

__all__ = ["group_shards", "merge_shards", "parse_shard", "selection_hash", "take_shard"]


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


S = TypeVar("S", bound=_HasId)

_SHARD = re.compile(r"^(?P<index>\d+)/(?P<count>\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` as ``(K, N)``, 1 <= K <= N; anything else is a :class:`KitUsageError`."""
    matched = _SHARD.match(text.strip())
    if not matched or not 1 <= int(matched["index"]) <= int(matched["count"]):
        raise KitUsageError(f"--shard {text!r}: give INDEX/COUNT with 1 <= INDEX <= COUNT, as 2/4")
    return int(matched["index"]), int(matched["count"])


def selection_hash(ids: Iterable[str]) -> str:
    """``sha256:`` of the sorted case ids, one a line."""
    return "sha256:" + hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()


def take_shard(cases: Sequence[S], index: int, count: int) -> tuple[tuple[S, ...], ShardInfo]:
    """The cases of shard ``index`` of ``count`` (in their given order), and what the results record."""
    ordered = sorted(case.id for case in cases)
    mine = {case_id for position, case_id in enumerate(ordered) if position % count == index - 1}
    info = ShardInfo(index=index, count=count, selected=len(ordered), selected_hash=selection_hash(ordered))
    return tuple(case for case in cases if case.id in mine), info


def _key(run: RunResult, context: RunContext, shard: ShardInfo) -> tuple[str, ...]:
    """What the shards of one selection share."""
    return (
        run.implementation.name,
        context.adapter,
        context.spec_revision,
        context.corpus.content_hash,
        shard.selected_hash,
        str(shard.count),
    )


def group_shards(runs: Sequence[RunResult], sources: Sequence[str]) -> list[RunResult]:
    """``runs`` with the shards of each selection merged into one run (in the place of its first
    shard); a run that is not a shard is kept as it is."""
    groups: dict[tuple[str, ...], list[tuple[RunResult, str]]] = {}
    out: list[RunResult | tuple[str, ...]] = []
    for run, source in zip(runs, sources, strict=True):
        if run.context is None or run.context.shard is None:
            out.append(run)
            continue
        key = _key(run, run.context, run.context.shard)
        if key not in groups:
            groups[key] = []
            out.append(key)
        groups[key].append((run, source))
    return [
        item if isinstance(item, RunResult) else merge_shards(*zip(*groups[item], strict=True))
        for item in out
    ]


def merge_shards(runs: Sequence[RunResult], sources: Sequence[str]) -> RunResult:
    """The one run the shards ``runs`` (read from ``sources``) make, after checking they cover their
    selection exactly once; :class:`KitUsageError` names what is wrong."""
    shards = [run.context.shard for run in runs if run.context is not None and run.context.shard is not None]
    context = runs[0].context
    if len(shards) != len(runs) or context is None:
        raise KitUsageError("only the results of run --shard can be merged")
    first = shards[0]
    seen: dict[int, str] = {}
    for shard, source in zip(shards, sources, strict=True):
        if shard.index in seen:
            raise KitUsageError(
                f"shard {shard.index}/{shard.count} given twice: {seen[shard.index]} and {source}"
            )
        seen[shard.index] = source
    missing = sorted(set(range(1, first.count + 1)) - set(seen))
    if missing:
        names = ", ".join(f"{index}/{first.count}" for index in missing)
        raise KitUsageError(
            f"the shards do not cover the selection: shard {names} missing (given: {', '.join(sources)})"
        )
    for run, source in zip(runs, sources, strict=True):
        if run.interrupted:
            raise KitUsageError(f"{source}: the shard was interrupted, so it does not hold all of its cases")
    cases = sorted((case for run in runs for case in run.cases), key=lambda case: case.id)
    ids = [case.id for case in cases]
    if len(set(ids)) != len(ids) or len(ids) != first.selected or selection_hash(ids) != first.selected_hash:
        raise KitUsageError(
            f"the shards hold {len(ids)} case(s) ({len(set(ids))} distinct), not the {first.selected} "
            "selected cases exactly once: were they run with the same --select, --exclude and --cases?"
        )
    start = min(run.started_at for run in runs)
    end = max(run.started_at + timedelta(milliseconds=run.duration_ms) for run in runs)
    merged = RunResult.build(
        implementation=runs[0].implementation,
        cases=cases,
        catalogue=load_catalogue().clauses,
        started_at=start,
        duration_ms=(end - start).total_seconds() * 1000,
        kit=runs[0].kit,
    )
    merged = merged.with_context(context.model_copy(update={"shard": None}))
    proofs: dict[str, set[str]] = {}
    for run in runs:
        for clause in run.clauses:
            proofs.setdefault(clause.id, set()).update(clause.proven_by)
    if any(proofs.values()):
        merged = merged.with_proofs({clause_id: sorted(names) for clause_id, names in proofs.items()})
    if runs[0].capabilities is not None:
        merged = merged.with_capability_gate(runs[0].capabilities)
    baselines = [run.baseline for run in runs if run.baseline is not None]
    if baselines:
        merged = merged.with_baseline(_merged_baseline(baselines))
    return merged


def _merged_baseline(parts: Sequence[BaselineComparison]) -> BaselineComparison:
    """One comparison from the shards': a case is new, known or stale in the shard that ran it; an entry
    is not run only when no shard ran it."""
    new = sorted({case for part in parts for case in part.new_failures})
    known = sorted({case for part in parts for case in part.known_failures})
    stale = {entry.case: entry for part in parts for entry in part.stale_entries}
    judged = set(new) | set(known) | set(stale)
    not_run = sorted({case for part in parts for case in part.not_run} - judged)
    return BaselineComparison(
        file=parts[0].file,
        new_failures=tuple(new),
        known_failures=tuple(known),
        stale_entries=tuple(StaleEntry(case=entry.case, why=entry.why) for entry in stale.values()),
        not_run=tuple(not_run),
    )
