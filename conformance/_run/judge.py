"""Judging one case: every expected observation its transcript states, checked against what was observed.

The differences come from the case's own expectations (marked with the kit choices they rest on), the
world's violations, the event schema, the envelope of each instance's event stream, and (for the
reference engine) the stored snapshot.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any

from relavium_conformance._corpus.cases import Case, snapshot_path
from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._report.results import Difference
from relavium_conformance._run.events import check_event_shapes
from relavium_conformance._run.matching import check_envelope, match

if TYPE_CHECKING:
    from relavium_conformance._run.execute import Observation

__all__ = ["case_kit_choices", "judge", "resting_on"]


def resting_on(differences: list[Difference], kit_defined: tuple[str, ...]) -> list[Difference]:
    """``differences`` marked as resting on ``kit_defined`` (generic checks keep their own marks)."""
    return [
        d
        if d.clauses
        else d.model_copy(update={"kit_defined": tuple(dict.fromkeys([*d.kit_defined, *kit_defined]))})
        for d in differences
    ]


def case_kit_choices(case: Case) -> tuple[str, ...]:
    """The KD- choices a case's own assertions rest on: those it names, and, when every clause it cites is
    kit-defined, those clauses' entries."""
    clauses = load_catalogue().by_id()
    cited = [clauses[c] for c in case.clauses if c in clauses]
    named = list(case.kit_defined)
    if cited and all(c.status == "kit-defined" for c in cited):
        named += [c.kit_defined for c in cited if c.kit_defined]
    return tuple(dict.fromkeys(named))


def _expectations(case: Case, observed: Observation) -> list[Difference]:
    expect = case.expect
    events = observed.events
    out: list[Difference] = []
    if expect.session_events is not None:
        actual = [e.get("type") for e in events if str(e.get("type", "")).startswith("session:")]
        out += match(list(expect.session_events), actual, "session_events")
    if expect.event_types is not None:
        out += match(list(expect.event_types), [e.get("type") for e in events], "event_types")
    for kind, wanted in (expect.events or {}).items():
        out += match(list(wanted), [e for e in events if e.get("type") == kind], f"events[{kind}]")
    for kind in expect.absent_events or ():
        count = sum(1 for e in events if e.get("type") == kind)
        if count:
            out.append(
                Difference(path=f"events[{kind}]", message="must not be emitted", expected=0, actual=count)
            )
    if expect.provider_requests is not None:
        out += match(list(expect.provider_requests), observed.provider_requests, "provider_requests")
    if expect.provider_request_count is not None:
        out += match(expect.provider_request_count, len(observed.provider_requests), "provider_request_count")
    if expect.summary_requests is not None:
        out += match(list(expect.summary_requests), observed.summary_requests, "summary_requests")
    if expect.summary_request_count is not None:
        out += match(expect.summary_request_count, len(observed.summary_requests), "summary_request_count")
    if expect.compaction_starts is not None:
        out += match(list(expect.compaction_starts), observed.compaction_starts, "compaction_starts")
    if expect.tool_calls is not None:
        out += match(list(expect.tool_calls), observed.tool_calls, "tool_calls")
    if expect.confirms is not None:
        out += match(list(expect.confirms), observed.confirms, "confirms")
    if expect.rows is not None:
        out += match(list(expect.rows), observed.rows, "rows")
    if expect.commits is not None:
        out += match(list(expect.commits), observed.commits, "commits")
    if expect.costs is not None:
        out += match(list(expect.costs), observed.costs, "costs")
    if expect.exports is not None:
        out += match(list(expect.exports), observed.exports, "exports")
    if expect.record is not None:
        out += match(expect.record, observed.record, "record")
    # what reached the governor and the writer is observed in the kit's own shapes (KD-FIN-2, KD-USE-1)
    if expect.admissions is not None:
        found = match(list(expect.admissions), observed.admissions, "admissions")
        out += resting_on(found, ("KD-FIN-2", "KD-COMP-2"))
    if expect.usage is not None:
        out += resting_on(match(list(expect.usage), observed.usage, "usage"), ("KD-USE-1",))
    return out


def judge(
    case: Case, observed: Observation, snapshot: dict[str, Any], compare: bool
) -> tuple[list[Difference], list[str]]:
    """Every expected observation of ``case`` that ``observed`` does not meet, and the warnings."""
    # root causes first: what the kit refused explains the step results and observations after it
    differences = list(observed.violations)
    differences += observed.differences
    differences += _expectations(case, observed)
    differences = resting_on(differences, case_kit_choices(case))
    shapes, warnings = check_event_shapes(observed.events)
    differences += shapes
    starts = [*observed.instance_starts, len(observed.events)]
    for number, (begin, end) in enumerate(itertools.pairwise(starts)):
        # the first instance numbers from 0 (KD-EVT-2); a resumed one may restart or continue
        # the session's numbering, gap-free from its own first event (KD-EVT-4)
        differences += check_envelope(
            observed.events[begin:end], observed.session_id, first=0 if number == 0 else None
        )
    if compare:
        differences += _snapshot_differences(case, snapshot)
    return differences, list(warnings)


def _snapshot_differences(case: Case, snapshot: dict[str, Any]) -> list[Difference]:
    path = snapshot_path(case)
    if not path.is_file():
        return []
    stored = json.loads(path.read_text(encoding="utf-8"))
    if stored == snapshot:
        return []
    return [
        Difference(path=f"snapshot.{key}", message="differs from the reference snapshot")
        for key in sorted(set(stored) | set(snapshot))
        if stored.get(key) != snapshot.get(key)
    ]
