"""A fast emitter of the canonical workflow YAML, byte-identical to the ruamel.yaml form (KD-EXP-6).

:func:`relavium_reference._rules.workflow_yaml.dump_yaml` defines the canonical text through the
pure-Python ruamel.yaml emitter, which walks every character of every scalar in Python.  This module
writes the same text directly for the data an export holds: mappings with sorted keys, sequences, ints,
bools, nulls and strings made only of printable characters on one line.  For those, the emitter's
choice of scalar style reduces to a few checks, made here with regular expressions and string methods:

* plain, when no leading or trailing space, no leading indicator, no ``": "``, ``" #"`` or final ``:``,
  no document marker, and the YAML resolver reads the text back as a string (so ``"1"``, ``"true"``,
  ``"null"``, ``"2024-01-01"`` are quoted); the resolver's own table decides that last point;
* otherwise single-quoted, or double-quoted when the text holds an apostrophe.

Anything else (floats, multi-line or non-printable strings, empty or very long keys, an empty document)
makes :func:`fast_dump` return ``None`` and the caller uses the ruamel.yaml emitter, so the output is the
same text either way; ``tests/reference/test_workflow_yaml.py`` compares the two on generated data.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from ruamel.yaml.resolver import VersionedResolver

__all__ = ["MAX_DEPTH", "fast_dump"]

# One line of characters the emitter prints as they are (allow_unicode), with no line break, no tab and
# no byte-order mark: the set where no scalar needs escapes beyond ``"`` and ``\\``.
_PRINTABLE_LINE = re.compile(
    "[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*"
)
# What rules a plain scalar out in block context, before the resolver is asked: at the start, a space,
# an indicator, ``? `` / ``: `` / ``- `` (or the lone character) or a document marker; anywhere,
# ``": "`` or ``" #"``; at the end, a space or ``:`` (checked with string methods, faster than a scan).
_NOT_PLAIN_START = re.compile(r"""[ #,\[\]{}&*!|>'"%@`]|[?:-](?: |$)|---|\.\.\.""")
MAX_DEPTH = 64  # the deepest nesting of JSON-shaped data (workflow_yaml re-exports this one)
_MAX_KEY = 100  # well below the emitter's simple-key limit (128)


class _Fallback(Exception):
    """The data holds something this emitter does not write; the caller uses ruamel.yaml."""


def _implicit_table() -> dict[str, tuple[tuple[bool, Callable[[str], object]], ...]]:
    """The resolver's own table: per first character, (is the tag ``str``, the bound ``match``)."""
    resolver = VersionedResolver()
    table: dict[Any, Any] = resolver.versioned_resolver
    if None in table:
        raise RuntimeError("unexpected catch-all implicit resolver")  # the fast path would be wrong
    return {
        key: tuple((str(tag) == "tag:yaml.org,2002:str", pattern.match) for tag, pattern in value)
        for key, value in table.items()
    }


_IMPLICIT = _implicit_table()
# Plain scalars a YAML 1.1 resolver reads as a boolean, null, number or timestamp: always quoted.
YAML11_LOOKALIKE = re.compile(
    r"""^(?:
        y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
      | ~|null|Null|NULL
      | [-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+
      | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
      | [-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)? | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?
    )$""",
    re.X,
)


# First characters after which none of the start checks below can match: no indicator, no document
# marker, no implicit resolver of the table (keyed by first character) and no YAML 1.1 lookalike.
_CHECKED_FIRST = frozenset(_IMPLICIT) | frozenset("yYnNoO~") | frozenset(" #,[]{}&*!|>'\"%@`?:-.")


# Two shapes every transcript row carries, decided without the checks below: a store timestamp is a
# YAML 1.1 lookalike (quoted, and it holds no apostrophe), a lowercase UUID is plain (it starts no
# indicator, holds no ": " or " #", and no resolver pattern of either YAML version matches all of it;
# tests/reference/test_workflow_yaml.py compares both with the ruamel.yaml emitter).
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@functools.lru_cache(maxsize=8192)  # an export repeats roles, part types, ids of its session and model
def _string(text: str) -> str:
    if not text:
        return "''"
    if len(text) in (24, 36):
        if _STAMP.fullmatch(text):
            return "'" + text + "'"
        if _UUID.fullmatch(text):
            return text
    if not _PRINTABLE_LINE.fullmatch(text):
        raise _Fallback
    plain = not (text[-1] in " :" or ": " in text or " #" in text)
    if plain and text[0] in _CHECKED_FIRST:
        plain = _NOT_PLAIN_START.match(text) is None
        plain = plain and not YAML11_LOOKALIKE.match(text)  # a YAML 1.1 reader would misread it (KD-EXP-6)
        for is_str, match in _IMPLICIT.get(text[0], ()) if plain else ():
            if match(text):
                plain = is_str
                break
    return text if plain else _quoted(text)


def _quoted(text: str) -> str:
    if "'" in text:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "'" + text + "'"


def _scalar(value: Any) -> str:
    kind = type(value)  # exact types only: a subclass (or a float, or anything else) falls back
    if kind is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return str(value)
    if kind is dict:
        return "{}"  # only ever called for empty collections
    if kind is list:
        return "[]"
    raise _Fallback  # floats and anything else: the ruamel.yaml emitter decides


@functools.lru_cache(maxsize=4096)
def _key(key: str) -> str:
    if not key or len(key) > _MAX_KEY:
        raise _Fallback
    return _string(key)


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


@functools.lru_cache(maxsize=1024)
def _order(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Sorted keys with their rendered form; an export repeats a few key sets many times."""
    if any(type(key) is not str for key in keys):
        raise _Fallback
    return tuple((key, _key(key)) for key in sorted(keys, key=_utf16))


def _mapping(data: dict[str, Any], indent: int, first: str, out: list[str], depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Fallback  # its values would sit deeper than JSON-shaped data may
    prefix = first
    pad = " " * indent
    for key, shown in _order(tuple(data)):
        value = data[key]
        if type(value) is str:
            out.append(f"{prefix}{shown}: {_string(value)}\n")
        elif type(value) is dict and value:
            out.append(f"{prefix}{shown}:\n")
            _mapping(value, indent + 2, " " * (indent + 2), out, depth + 1)
        elif type(value) is list and value:
            out.append(f"{prefix}{shown}:\n")
            _sequence(value, indent + 2, " " * (indent + 2), out, depth + 1)
        else:
            out.append(f"{prefix}{shown}: {_scalar(value)}\n")
        prefix = pad


def _sequence(items: list[Any], dash: int, first: str, out: list[str], depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Fallback
    prefix = first
    pad = " " * dash
    for item in items:
        if type(item) is dict and item:
            _mapping(item, dash + 2, prefix + "- ", out, depth + 1)
        elif type(item) is list and item:
            _sequence(item, dash + 4, prefix + "-   ", out, depth + 1)
        else:
            out.append(f"{prefix}- {_scalar(item)}\n")
        prefix = pad


def fast_dump(data: Any) -> str | None:
    """The canonical YAML text of JSON-shaped ``data``, or ``None`` when ruamel.yaml must write it.

    It answers only for exact dicts (string keys), lists, strings, ints, bools and nulls nested at most
    ``MAX_DEPTH`` deep: an answer also proves the data is JSON-shaped, so the caller need not walk it
    again (``ensure_json_data`` runs only on the fallback path)."""
    if type(data) is not dict or not data:
        return None
    out: list[str] = []
    try:
        _mapping(data, 0, "", out, 0)
    except _Fallback:
        return None
    return "".join(out)
