"""The clause catalogue: the kit's unit of truth, loaded from ``fixtures/clauses/``.

A clause is one normative rule of a specification with a stable id (``AS-<AREA>-<NNN>`` for the agent
session spec, ``SS-<AREA>-<NNN>`` for the session store contract), the section it comes from, a one-line
summary in the kit's own words, the sentences it is drawn from (each as a short anchor plus the
fingerprint of the normalised sentence, see :mod:`relavium_conformance._corpus.coverage`), a status and the
capability a case needs to check it.

Statuses:

* ``testable``: the kit writes conformance cases for it;
* ``kit-defined``: its shape lives in a companion document we lack; the kit's choice is an entry of
  ``docs/kit-defined.md`` named by ``kit_defined``;
* ``host-specific``: it cannot be observed across languages; ``reason`` says why;
* ``informative``: the sentence states no checkable rule (context, history, cross-references).

Ids are never reused: a clause that goes away is listed in ``fixtures/clauses/retired.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, model_validator

from relavium_conformance._data import fixtures_dir, read_yaml
from relavium_conformance._errors import KitUsageError

__all__ = [
    "AREAS",
    "CAPABILITIES",
    "CLAUSE_ID_PATTERN",
    "STATUSES",
    "Catalogue",
    "CatalogueFile",
    "Clause",
    "SentenceRef",
    "area_of",
    "catalogue_files",
    "clause_ids",
    "get",
    "load_catalogue",
    "load_catalogue_from",
    "retired_ids",
    "unknown_ids",
]

CLAUSE_ID_PATTERN = r"^(AS|SS)-[A-Z]{2,6}-\d{3}$"
_ID = re.compile(CLAUSE_ID_PATTERN)
KD_ID_PATTERN = r"^KD-[A-Z]{2,6}-\d+$"

Status = Literal["testable", "kit-defined", "host-specific", "informative"]
Capability = Literal[
    "core",
    "user-commands",
    "persistence",
    "resume",
    "memory-policy",
    "compaction",
    "trim",
    "overflow",
    "export",
    "budget",
    "usage",
    "session-store",
    "wire",
    "request-edits",
    "overlapped-usage",
]
STATUSES: tuple[str, ...] = ("testable", "kit-defined", "host-specific", "informative")
CAPABILITIES: tuple[str, ...] = get_args(Capability)

# Areas of the agent session spec (AS) and of the session store contract (SS).
AREAS: dict[str, dict[str, str]] = {
    "AS": {
        "INTRO": "preamble: what the document is and how it relates to its schemas",
        "SESS": "what a session is (and is not)",
        "LIFE": "lifecycle and the operation table",
        "PROJ": "request projection, memory policy getters, resume state reconstruction",
        "COMP": "measured compaction and one-shot recovery",
        "FIN": "financial request inputs",
        "OVF": "classified context-window failures",
        "CAP": "hard turn cap and slot accounting",
        "OBS": "observer failures, cleanup and cancellation precedence",
        "CTX": "session context",
        "MSG": "session messages, durable rows and the persistence latch",
        "LEG": "legacy empty-final compatibility",
        "SEC": "tools, secrets and security scope",
        "EVT": "events",
        "EXP": "export to workflow",
        "VAL": "validation and persistence",
        "USE": "usage coverage through session lifetime",
    },
    "SS": {
        "GEN": "the store's general contract: conflicts, durability declaration",
        "TYPE": "record and row shapes",
        "LIFE": "acquire, touch, release, forget, pin, size, dispose",
        "PLACE": "placement of subagent sessions and its six obligations",
        "RUN": "task-run notes and the session list",
        "FORK": "forking a session",
        "OWN": "the three states of ownerOf",
        "REG": "first-write-wins register",
        "INC": "incarnationOf",
        "HIST": "boundedTail and hasConversationContent",
    },
}


class _Model(BaseModel):
    # Strings are strict (a YAML number or boolean is refused, not coerced); sequences are read as tuples.
    model_config = ConfigDict(frozen=True, extra="forbid")


class SentenceRef(_Model):
    """One source sentence of a clause: a short anchor of its own words and its fingerprint."""

    anchor: Annotated[StrictStr, Field(min_length=3)]
    fingerprint: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{16}$")]

    @model_validator(mode="after")
    def _short_anchor(self) -> SentenceRef:
        if len(self.anchor.split()) > 6:
            raise ValueError("an anchor has at most six words")
        return self


class Clause(_Model):
    """One rule of a specification."""

    id: Annotated[StrictStr, Field(pattern=CLAUSE_ID_PATTERN)]
    section: Annotated[StrictStr, Field(min_length=1)]
    summary: Annotated[StrictStr, Field(min_length=8)]
    sentences: Annotated[tuple[SentenceRef, ...], Field(min_length=1)]
    status: Status
    capability: Capability
    reason: StrictStr | None = None
    kit_defined: Annotated[StrictStr, Field(pattern=KD_ID_PATTERN)] | None = None

    @model_validator(mode="after")
    def _status_fields(self) -> Clause:
        if self.status == "host-specific" and not self.reason:
            raise ValueError(f"{self.id}: a host-specific clause says why (reason)")
        if self.status == "kit-defined" and not self.kit_defined:
            raise ValueError(f"{self.id}: a kit-defined clause names its kit_defined entry")
        if self.status != "kit-defined" and self.kit_defined:
            raise ValueError(f"{self.id}: only a kit-defined clause names a kit_defined entry")
        if "\n" in self.summary:
            raise ValueError(f"{self.id}: the summary is one line")
        if area_of(self.id) not in AREAS[self.id[:2]]:
            raise ValueError(f"{self.id}: unknown area {area_of(self.id)!r}")
        return self

    @property
    def area(self) -> str:
        return area_of(self.id)


class CatalogueFile(_Model):
    """One catalogue file: the clauses of one specification."""

    spec: Annotated[StrictStr, Field(min_length=1)]
    prefix: Literal["AS", "SS"]
    clauses: Annotated[tuple[Clause, ...], Field(min_length=1)]

    @model_validator(mode="after")
    def _prefix_matches(self) -> CatalogueFile:
        for clause in self.clauses:
            if not clause.id.startswith(self.prefix + "-"):
                raise ValueError(f"{clause.id} does not belong in a {self.prefix} catalogue")
        return self


class Catalogue(_Model):
    """Every clause of every specification, with unique ids."""

    files: tuple[CatalogueFile, ...]
    retired: tuple[StrictStr, ...] = ()

    @model_validator(mode="after")
    def _unique_ids(self) -> Catalogue:
        seen: set[str] = set()
        for clause in self.clauses:
            if clause.id in seen:
                raise ValueError(f"clause id {clause.id} is used twice")
            seen.add(clause.id)
        reused = seen & set(self.retired)
        if reused:
            raise ValueError(f"retired clause ids reused: {sorted(reused)}")
        for rid in self.retired:
            if not _ID.match(rid):
                raise ValueError(f"retired id {rid!r} is not a clause id")
        return self

    @property
    def clauses(self) -> tuple[Clause, ...]:
        return tuple(clause for f in self.files for clause in f.clauses)

    def by_id(self) -> dict[str, Clause]:
        return {clause.id: clause for clause in self.clauses}

    def testable(self, capability: str | None = None) -> tuple[Clause, ...]:
        """The clauses cases are written for, optionally only those needing ``capability``."""
        return tuple(c for c in self.clauses if c.status == "testable" and capability in (None, c.capability))


def area_of(clause_id: str) -> str:
    """The area of a clause id: ``AS-LIFE-001`` -> ``LIFE``."""
    if not _ID.match(clause_id):
        raise KitUsageError(f"{clause_id!r} is not a clause id (AS-<AREA>-<NNN> or SS-<AREA>-<NNN>)")
    return clause_id.split("-")[1]


def catalogue_files(root: Path | None = None) -> list[Path]:
    folder = (root or fixtures_dir()) / "clauses"
    return sorted(p for p in folder.glob("*.yaml") if p.name != "retired.yaml")


def _read_yaml(path: Path) -> object:
    return read_yaml(path, "catalogue file")


def load_catalogue_from(folder: Path) -> Catalogue:
    """Load and validate every catalogue file of ``folder`` (``<folder>/clauses/*.yaml``)."""
    files = []
    for path in catalogue_files(folder):
        try:
            files.append(CatalogueFile.model_validate(_read_yaml(path)))
        except ValidationError as exc:
            raise KitUsageError(f"{path.name}: invalid clause catalogue: {exc}") from None
    retired_path = folder / "clauses" / "retired.yaml"
    retired = _read_yaml(retired_path) if retired_path.is_file() else []
    if not isinstance(retired, list) or not all(isinstance(r, str) for r in retired):
        raise KitUsageError("retired.yaml: must be a list of clause ids")
    try:
        return Catalogue(files=tuple(files), retired=tuple(retired))
    except ValidationError as exc:
        raise KitUsageError(f"invalid clause catalogue: {exc}") from None


@cache
def load_catalogue() -> Catalogue:
    """The kit's catalogue (both files), loaded once."""
    return load_catalogue_from(fixtures_dir())


def clause_ids() -> frozenset[str]:
    return frozenset(load_catalogue().by_id())


def retired_ids() -> frozenset[str]:
    return frozenset(load_catalogue().retired)


def get(clause_id: str) -> Clause:
    """The clause with ``clause_id``; :class:`KitUsageError` when there is none."""
    area_of(clause_id)
    try:
        return load_catalogue().by_id()[clause_id]
    except KeyError:
        raise KitUsageError(f"unknown clause id {clause_id}") from None


def unknown_ids(ids: Iterable[str]) -> list[str]:
    """The ids of ``ids`` that name no clause, in order, without repeats."""
    known = clause_ids()
    out: list[str] = []
    for cid in ids:
        if cid not in known and cid not in out:
            out.append(cid)
    return out
