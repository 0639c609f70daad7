"""The reference session stores behind the session-store profile's messages (``_store/protocol.py``).

:class:`ReferenceStoreImplementation` serves ``store.*`` and the store's ``pure.*`` helpers with one
reference store: the durable SQLite store (``sqlite``), the in-memory TTL store (``ttl``) or the
PostgreSQL store (``pg``, on the server ``RELAVIUM_PG_DSN`` names: ``session_store_pg.py``).  Each
``store.open`` opens a new store instance over the kit's location, on a clock the kit sets.  A broken
store (``_selftest/``) swaps the store class or one pure helper.

:class:`BothProfiles` puts it beside the reference engine, so that one program (in-process or the stdio
server) serves both profiles: ``store.*`` and the store helpers go to the store, the rest to the engine,
and ``hello`` declares both.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import ValidationError

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import INVALID_INPUT, OPERATIONS, SESSION_ERROR, Callback
from relavium_conformance._wire.protocol_messages import HelloResult
from relavium_reference._host.session_store_live import INHERIT, StoreSession
from relavium_reference._host.session_store_memory import TtlSessionStore
from relavium_reference._host.session_store_sqlite import SqliteSessionStore
from relavium_reference._model.session_store_shapes import (
    SessionError,
    SessionErrorCode,
    SessionPlacement,
    Unknown,
)
from relavium_reference._rules.session_store_helpers import (
    bounded_tail,
    has_conversation_content,
    is_session_conflict,
)

__all__ = [
    "REFERENCE_STORE_PURE",
    "BothProfiles",
    "ReferenceStoreImplementation",
    "StoreKind",
    "StorePure",
    "both_profiles_factory",
    "conflict_value",
    "store_capabilities",
]

StoreKind = Literal["sqlite", "ttl", "pg"]
StoreOpener = Callable[[str, Callable[[], int]], Any]


@dataclass(frozen=True)
class StorePure:
    bounded_tail: Callable[[Any], tuple[list[Any], str | None]] = bounded_tail
    has_conversation_content: Callable[[Any], bool] = has_conversation_content
    is_session_conflict: Callable[[object], bool] = is_session_conflict


REFERENCE_STORE_PURE = StorePure()

_FACES_TTL = ("forget", "pin", "noteTaskRun", "list", "fork", "ownership", "incarnationOf")


def store_capabilities(kind: StoreKind) -> tuple[str, ...]:
    if kind == "ttl":
        return ("session-store", *(f"store:{f}" for f in _FACES_TTL), "store:clock")
    return (  # the SQLite file and the PostgreSQL schema are shared by every process opening them
        "session-store",
        "store:durable",
        "store:placements:durable",
        *(f"store:{f}" for f in (*_FACES_TTL, "listPlaced")),
        "store:clock",
        "store:replicas",
    )


def _open_sqlite(location: str, clock: Callable[[], int]) -> Any:
    return SqliteSessionStore.open(location, clock=clock)


def _open_ttl(location: str, clock: Callable[[], int]) -> Any:
    del location  # process-local: nothing outlives the instance
    return TtlSessionStore(clock=clock)


_STORE_ROWS = {
    name: row
    for name, row in OPERATIONS.items()
    if name.startswith("store.") or (row.pure and row.capability == "session-store")
}
"""The session-store profile's rows of the method table: the methods this implementation serves."""

def _open_pg(location: str, clock: Callable[[], int]) -> Any:
    from relavium_conformance._reference.session_store_pg import open_kit_store

    return open_kit_store(location, clock)  # awaited by store.open


OPENERS: dict[StoreKind, StoreOpener] = {"sqlite": _open_sqlite, "ttl": _open_ttl, "pg": _open_pg}


class _Unreadable:
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError("this value cannot be read")


class _ForeignError(Exception):
    def __init__(self, message: str, code: Any) -> None:
        super().__init__(message)
        self.code = code


def conflict_value(spec: Mapping[str, Any]) -> object:
    """The value a ``pure.isSessionConflict`` vector describes (KD-SS-5), built in this language."""
    kind = spec.get("kind")
    if kind == "session_error":
        error = SessionError(SessionErrorCode.CONFLICT, str(spec.get("message", "")))
        error.code = cast(SessionErrorCode, spec.get("code"))
        return error
    if kind == "foreign_error":
        return _ForeignError(str(spec.get("message", "")), spec.get("code"))
    if kind == "unreadable":
        return _Unreadable()
    if kind == "plain":
        return spec.get("value")
    raise SessionError(SessionErrorCode.INVALID_ENTRY, "unknown value kind")


@dataclass
class _Clock:
    now: int | None = None

    def __call__(self) -> int:
        if self.now is None:
            from relavium_reference._host.session_store_memory import system_ms

            return system_ms()
        return self.now


@dataclass
class _Refs:
    """One ref per live session object (KD-SS-4), kept alive so that a ref is never reused."""

    by_ref: dict[str, StoreSession] = field(default_factory=dict)
    by_object: dict[int, str] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def ref(self, session: StoreSession) -> str:
        known = self.by_object.get(id(session))
        if known is None:
            known = self.by_object[id(session)] = f"live-{next(self.counter)}"
            self.by_ref[known] = session
        return known

    def get(self, ref: str) -> StoreSession:
        session = self.by_ref.get(ref)
        if session is None:
            raise SessionError(SessionErrorCode.NOT_FOUND, f"no live session {ref}")
        return session


class ReferenceStoreImplementation:
    """Serves the session-store profile with one reference store (or a broken one)."""

    def __init__(
        self,
        kind: StoreKind = "sqlite",
        *,
        opener: StoreOpener | None = None,
        pure: StorePure = REFERENCE_STORE_PURE,
        capabilities: tuple[str, ...] | None = None,
        name: str | None = None,
    ) -> None:
        if kind == "pg":  # no server, no store: the implementation does not start (exit 3)
            from relavium_conformance._reference.session_store_pg import check_kit_dsn

            check_kit_dsn()
        self.kind = kind
        self.name = name
        self.capabilities = capabilities if capabilities is not None else store_capabilities(kind)
        self._opener = opener or OPENERS[kind]
        self._pure = pure
        self._clock = _Clock()
        self._store: Any = None
        self._refs = _Refs()

    def serves(self, method: str) -> bool:
        return method in _STORE_ROWS

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        row = _STORE_ROWS[method]
        try:
            parsed = row.params.model_validate(params)
        except ValidationError as exc:
            raise RpcError(
                INVALID_INPUT, "invalid params", {"kind": "invalid_input", "message": str(exc)}
            ) from None
        try:
            answer = await getattr(self, str(row.serve))(parsed)
        except SessionError as exc:
            raise RpcError(
                SESSION_ERROR, exc.message, {"kind": "session_error", "code": str(exc.code)}
            ) from None
        except Exception as exc:  # a store that throws where it must not: the kit sees an internal error
            raise RpcError(-32603, f"{type(exc).__name__}: {exc}") from None
        return answer

    def hello_result(self) -> HelloResult:
        """The store alone (selftest's broken stores): its declaration, no engine capability."""
        from relavium_conformance._reference.impl import REFERENCE_NAME, _python_version
        from relavium_conformance._version import kit_version
        from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION
        from relavium_conformance._wire.protocol_messages import ImplementationInfo

        return HelloResult(
            protocol_version=PROTOCOL_VERSION,
            implementation=ImplementationInfo(
                name=self.name or REFERENCE_NAME,
                version=kit_version(),
                language=f"python {_python_version()}",
            ),
            capabilities=self.capabilities,
        )

    @property
    def store(self) -> Any:
        if self._store is None:
            raise SessionError(SessionErrorCode.NOT_FOUND, "store.open first")
        return self._store

    # --- lifecycle ---------------------------------------------------------------------------------

    async def on_store_open(self, p: Any) -> dict[str, Any]:
        if self._store is not None:
            await self._store.dispose()
        self._clock.now = p.clock_ms
        store = self._opener(p.location, self._clock)
        self._store = await store if inspect.isawaitable(store) else store
        return {}

    async def on_store_set_clock(self, p: Any) -> dict[str, Any]:
        self._clock.now = p.now_ms
        return {}

    async def on_store_dispose(self, p: Any) -> dict[str, Any]:
        if self._store is not None:
            try:
                await self._store.dispose()
            finally:
                self._store = None
        return {}

    # --- sessions ----------------------------------------------------------------------------------

    async def on_store_acquire(self, p: Any) -> dict[str, Any]:
        placement = (
            None if p.placement is None else SessionPlacement.from_wire(p.placement.model_dump(by_alias=True))
        )
        got = await self.store.acquire(p.session_id, require_existing=p.require_existing, placement=placement)
        return {
            "sessionId": got.session_id,
            "ref": self._refs.ref(got.session),
            "metadata": got.session.metadata.to_wire(),
        }

    async def on_store_touch(self, p: Any) -> dict[str, Any]:
        await self.store.touch(p.session_id)
        return {}

    async def on_store_release(self, p: Any) -> dict[str, Any]:
        await self.store.release(p.session_id)
        return {}

    async def on_store_forget(self, p: Any) -> dict[str, Any]:
        await self.store.forget(p.session_id)
        return {}

    async def on_store_pin(self, p: Any) -> dict[str, Any]:
        await self.store.pin(p.session_id)
        return {}

    async def on_store_unpin(self, p: Any) -> dict[str, Any]:
        await self.store.unpin(p.session_id)
        return {}

    async def on_store_note_task_run(self, p: Any) -> dict[str, Any]:
        await self.store.note_task_run(p.session_id, p.task_id, p.run_id)
        return {}

    async def on_store_list(self, p: Any) -> dict[str, Any]:
        return {"sessions": [s.to_wire() for s in await self.store.list_sessions()]}

    async def on_store_list_placed(self, p: Any) -> dict[str, Any]:
        rows = await self.store.list_placed(p.kind, older_than_ms=p.older_than_ms, scope=p.scope)
        return {"rows": [r.to_wire() for r in rows]}

    async def on_store_fork(self, p: Any) -> dict[str, Any]:
        owner = p.owner if "owner" in p.model_fields_set else INHERIT
        return {"sessionId": await self.store.fork(p.source_id, owner)}

    async def on_store_owner_of(self, p: Any) -> dict[str, Any]:
        owner = await self.store.owner_of(p.session_id)
        return {} if isinstance(owner, Unknown) else {"owner": owner}

    async def on_store_register(self, p: Any) -> dict[str, Any]:
        await self.store.register(p.session_id, p.owner)
        return {}

    async def on_store_incarnation_of(self, p: Any) -> dict[str, Any]:
        incarnation = await self.store.incarnation_of(p.session_id)
        return {} if isinstance(incarnation, Unknown) else {"incarnation": incarnation}

    async def on_store_size(self, p: Any) -> dict[str, Any]:
        return {"size": self.store.size}

    async def on_store_entries(self, p: Any) -> dict[str, Any]:
        return {"entries": self._refs.get(p.ref).committed()}

    async def on_store_append(self, p: Any) -> dict[str, Any]:
        session = self._refs.get(p.ref)
        session.stage(p.entries)
        if p.commit:
            await session.commit()
        return {}

    async def on_store_commit(self, p: Any) -> dict[str, Any]:
        await self._refs.get(p.ref).commit()
        return {}

    # --- pure helpers ------------------------------------------------------------------------------

    async def on_pure_bounded_tail(self, p: Any) -> dict[str, Any]:
        tail, floor = self._pure.bounded_tail(list(p.entries))
        return {"tail": list(tail), "floorEntryId": floor}

    async def on_pure_has_conversation_content(self, p: Any) -> dict[str, Any]:
        return {"result": bool(self._pure.has_conversation_content(list(p.branch)))}

    async def on_pure_is_session_conflict(self, p: Any) -> dict[str, Any]:
        return {"result": bool(self._pure.is_session_conflict(conflict_value(p.value)))}


class BothProfiles:
    """The reference engine and a reference store behind one ``hello``: both profiles, one program."""

    def __init__(self, engine: ReferenceImplementation, store: ReferenceStoreImplementation) -> None:
        self.engine = engine
        self.store = store

    def hello_result(self) -> HelloResult:
        hello = self.engine.hello_result()
        extra = tuple(c for c in self.store.capabilities if c not in hello.capabilities)
        return hello.model_copy(update={"capabilities": (*hello.capabilities, *extra)})

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        if self.store.serves(method):
            return await self.store.handle(method, params)
        if method == "hello":
            return self.hello_result().to_wire()
        return await self.engine.handle(method, params)


def both_profiles_factory(
    kind: StoreKind = "sqlite", **store_options: Any
) -> Callable[[Callback], BothProfiles]:
    def make(callback: Callback) -> BothProfiles:
        return BothProfiles(
            ReferenceImplementation(callback), ReferenceStoreImplementation(kind, **store_options)
        )

    return make
