"""The baseline: an implementer-owned list of known failures, and how a run is gated against it.

A baseline file (``--baseline FILE``, YAML or JSON, ``schemas/baseline.schema.json``) names the cases an
implementation is known to fail, each with a reason::

    implementation: my-port            # optional: refuse the file for another implementation
    profile: agent-session             # optional: refuse the file for a run of the other profile
    capabilities: [core, resume]       # optional: what the implementation declared when it was written
    known_failures:
      - case: lifecycle/abort-idle-is-noop
        reason: abort on an idle session still emits an event (issue 12)
        clauses: [AS-LIFE-004]          # optional, for the reader

:func:`compare` sorts a run against it: failures the file does not list are *new*, entries whose case now
passes or no longer exists are *stale*, the rest are *known*.  A run passes the gate only with neither new
failures nor stale entries, so a fixed bug must also be taken out of the baseline.

The capabilities a baseline records are a floor: :func:`capability_gate` fails a run that declares fewer
(dropping a capability would otherwise turn its failing cases into quiet ``unsupported`` ones), and adds
the capabilities a certification run asks for (``--require-capability``, ``--require-all``).
"""

from __future__ import annotations

import io
import json
import stat
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from relavium_conformance._corpus.catalogue import CLAUSE_ID_PATTERN
from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.atomic import write_text_atomically
from relavium_conformance._report.results import (
    CASE_ID_PATTERN,
    BaselineComparison,
    CapabilityGate,
    CaseStatus,
    RunResult,
    StaleEntry,
    StaleWhy,
)
from relavium_conformance._wire.model import KitStrict

__all__ = [
    "PROFILES",
    "Baseline",
    "KnownFailure",
    "baseline_from_run",
    "capability_gate",
    "check_baseline_fits",
    "check_baseline_implementation",
    "compare",
    "load_baseline",
    "parse_baseline",
    "write_baseline",
]


class KnownFailure(KitStrict):
    case: Annotated[str, Field(pattern=CASE_ID_PATTERN)]
    reason: Annotated[str, Field(min_length=1)]
    clauses: tuple[Annotated[str, Field(pattern=CLAUSE_ID_PATTERN)], ...] = ()


PROFILES = ("agent-session", "session-store")
"""The contracts a run judges (``run --profile``); a store case's id starts with ``store/``."""


class Baseline(KitStrict):
    implementation: Annotated[str, Field(min_length=1)] | None = None
    profile: Literal["agent-session", "session-store"] | None = None
    capabilities: tuple[Annotated[str, Field(min_length=1)], ...] | None = None
    known_failures: tuple[KnownFailure, ...]

    def cases(self) -> list[str]:
        return [entry.case for entry in self.known_failures]

    def written_for(self) -> str | None:
        """The profile the file was written for: as it says, else as its case ids show (a store case's id
        starts with ``store/``, no session case's does), else unknown (``None``: no entry to tell by)."""
        if self.profile is not None:
            return self.profile
        stores = {entry.case.startswith("store/") for entry in self.known_failures}
        return None if len(stores) != 1 else PROFILES[1] if stores == {True} else PROFILES[0]


def check_baseline_fits(baseline: Baseline, *, profile: str, source: str) -> None:
    """Refuse (:class:`KitUsageError`) a baseline written for the other profile, before any case runs."""
    written = baseline.written_for()
    if written is not None and written != profile:
        raise KitUsageError(f"{source}: written for --profile {written}, but this run is --profile {profile}")


def check_baseline_implementation(baseline: Baseline, name: str, *, source: str) -> None:
    """Refuse (:class:`KitUsageError`) a baseline written for another implementation than ``name``."""
    if baseline.implementation is not None and baseline.implementation != name:
        raise KitUsageError(
            f"{source}: written for implementation {baseline.implementation!r}, but this run tests {name!r}"
        )


_FIXED_MESSAGES = {
    "extra_forbidden": "unknown key refused",
    "missing": "required key missing",
}


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def parse_baseline(data: Any, *, source: str = "baseline") -> Baseline:
    """Validate a loaded baseline document.

    Raises :class:`KitUsageError` with a fixed message (``unknown key refused``, ``required key missing``,
    or ``invalid value``) and the location of the first problem, never the offending value; a case listed
    twice is refused too.
    """
    try:
        baseline = Baseline.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = _FIXED_MESSAGES.get(first["type"], "invalid value")
        raise KitUsageError(f"{source}: {message} at {_location(first['loc'])}") from None
    repeated = sorted(case for case, n in Counter(baseline.cases()).items() if n > 1)
    if repeated:
        raise KitUsageError(f"{source}: a case is listed twice: {', '.join(repeated)}")
    return baseline


def load_baseline(path: Path) -> Baseline:
    """Read a baseline from a YAML or JSON file (YAML 1.2 reads JSON too)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO or a device would block or never end
            raise KitUsageError(f"{path}: the baseline is not a regular file")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KitUsageError(f"{path}: cannot read the baseline file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise KitUsageError(f"{path}: the baseline file is not UTF-8 (byte {exc.start})") from None
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except (YAMLError, ValueError) as exc:  # ValueError: ruamel misreads '-_' as a float it cannot convert
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KitUsageError(f"{path}: the baseline file is not valid YAML or JSON{where}") from None
    if data is None:
        raise KitUsageError(f"{path}: the baseline file is empty")
    return parse_baseline(data, source=str(path))


def compare(
    run: RunResult,
    baseline: Baseline,
    *,
    file: str = "",
    all_case_ids: Collection[str] | None = None,
) -> BaselineComparison:
    """Sort ``run`` against ``baseline``.

    ``all_case_ids`` is every case the kit has, selected or not (default: the run's cases).  An entry whose
    case is not among them is stale (``missing``); one whose case passed is stale (``passes``); one whose
    case exists but was not selected, or was unsupported, is ``not_run``.  A failed or errored case the
    baseline does not list is a new failure.  A baseline written for another implementation is refused.
    """
    check_baseline_implementation(baseline, run.implementation.name, source=file or "baseline")
    by_id = {case.id: case for case in run.cases}
    existing = set(all_case_ids) | set(by_id) if all_case_ids is not None else set(by_id)
    listed = set(baseline.cases())
    stale: list[StaleEntry] = []
    known: list[str] = []
    not_run: list[str] = []
    for entry in baseline.known_failures:
        case = by_id.get(entry.case)
        if entry.case not in existing:
            stale.append(StaleEntry(case=entry.case, why=StaleWhy.MISSING))
        elif case is None or case.status is CaseStatus.UNSUPPORTED:
            not_run.append(entry.case)
        elif case.status is CaseStatus.PASSED:
            stale.append(StaleEntry(case=entry.case, why=StaleWhy.PASSES))
        else:
            known.append(entry.case)
    new = [case.id for case in run.failures() if case.id not in listed]
    return BaselineComparison(
        file=file,
        new_failures=tuple(new),
        stale_entries=tuple(stale),
        known_failures=tuple(known),
        not_run=tuple(not_run),
    )


def baseline_from_run(
    run: RunResult, *, previous: Baseline | None = None, profile: str | None = None
) -> Baseline:
    """A baseline listing exactly the run's failed and errored cases.

    A reason already written in ``previous`` for the same case is kept (it is the implementer's prose);
    otherwise the case's own one-line reason is used.
    """
    reasons = {entry.case: entry.reason for entry in previous.known_failures} if previous else {}
    entries = tuple(
        KnownFailure(
            case=case.id,
            reason=reasons.get(case.id) or case.reason or case.status.value,
            clauses=case.clauses,
        )
        for case in run.failures()
    )
    return Baseline(
        implementation=run.implementation.name,
        profile=profile,  # (one of PROFILES: the run's --profile)
        capabilities=tuple(sorted(run.implementation.capabilities)) or None,
        known_failures=entries,
    )


def capability_gate(
    run: RunResult,
    *,
    baseline: Baseline | None = None,
    baseline_file: str = "baseline",
    required: Collection[str] = (),
    require_all: Collection[str] | None = None,
) -> CapabilityGate | None:
    """What the run had to declare and what it did not; None when nothing was required.

    ``required`` comes from ``--require-capability``; ``require_all`` is the whole vocabulary when
    ``--require-all`` was given.  A name outside the catalogue's vocabulary is a usage error, caught by
    the caller before the run.
    """
    wanted: dict[str, None] = {}
    sources: list[str] = []
    if baseline is not None and baseline.capabilities:
        wanted.update(dict.fromkeys(baseline.capabilities))
        sources.append(baseline_file)
    if required:
        wanted.update(dict.fromkeys(required))
        sources.append("--require-capability")
    if require_all is not None:
        wanted.update(dict.fromkeys(require_all))
        sources.append("--require-all")
    if not sources:
        return None
    declared = set(run.implementation.capabilities)
    return CapabilityGate(
        required=tuple(sorted(wanted)),
        missing=tuple(sorted(name for name in wanted if name not in declared)),
        sources=tuple(sources),
    )


_HEADER = (
    "# Known failures of {name} under relavium-conformance {version}.\n"
    "# Written by --write-baseline; see docs/results.md.  Edit the reasons freely; a case that\n"
    "# passes again must be removed, or the run fails as stale.\n"
)


def write_baseline(
    run: RunResult, path: Path, *, previous: Baseline | None = None, profile: str | None = None
) -> Baseline:
    """Write a baseline of the run's current failures to ``path`` and return it.

    A ``.json`` path gets JSON; any other gets YAML with a short header comment.
    """
    baseline = baseline_from_run(run, previous=previous, profile=profile)
    document = baseline.model_dump(mode="json", exclude_none=True)
    if not document.get("capabilities"):
        document.pop("capabilities", None)
    for entry in document["known_failures"]:
        if not entry["clauses"]:
            del entry["clauses"]
    if path.suffix.lower() == ".json":
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    else:
        yaml = YAML()  # round-trip dumper: keeps the key order case, reason, clauses
        yaml.indent(mapping=2, sequence=4, offset=2)
        buffer = io.StringIO()
        yaml.dump(document, buffer)
        text = _HEADER.format(name=run.implementation.name, version=run.kit.version) + buffer.getvalue()
    write_text_atomically(path, text)
    return baseline
