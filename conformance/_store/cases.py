"""The session-store profile's cases: the YAML format, its strict model, and discovery.

A store case (``fixtures/store/cases/*.yaml``) is a sequence of steps against one store, over one or
more connections of the implementation that all open the same storage location::

    id: store/register-first-write-wins
    title: ...
    clauses: [SS-REG-001, SS-REG-002]
    needs: [ownership]                 # store:<word> the store must declare (else: unsupported)
    steps:
      - {op: register, params: {sessionId: s1, owner: alice}}
      - {op: register, via: b, params: {sessionId: s1, owner: bob}}
      - {op: ownerOf, params: {sessionId: s1}, expect: {owner: alice}}

Step kinds (exactly one of ``op``, ``advance``, ``restart``, ``concurrent``, ``check``, ``same``):

* ``op`` calls ``store.<op>`` (or ``pure.<op>`` for the helpers) on connection ``via`` (default ``a``;
  another name opens another connection over the same location).  Without ``error`` the call must
  succeed and its answer match ``expect`` (``_judge/matching.py`` rules); with ``error`` it must be
  refused with that ``SessionError`` code (a list: any of them; ``any``: any refusal).  ``save`` keeps
  the answer: a later string ``"$name.path.to"`` in ``params``/``expect``/``check`` is replaced by it.
* ``advance: MS`` moves the kit's clock on every connection (``needs: [clock]``).
* ``restart: true`` disposes and stops every connection, then starts connection ``a`` again over the
  same location (``needs: [durable]`` or ``placements:durable``).
* ``concurrent: [[steps], [steps], ...]`` runs the racers at once (``count: N`` repeats the one racer N
  times; each racer's ``save`` then collects a list, racer by racer).
* ``check: "$name..."`` with ``expect``: match a saved value; ``same: {of: name, key: path}``: every
  item of a saved list agrees at ``path``.

``needs: [requireExisting]`` marks a case about the existence check itself (a store that declares
``store:rejects-requireExisting`` reads it unsupported).  Any other case whose steps acquire with
``requireExisting`` (a step written ``error: any`` aside: it accepts the rejection as it is) runs against
such a store up to the first of them, which must be refused; the case then books only SS-LIFE-007, and
its own clauses are judged by the cases that do without the option.  A scenario that reopens sessions
with the option (:data:`OPTION_SCENARIOS`) reads unsupported there; a generated ``history`` judges the
option as the store declares it (its model expects the refusal), so it runs against any store.

A ``scenario`` instead of ``steps`` names a kit-driven scenario with its parameters
(``register-race``: ``connections``, ``racers``, ``rounds``; ``release-owned``; the replica scenarios of
``_store/replicas.py``: ``append-race`` with ``replicas``, ``rounds``, ``batch``; ``kill-append`` with
``rounds``, ``batch``; ``kill-fork`` with ``size``; ``kill-restart`` with ``rounds``, ``batch``: the one
process of any durable store killed and started again, so it too runs in processes).

A case that ``needs: [replicas]`` (the store declares ``store:replicas``: processes that open one
location share one store) runs every connection, ``a`` included, as a process of its own: the
``store/replica-*`` cases.  An adapter that cannot start the implementation in processes reads them
``unsupported``, saying why.

Vector files (``fixtures/store/vectors/*.yaml``) are cases of the pure helpers: ``function`` names
``boundedTail``, ``hasConversationContent`` or ``isSessionConflict``; each vector has ``name``,
``input`` (the params) and ``expected`` (the exact answer).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from ruamel.yaml import YAML

from relavium_conformance._corpus.catalogue import CLAUSE_ID_PATTERN
from relavium_conformance._data import fixtures_dir
from relavium_conformance._errors import KitUsageError

__all__ = [
    "NEED_WORDS",
    "AnyStoreCase",
    "StoreCase",
    "StoreStep",
    "StoreVector",
    "StoreVectorCase",
    "load_store_cases",
    "store_cases_under",
    "store_dir",
]

NEED_WORDS = frozenset(
    {
        "forget",
        "pin",
        "noteTaskRun",
        "list",
        "listPlaced",
        "fork",
        "ownership",
        "incarnationOf",
        "replicas",
        "durable",
        "process-local",
        "placements",
        "placements:durable",
        "placements:process-local",
        "no-placements",
        "clock",
        "requireExisting",
        "rejects-requireExisting",
    }
)
PROCESS_SCENARIOS = frozenset({"kill-restart"})
"""The scenario kinds that run the store in processes of its own (to kill one) without it being
shared by several at once: a durable store that does not declare ``store:replicas`` runs them too."""
OPTION_SCENARIOS: frozenset[str] = frozenset()
"""The scenario kinds that reopen sessions with ``requireExisting`` whatever the store declares: none
today (the replica scenarios reopen in claim form where the store rejects the option; a ``history``
expects the declared refusal)."""
_ClauseIds = Annotated[tuple[Annotated[str, Field(pattern=CLAUSE_ID_PATTERN)], ...], Field(min_length=1)]
_CASE_ID = r"^store(-vectors)?/[a-z0-9][a-z0-9-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SameCheck(_Strict):
    of: str
    key: str


class StoreStep(_Strict):
    op: str | None = None
    via: Annotated[str, Field(pattern=r"^[a-z]$")] = "a"
    """The connection (a YAML 1.1 reader would take a key spelled ``on`` for a boolean)."""
    params: dict[str, Any] = Field(default_factory=dict)
    expect: Any = None
    error: str | tuple[str, ...] | None = None
    save: str | None = None
    advance: Annotated[int, Field(gt=0)] | None = None
    restart: bool = False
    concurrent: tuple[tuple[StoreStep, ...], ...] | None = None
    count: Annotated[int, Field(ge=2)] | None = None
    check: str | None = None
    same: SameCheck | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> StoreStep:
        kinds = [
            self.op is not None,
            self.advance is not None,
            self.restart,
            self.concurrent is not None,
            self.check is not None,
            self.same is not None,
        ]
        if sum(kinds) != 1:
            raise ValueError("a step is exactly one of op, advance, restart, concurrent, check, same")
        if self.count is not None and (self.concurrent is None or len(self.concurrent) != 1):
            raise ValueError("count repeats exactly one concurrent racer")
        if self.expect is not None and self.error is not None:
            raise ValueError("a step expects an answer or a refusal, not both")
        return self

    @property
    def refusals(self) -> tuple[str, ...] | None:
        if self.error is None:
            return None
        return (self.error,) if isinstance(self.error, str) else self.error


class StoreCase(_Strict):
    id: Annotated[str, Field(pattern=_CASE_ID)]
    title: Annotated[str, Field(min_length=1)]
    clauses: _ClauseIds
    kit_defined: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    steps: tuple[StoreStep, ...] = ()
    scenario: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _sound(self) -> StoreCase:
        unknown = sorted(set(self.needs) - NEED_WORDS)
        if unknown:
            raise ValueError(f"unknown needs: {', '.join(unknown)}")
        if bool(self.steps) == (self.scenario is not None):
            raise ValueError("a case has steps or a scenario")
        return self

    @property
    def area(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def capabilities(self) -> tuple[str, ...]:
        return ("session-store", *(f"store:{n}" for n in self.needs))

    @property
    def in_processes(self) -> bool:
        """Every connection of the case is a process of its own (the replica cases, a kill)."""
        kind = self.scenario.get("kind") if self.scenario is not None else None
        return "replicas" in self.needs or kind in PROCESS_SCENARIOS

    @property
    def uses_require_existing(self) -> bool:
        """Some step (or the scenario) acquires with ``requireExisting``."""
        if self.scenario is not None:
            return self.scenario.get("kind") in OPTION_SCENARIOS
        return any(_uses_option(step) for step in self.steps)


def _uses_option(step: StoreStep) -> bool:
    if step.op == "acquire" and step.params.get("requireExisting") is True:
        return True
    return any(_uses_option(inner) for racer in step.concurrent or () for inner in racer)


class StoreVector(_Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    input: dict[str, Any]
    expected: dict[str, Any]
    why: str | None = None


class StoreVectorCase(_Strict):
    id: Annotated[str, Field(pattern=_CASE_ID)]
    title: Annotated[str, Field(min_length=1)]
    clauses: _ClauseIds
    kit_defined: tuple[str, ...] = ()
    function: Literal["boundedTail", "hasConversationContent", "isSessionConflict"]
    vectors: Annotated[tuple[StoreVector, ...], Field(min_length=1)]
    needs: tuple[str, ...] = ()

    @property
    def area(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def uses_require_existing(self) -> bool:
        return False

    @property
    def in_processes(self) -> bool:
        return False

    @property
    def capabilities(self) -> tuple[str, ...]:
        return ("session-store",)


AnyStoreCase = StoreCase | StoreVectorCase


def store_dir() -> Path:
    return fixtures_dir() / "store"


def _read(path: Path) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise KitUsageError(f"{path}: not readable YAML ({exc})") from None


@functools.cache
def load_store_cases() -> tuple[AnyStoreCase, ...]:
    """Every store case and store vector case, sorted by id.  Finding none is an error."""
    root = store_dir()
    out: list[AnyStoreCase] = []
    for sub, model in (("cases", StoreCase), ("vectors", StoreVectorCase)):
        for path in sorted((root / sub).glob("*.yaml")):
            try:
                case: AnyStoreCase = model.model_validate(_read(path))
            except ValidationError as exc:
                raise KitUsageError(f"{path}: {exc}") from None
            if case.id.split("/", 1)[1] != path.stem:
                raise KitUsageError(f"{path}: the id {case.id} does not end in the file's name")
            out.append(case)
    if not out:
        raise KitUsageError(f"no store cases found under {root}")
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise KitUsageError("duplicate store case ids")
    return tuple(sorted(out, key=lambda c: c.id))


def store_cases_under(folder: Path) -> tuple[StoreCase, ...]:
    """The store cases in the YAML files under ``folder`` (a port's own, or what ``fuzz --profile
    session-store`` wrote), validated as the kit's, sorted by id.  A folder with none is an error."""
    if not folder.is_dir():
        raise KitUsageError(f"--cases {folder}: not a directory")
    out: list[StoreCase] = []
    for path in sorted(folder.rglob("*.yaml")):
        try:
            case = StoreCase.model_validate(_read(path))
        except ValidationError as exc:
            raise KitUsageError(f"{path}: {exc}") from None
        if case.id.split("/", 1)[1] != path.stem:
            raise KitUsageError(f"{path}: the id {case.id} does not end in the file's name")
        out.append(case)
    if not out:
        raise KitUsageError(f"--cases {folder}: no store case (*.yaml) found")
    return tuple(sorted(out, key=lambda c: c.id))
