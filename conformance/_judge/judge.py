"""Judging one case: every expected observation its transcript states, checked against what was observed.

The differences come from the case's own expectations (marked with the kit choices they rest on), the
world's violations, the event schema, the envelope of each instance's event stream, and (for the
reference engine) the stored snapshot.  A difference resting on a shape entry (the kit's own exact form
where a clause states a property, :mod:`relavium_conformance._judge.kit_choices`) is a kit-choice note: it
joins the warnings and never fails the case.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from relavium_conformance._corpus.cases import Case, CaseExpect, snapshot_path
from relavium_conformance._corpus.catalogue import Catalogue, Clause, load_catalogue
from relavium_conformance._judge.events import check_event_shapes
from relavium_conformance._judge.kit_choices import SHAPE_CHOICES, split_notes
from relavium_conformance._judge.matching import check_envelope, match
from relavium_conformance._report.results import Difference

if TYPE_CHECKING:
    from relavium_conformance._judge.observation import Observation

__all__ = ["case_kit_choices", "judge", "resting_on"]


def resting_on(differences: list[Difference], kit_defined: tuple[str, ...]) -> list[Difference]:
    """``differences`` marked as resting on ``kit_defined`` (generic checks keep their own marks)."""
    return [
        d
        if d.clauses
        else d.model_copy(update={"kit_defined": tuple(dict.fromkeys([*d.kit_defined, *kit_defined]))})
        for d in differences
    ]


_TABLE: list[tuple[Catalogue, dict[str, Clause]]] = []  # (the catalogue, its clauses by id): read only


def _clauses_by_id() -> dict[str, Clause]:
    """``load_catalogue().by_id()``, built once for each catalogue object (not once per case)."""
    catalogue = load_catalogue()
    if not _TABLE or _TABLE[0][0] is not catalogue:
        _TABLE[:] = [(catalogue, catalogue.by_id())]
    return _TABLE[0][1]


def case_kit_choices(case: Case) -> tuple[str, ...]:
    """The KD- choices a case's own assertions rest on: those it names, and, when every clause it cites is
    kit-defined, those clauses' binding entries (a shape entry's clause is judged by its property; only a
    ``$shape`` expectation rests on the shape itself)."""
    clauses = _clauses_by_id()
    cited = [clauses[c] for c in case.clauses if c in clauses]
    named = list(case.kit_defined)
    if cited and all(c.status == "kit-defined" for c in cited):
        named += [c.kit_defined for c in cited if c.kit_defined and c.kit_defined not in SHAPE_CHOICES]
    return tuple(dict.fromkeys(named))


def _expectations(expect: CaseExpect, observed: Observation) -> list[Difference]:
    """Each stated expectation's differences, marked with the choices that expectation rests on."""
    out: list[Difference] = []
    for name, found in _unmet(expect, observed):
        marks = expect.kit_defined.get(name, ())
        out += resting_on(found, marks) if marks else found
    return out


def _unmet(expect: CaseExpect, observed: Observation) -> Iterator[tuple[str, list[Difference]]]:
    """(expectation name, its differences) for every expectation the case states, in a fixed order."""
    events = observed.events
    for name in _ORDER:
        wanted = getattr(expect, name)
        if wanted is None:
            continue
        if name == "session_events":
            actual = [e.get("type") for e in events if str(e.get("type", "")).startswith("session:")]
            yield name, match(wanted if isinstance(wanted, dict) else list(wanted), actual, name)
        elif name == "event_types":
            yield name, match(list(wanted), [e.get("type") for e in events], name)
        elif name == "event_runs":
            types = [e.get("type") for e in events]
            yield (
                name,
                match(list(wanted), [t for n, t in enumerate(types) if n == 0 or types[n - 1] != t], name),
            )
        elif name == "events":
            yield (
                name,
                [
                    d
                    for kind, items in wanted.items()
                    for d in match(
                        list(items) if isinstance(items, tuple) else items,
                        [e for e in events if e.get("type") == kind],
                        f"events[{kind}]",
                    )
                ],
            )
        elif name == "absent_events":
            counts = {kind: sum(1 for e in events if e.get("type") == kind) for kind in wanted}
            yield (
                name,
                [
                    Difference(
                        path=f"events[{kind}]", message="must not be emitted", expected=0, actual=count
                    )
                    for kind, count in counts.items()
                    if count
                ],
            )
        elif name.endswith("_count"):
            listed = name.removesuffix("_count") + "s"
            yield name, match(wanted, len(getattr(observed, listed)), name)
        elif name == "record":
            yield name, match(wanted, observed.record, name)
        else:
            whole = list(wanted) if isinstance(wanted, tuple) else wanted  # a list, or one operator on it
            found = match(whole, getattr(observed, name), name)
            # what reached the governor and the writer is observed in the kit's own shapes
            yield name, resting_on(found, _OWN_SHAPES[name]) if name in _OWN_SHAPES else found


_ORDER = (
    "session_events",
    "event_types",
    "event_runs",
    "events",
    "absent_events",
    "provider_requests",
    "provider_request_count",
    "summary_requests",
    "summary_request_count",
    "compaction_starts",
    "estimate_requests",
    "resolutions",
    "tool_calls",
    "confirms",
    "rows",
    "commits",
    "costs",
    "exports",
    "record",
    "admissions",
    "usage",
)
_OWN_SHAPES: dict[str, tuple[str, ...]] = {"admissions": ("KD-FIN-2", "KD-COMP-2"), "usage": ("KD-USE-1",)}


def judge(
    case: Case, observed: Observation, snapshot: dict[str, Any], compare: bool
) -> tuple[list[Difference], list[str]]:
    """Every expected observation of ``case`` that ``observed`` does not meet, and the warnings."""
    # root causes first: what the kit refused explains the step results and observations after it
    differences = list(observed.violations)
    differences += observed.differences
    differences += _expectations(case.expect, observed)
    for name, other in observed.others.items():
        found = [*other.violations, *other.differences]
        found += _expectations((case.expect.sessions or {}).get(name) or CaseExpect(), other)
        differences += _in_session(name, found)
    differences = resting_on(differences, case_kit_choices(case))
    warnings: list[str] = []
    for name, each in [("", observed), *observed.others.items()]:
        shapes, said = check_event_shapes(each.events)
        differences += _in_session(name, [*shapes, *_envelopes(each)])
        warnings += [f"session {name}: {w}" if name else w for w in said]
    differences += _distinct_ids(observed)
    if compare:
        differences += _snapshot_differences(case, snapshot)
    differences, notes = split_notes(differences)
    return differences, [*warnings, *notes]


def _envelopes(observed: Observation) -> list[Difference]:
    out: list[Difference] = []
    starts = [*observed.instance_starts, len(observed.events)]
    for number, (begin, end) in enumerate(itertools.pairwise(starts)):
        # the first instance numbers from 0 (KD-EVT-2); a resumed one may restart or continue
        # the session's numbering, gap-free from its own first event (KD-EVT-4)
        out += check_envelope(
            observed.events[begin:end], observed.session_id, first=0 if number == 0 else None
        )
    return out


def _in_session(name: str, differences: list[Difference]) -> list[Difference]:
    """``differences`` of the case's session ``name`` (none: its first), located under ``sessions.name``."""
    if not name:
        return differences
    return [d.model_copy(update={"path": f"sessions.{name}.{d.path}"}) for d in differences]


def _distinct_ids(observed: Observation) -> list[Difference]:
    """Two sessions of one case never share a session id (each start allocates its own, AS-LIFE-005)."""
    seen: dict[str, str] = {}
    out: list[Difference] = []
    for name, each in [("main", observed), *observed.others.items()]:
        sid = each.session_id
        if sid is None:
            continue
        if sid in seen:
            message = f"sessions {seen[sid]} and {name} were given the same session id"
            out.append(
                Difference(path=f"sessions.{name}.session_id", message=message, clauses=("AS-LIFE-005",))
            )
        seen.setdefault(sid, name)
    return out


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
