"""The reference PostgreSQL store as the kit serves it: the connection string, one schema per location.

The adapters ``reference-pg`` and ``reference-pg-stdio`` read the libpq connection string from
``RELAVIUM_PG_DSN``.  :func:`check_kit_dsn` is asked when the implementation starts: an unset, malformed
or unreachable string stops it with a :class:`PostgresStoreError` naming the variable and the string
(password redacted), so every case of the run reads "could not be started" (exit 3).

``store.open`` names a location (a directory the kit made for the case, the same for every connection
and every replica of that case).  The store lives in the PostgreSQL schema :func:`schema_for` derives
from this machine's name and that location, so replicas of one case share one store and two cases (or
two runs) never meet.  The schema's comment records the machine and location; each open first drops
this machine's kit schemas whose location no longer exists (cases that are over), so a run leaves at
most its last case's schema behind until the next run (:func:`sweep_kit_schemas` drops it at once).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Callable
from typing import Any

__all__ = [
    "DSN_VARIABLE",
    "KIT_SCHEMA_PREFIX",
    "check_kit_dsn",
    "kit_dsn",
    "open_kit_store",
    "schema_for",
    "sweep_kit_schemas",
]

DSN_VARIABLE = "RELAVIUM_PG_DSN"
KIT_SCHEMA_PREFIX = "relavium_kit_"


def _errors() -> Any:
    from relavium_reference._host.session_store_postgres import PostgresStoreError

    return PostgresStoreError


def kit_dsn() -> str:
    """The connection string in ``RELAVIUM_PG_DSN`` (a :class:`PostgresStoreError` when unset)."""
    dsn = os.environ.get(DSN_VARIABLE, "").strip()
    if not dsn:
        raise _errors()(
            f"{DSN_VARIABLE} is not set: name the PostgreSQL server as a libpq connection string, "
            f"e.g. {DSN_VARIABLE}='host=127.0.0.1 port=5432 dbname=test user=postgres'"
        )
    return dsn


def check_kit_dsn(timeout: float = 10.0) -> str:
    """The connection string, once one connection through it has succeeded."""
    try:
        from relavium_reference._host.session_store_postgres import check_connection
    except ImportError as exc:  # a broken install: psycopg is one of the kit's dependencies
        raise _errors()(f"the PostgreSQL store needs psycopg and psycopg-pool ({exc})") from None
    dsn = kit_dsn()
    try:
        check_connection(dsn, timeout)
    except _errors() as exc:
        raise _errors()(f"{DSN_VARIABLE}: {exc}") from None
    return dsn


def _host() -> str:
    return socket.gethostname()


def schema_for(location: str) -> str:
    digest = hashlib.sha256(f"{_host()}\0{os.path.realpath(location)}".encode()).hexdigest()
    return KIT_SCHEMA_PREFIX + digest[:24]


async def sweep_kit_schemas(dsn: str, *, keep_existing: bool = True) -> list[str]:
    """Drop this machine's kit schemas whose location is gone (every one of them with
    ``keep_existing=False``); answers the names dropped."""
    import psycopg

    dropped: list[str] = []
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname LIKE %s",
            (KIT_SCHEMA_PREFIX.replace("_", r"\_") + "%",),
        )
        for name, comment in await cur.fetchall():
            try:
                mark = json.loads(comment or "")
            except ValueError:
                continue  # not one the kit marked: never ours to drop
            if not isinstance(mark, dict) or mark.get("host") != _host():
                continue
            if keep_existing and os.path.exists(str(mark.get("location"))):
                continue
            try:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
                dropped.append(name)
            except psycopg.Error:
                continue  # another process is dropping or using it: the next sweep sees it again
    return dropped


async def open_kit_store(location: str, clock: Callable[[], int], *, store_class: Any = None) -> Any:
    """The reference PostgreSQL store (or ``store_class``, a subclass: the selftest's broken ones) for
    one kit location (``store.open``)."""
    from relavium_reference._host.session_store_postgres import PostgresSessionStore

    dsn = kit_dsn()
    await sweep_kit_schemas(dsn)
    schema = schema_for(location)
    store = await (store_class or PostgresSessionStore).open(dsn, schema, clock=clock)
    mark = json.dumps({"host": _host(), "location": os.path.realpath(location)})
    async with store.pool.connection() as conn:  # the store's own pool: no connection more
        await conn.execute(f'COMMENT ON SCHEMA "{schema}" IS {_literal(mark)}')
    return store


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
