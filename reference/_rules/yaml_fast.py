"""A fast emitter of the canonical workflow YAML, byte-identical to the ruamel.yaml form (KD-EXP-6).

:func:`relavium_reference._rules.workflow_yaml.dump_yaml` defines the canonical text through the
pure-Python ruamel.yaml emitter, which walks every character of every scalar in Python.  This module
writes the same text directly for the data an export holds: mappings with sorted keys, sequences, ints,
bools, nulls and strings made only of printable characters on one line.  For those, the emitter's
choice of scalar style reduces to a few checks, made here with regular expressions and string methods:

* plain, when no leading or trailing space, no leading indicator, no ``": "``, ``" #"`` or final ``:``,
  no document marker, and the YAML resolver reads the text back as a string (so ``"1"``, ``"true"``,
  ``"null"``, ``"2024-01-01"`` are quoted); the resolver's own table decides that last point;
* otherwise single-quoted, or double-quoted when the text holds an apostrophe, unless it is a YAML 1.1
  lookalike, which the canonical representer always single-quotes (each apostrophe doubled).

Anything else (floats, multi-line or non-printable strings, empty or very long keys, an empty document)
makes :func:`fast_dump` return ``None`` and the caller uses the ruamel.yaml emitter, so the output is the
same text either way; ``tests/reference/rules/test_workflow_yaml.py`` compares the two on generated data.
"""

from __future__ import annotations

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


def _implicit_table() -> dict[str, tuple[tuple[bool, re.Pattern[str]], ...]]:
    """The resolver's own table: per first character, (is the tag ``str``, the pattern)."""
    resolver = VersionedResolver()
    table: dict[Any, Any] = resolver.versioned_resolver
    if None in table:
        raise RuntimeError("unexpected catch-all implicit resolver")  # the fast path would be wrong
    return {
        key: tuple((str(tag) == "tag:yaml.org,2002:str", pattern) for tag, pattern in value)
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


# A plain scalar must not start like an indicator or a document marker, nor read back (YAML 1.2 or 1.1)
# as anything but a string.  Every pattern deciding that is anchored at the start and needs a first
# character of a known few; per such character, one alternation of them all decides in a single match:
# the start checks, the YAML 1.1 lookalikes and the resolver's own patterns for it (all verbose).
_INDICATOR_FIRST = " #,[]{}&*!|>'\"%@`?:-."


def _suspects() -> dict[str, Callable[[str], object]]:
    table: dict[str, Callable[[str], object]] = {}
    for first in sorted(set(_IMPLICIT) | set("yYnNoO~") | set(_INDICATOR_FIRST)):
        patterns = [f"(?-x:{_NOT_PLAIN_START.pattern})", f"(?:{YAML11_LOOKALIKE.pattern})"]
        for is_str, pattern in _IMPLICIT.get(first, ()):
            if is_str:  # a match would then mean plain, which one alternation cannot say
                raise RuntimeError("unexpected implicit resolver to str")  # the fast path would be wrong
            patterns.append(f"(?:{pattern.pattern})")
        table[first] = re.compile("|".join(patterns), re.X).match
    return table


_SUSPECT = _suspects()

# Two shapes every transcript row carries, decided without the checks below: a store timestamp is a
# YAML 1.1 lookalike (quoted, and it holds no apostrophe), a lowercase UUID is plain (it starts no
# indicator, holds no ": " or " #", and no resolver pattern of either YAML version matches all of it;
# tests/reference/rules/test_workflow_yaml.py compares both with the ruamel.yaml emitter).
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _string(text: str) -> str:
    """The scalar as the ruamel.yaml emitter writes it (raises :class:`_Fallback` when it escapes)."""
    size = len(text)
    if size == 24 and _STAMP.fullmatch(text):
        return "'" + text + "'"
    if size == 36 and _UUID.fullmatch(text):
        return text
    if not size:
        return "''"
    # str.isprintable accepts a subset of _PRINTABLE_LINE (a test checks every code point): asked first,
    # it is the cheaper scan; the pattern decides the rest (no-break space, private use, ...).
    if not (text.isprintable() or _PRINTABLE_LINE.fullmatch(text)):
        raise _Fallback
    if text[-1] in " :" or ": " in text or " #" in text:
        return _quoted(text)
    suspect = _SUSPECT.get(text[0])
    if suspect is not None and suspect(text):
        return _quoted(text)
    return text


def _quoted(text: str) -> str:
    # A YAML 1.1 lookalike is single-quoted whatever it holds (the canonical representer asks for that
    # style; the emitter doubles each apostrophe); any other text with an apostrophe, double-quoted.
    if "'" not in text:
        return "'" + text + "'"
    if YAML11_LOOKALIKE.match(text):
        return "'" + text.replace("'", "''") + "'"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scalar(value: Any) -> str:
    """A scalar other than a string or an int (those are written inline by the callers)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)  # exact types only: a subclass (or a float, or anything else) falls back
    if kind is dict:
        return "{}"  # only ever called for empty collections
    if kind is list:
        return "[]"
    raise _Fallback  # floats and anything else: the ruamel.yaml emitter decides


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


# A mapping's plan: per key in sorted order, the text before its value on one line (``key: ``) and the
# line opening a nested block (``key:``), the first key's led by the mapping's first-line prefix.  Each
# line is written as its head, led by the line break that ends the line before it, then its value: two
# appends rather than one concatenation per line (``fast_dump`` moves the first break to the end).
# An export repeats a few key sets at a few indents many times.
_Plan = tuple[tuple[str, str, str], ...]
_PLANS: dict[tuple[tuple[str, ...], str, int], _Plan] = {}
_MAX_PLANS = 4096


def _plan(keys: tuple[str, ...], first: str, indent: int) -> _Plan:
    if any(type(key) is not str for key in keys):
        raise _Fallback
    pad = " " * indent
    plan = []
    for position, key in enumerate(sorted(keys, key=_utf16)):
        if not key or len(key) > _MAX_KEY:
            raise _Fallback
        head = "\n" + (pad if position else first) + _string(key) + ":"
        plan.append((key, head + " ", head))
    built = tuple(plan)
    if len(_PLANS) < _MAX_PLANS:
        _PLANS[(keys, first, indent)] = built
    return built


# ``memo`` maps each string of one dump to its scalar text: the roles, part types and ids of a session
# repeat, and every string is decided once.
def _mapping(
    data: dict[str, Any], indent: int, first: str, out: list[str], memo: dict[str, str], depth: int
) -> None:
    if depth >= MAX_DEPTH:
        raise _Fallback  # its values would sit deeper than JSON-shaped data may
    keys = tuple(data)
    plan = _PLANS.get((keys, first, indent)) or _plan(keys, first, indent)
    append = out.append
    inner = indent + 2
    for key, scalar_head, block_head in plan:
        value = data[key]
        kind = type(value)
        if kind is str:
            text = memo.get(value)
            if text is None:
                text = memo[value] = _string(value)
            append(scalar_head)
            append(text)
        elif kind is int:
            append(scalar_head)
            append(str(value))
        elif kind is dict and value:
            append(block_head)
            _mapping(value, inner, " " * inner, out, memo, depth + 1)
        elif kind is list and value:
            append(block_head)
            _sequence(value, inner, " " * inner, out, memo, depth + 1)
        else:
            append(scalar_head)
            append(_scalar(value))


def _sequence(
    items: list[Any], dash: int, first: str, out: list[str], memo: dict[str, str], depth: int
) -> None:
    if depth >= MAX_DEPTH:
        raise _Fallback
    append = out.append
    lead = first + "- "  # the first item's line starts with the sequence's first-line prefix
    later = " " * dash + "- "
    indent, inner = dash + 2, dash + 4
    for item in items:
        kind = type(item)
        if kind is dict and item:
            # _mapping(item, indent, lead, out, memo, depth + 1) written out here: the bulk of an export
            # is sequences of mappings (messages, their parts, nodes, edges), and a call per item shows.
            if depth + 1 >= MAX_DEPTH:
                raise _Fallback
            keys = tuple(item)
            plan = _PLANS.get((keys, lead, indent)) or _plan(keys, lead, indent)
            for key, scalar_head, block_head in plan:
                value = item[key]
                kind = type(value)
                if kind is str:
                    text = memo.get(value)
                    if text is None:
                        text = memo[value] = _string(value)
                    append(scalar_head)
                    append(text)
                elif kind is int:
                    append(scalar_head)
                    append(str(value))
                elif kind is dict and value:
                    append(block_head)
                    _mapping(value, inner, " " * inner, out, memo, depth + 2)
                elif kind is list and value:
                    append(block_head)
                    _sequence(value, inner, " " * inner, out, memo, depth + 2)
                else:
                    append(scalar_head)
                    append(_scalar(value))
        elif kind is list and item:
            _sequence(item, inner, lead + "  ", out, memo, depth + 1)
        else:
            append("\n" + lead)
            if kind is str:
                text = memo.get(item)
                if text is None:
                    text = memo[item] = _string(item)
                append(text)
            elif kind is int:
                append(str(item))
            else:
                append(_scalar(item))
        lead = later


def fast_dump(data: Any) -> str | None:
    """The canonical YAML text of JSON-shaped ``data``, or ``None`` when ruamel.yaml must write it.

    It answers only for exact dicts (string keys), lists, strings, ints, bools and nulls nested at most
    ``MAX_DEPTH`` deep: an answer also proves the data is JSON-shaped, so the caller need not walk it
    again (``ensure_json_data`` runs only on the fallback path)."""
    if type(data) is not dict or not data:
        return None
    out: list[str] = []
    try:
        _mapping(data, 0, "", out, {}, 0)
    except _Fallback:
        return None
    out[0] = out[0][1:]  # the first line's head holds no line before it; the last line ends here
    out.append("\n")
    return "".join(out)
