"""Reading a PostgreSQL connection string for messages, and naming the schema a store lives in.

A libpq connection string comes in two forms, ``key=value`` words (``host=db port=5432 password=s3``)
and a URI (``postgresql://user:s3@db/name?sslmode=require``).  :func:`redact_dsn` keeps either readable
with every password replaced by ``***``, so an error can name the connection without leaking it.
:func:`check_schema_name` admits the PostgreSQL schema names a store will create: an unquoted
identifier in lower case, at most 63 bytes, never one of PostgreSQL's own (``pg_*``,
``information_schema``).  Pure: no I/O.
"""

from __future__ import annotations

import re

__all__ = ["SCHEMA_NAME", "check_schema_name", "redact_dsn"]

SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'|\S+)", re.IGNORECASE)
_URI_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/@?#]*:)([^@/?#]*)(@)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&#]*)", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """``dsn`` with every password it carries replaced by ``***`` (either form)."""
    text = dsn.strip()
    if re.match(r"^postgres(?:ql)?://", text, re.IGNORECASE):
        return _QUERY_PASSWORD.sub(r"\1***", _URI_PASSWORD.sub(r"\1***\3", text))
    return _KEYWORD_PASSWORD.sub(r"\1***", text)


def check_schema_name(name: str) -> str | None:
    """Why ``name`` cannot be a store's schema, or ``None`` when it can."""
    if not SCHEMA_NAME.match(name):
        return f"a schema name is lower-case letters, digits and _ (at most 63, not a digit first): {name!r}"
    if name.startswith("pg_") or name == "information_schema":
        return f"{name!r} is PostgreSQL's own schema"
    return None
