"""What the kit saw of one case, in order: the observation the judge reads and the snapshot it keeps.

The world (``_run/``) fills an :class:`Observation` while it plays the case; the judge (``judge.py``)
reads it, and :meth:`Observation.snapshot` is its normalised form, compared with the stored snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relavium_conformance._judge.matching import normalise
from relavium_conformance._report.results import Difference
from relavium_conformance._wire.adapters import WirePoint

__all__ = ["Observation", "compaction_snapshot"]


@dataclass
class Observation:
    """Everything the kit saw during one case, in order."""

    session_id: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    provider_requests: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    confirms: list[dict[str, Any]] = field(default_factory=list)
    sleeps: list[float] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    costs: list[dict[str, Any]] = field(default_factory=list)
    admissions: list[dict[str, Any]] = field(default_factory=list)  # host.admit, with its decision
    usage: list[dict[str, Any]] = field(default_factory=list)  # host.usage calls, in order
    record: dict[str, Any] | None = None
    exports: list[dict[str, Any]] = field(default_factory=list)
    summary_requests: list[dict[str, Any]] = field(default_factory=list)
    compaction_starts: list[dict[str, Any]] = field(default_factory=list)
    estimate_requests: list[dict[str, Any]] = field(default_factory=list)  # provider.estimate calls
    resolutions: list[dict[str, Any]] = field(default_factory=list)  # host.resolveProvider calls
    instance_starts: list[int] = field(default_factory=lambda: [0])  # event index of each instance
    violations: list[Difference] = field(default_factory=list)  # what the kit refused: root causes
    differences: list[Difference] = field(default_factory=list)
    #: Where the implementation broke, when the wire ties it to a request (see ``Adapter.breakage``).
    broken_at: WirePoint | None = None
    #: The case's other sessions (steps naming ``session``), each observed on its own, by name.
    others: dict[str, Observation] = field(default_factory=dict)

    def snapshot(self, workdir: str | None) -> dict[str, Any]:
        raw = self._raw()
        ids = [self.session_id or "", *(other.session_id or "" for other in self.others.values())]
        if self.others:  # older snapshots stay as they were
            raw["sessions"] = {name: other._raw() for name, other in self.others.items()}
        value: dict[str, Any] = normalise(raw, session_ids=ids, workdir=workdir)
        return value

    def _raw(self) -> dict[str, Any]:
        raw = {
            "results": self.results,
            "events": self.events,
            "provider_requests": self.provider_requests,
            "tool_calls": self.tool_calls,
            "confirms": self.confirms,
            "sleeps": self.sleeps,
            "rows": self.rows,
            "commits": self.commits,
            "costs": self.costs,
            "exports": self.exports,
            **{k: v for k, v in (("admissions", self.admissions), ("usage", self.usage)) if v},
        }
        raw.update(compaction_snapshot(self))  # only what a compaction case observed: older ones stay
        return raw


def compaction_snapshot(observed: Any) -> dict[str, Any]:
    """The compaction observations a snapshot holds: only those a case made (older snapshots stay as they
    were): the summary passes with the acknowledgements, the estimates and the resolutions."""
    out: dict[str, Any] = {}
    if observed.summary_requests or observed.compaction_starts:
        out["summary_requests"] = observed.summary_requests
        out["compaction_starts"] = observed.compaction_starts
    for name in ("estimate_requests", "resolutions"):
        if getattr(observed, name):
            out[name] = getattr(observed, name)
    return out
