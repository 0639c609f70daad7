"""The properties an exported YAML text must have, checked on the text itself (KD-EXP-6).

The kit does not demand one library's bytes.  It reads the text as data (that is compared with the
expected document elsewhere) and checks what any reader in any language relies on:

* mapping keys are sorted at every level (by UTF-16 code units, as the spec's sort does);
* no plain (unquoted) scalar that is a string in the document looks like something else to a YAML 1.1
  reader: ``yes``, ``no``, ``on``, ``off``, ``y``, ``n``, ``~``, sexagesimal numbers such as ``1:20``,
  octal or binary forms, ``.inf`` and the like (a YAML 1.2 reader takes them as strings, a 1.1 reader
  as booleans or numbers).

Determinism (the same input gives byte-identical text) is checked by the caller, which exports twice.

Every read of a text here is a pure function of the text, and the same texts come back case after case
(the reference's text is the vector's ``expected_yaml``; a selftest runs each vector against the
reference, the compliant alternatives and the broken implementations): so the reads are remembered by
text (:func:`read_yaml_text`, :func:`has_aliases`, :func:`text_property_differences`; the strict
workflow reading built on them is ``workflow.py``'s), a few
hundred at a time; the data and the text properties come from one scan of the text.  What they
return is shared: callers only read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from relavium_conformance._report.results import Difference

__all__ = [
    "YAML11_LOOKALIKE",
    "expands_too_far",
    "has_aliases",
    "read_yaml_text",
    "text_property_differences",
]

_REMEMBERED = 256  # distinct texts kept per read (the export vectors make a few dozen)

# Plain scalars a YAML 1.1 resolver reads as a boolean, null, integer, float or timestamp.
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
_STR_TAG = "tag:yaml.org,2002:str"


def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


_Finding = dict[str, Any]
"""A text-property finding as :class:`Difference` arguments, its ``path`` relative to the text's root."""

_ALIASED = "aliased"
"""``_read``'s findings for a text in which a node is reached a second time (through an alias): its
walk stops there, and the text-property check walks a fresh tree on demand, the old way, within
:data:`_EXPANSION_LIMIT`.  The strict reader refuses every alias before the vectors ask for the text
properties, so a read costs work in proportion to the text's nodes, whatever the text."""

_EXPANSION_LIMIT = 1_000_000
"""Work the on-demand walk of an aliased text may spend (a node visited, or a character of a path
built, is one unit).  Aliases can make a short text a tree of exponentially many paths (an alias bomb)
or an endless one (an anchor inside its own content); past the limit the text is reported unchecked."""


_Walked = tuple[str, Node, list[str]]
"""A node of a walk: its path, the node, and a mapping's keys as text (``str`` of each key's value)."""


def _walk(root: Node, path: str, *, once: bool, limit: int = 0) -> Iterator[_Walked | None]:
    """Every node under ``root`` with its path, depth first in text order, an alias's target again at
    each alias, and then None if the walk stopped early:

    * with ``once``, at the first node it reaches a second time (so at most once per node);
    * else once its work passes ``limit`` (a node visited, or a character of a path built, is a unit).

    A key that is a collection is named by its ``repr``, which spells out its aliases, so its nodes
    count too.  The walk keeps its own stack, so it never recurses, however deep the tree goes.
    """
    stack: list[tuple[str, Node]] = [(path, root)]
    seen: set[int] | None = set() if once else None
    work = 0
    while stack:
        where, node = stack.pop()
        if seen is not None:
            if id(node) in seen:
                yield None
                return
            seen.add(id(node))
        keys: list[str] = []
        if isinstance(node, MappingNode):
            for key, _value in node.value:
                if isinstance(key, ScalarNode):
                    keys.append(str(key.value))
                    continue
                spanned = _spanned(key, seen, limit - work)
                if spanned is None:
                    yield None
                    return
                work += spanned
                keys.append(str(key.value))
            children = [
                (f"{where}.{key}", value) for key, (_key, value) in zip(keys, node.value, strict=True)
            ]
        elif isinstance(node, SequenceNode):
            children = [(f"{where}[{index}]", item) for index, item in enumerate(node.value)]
        else:
            children = []
        if seen is None:
            work += 1 + sum(len(child) for child, _node in children)
            if work > limit:
                yield None
                return
        yield where, node, keys
        children.reverse()
        stack.extend(children)


def _spanned(key: Node, seen: set[int] | None, room: int) -> int | None:
    """How many nodes the collection ``key`` spans, aliases spelt out; None when that is past ``room``
    (a walk with no ``seen`` set) or when it reaches a node the walk has ``seen`` (one that has)."""
    stack = [key]
    count = 0
    while stack:
        node = stack.pop()
        count += 1
        if seen is not None:
            if id(node) in seen:
                return None
            seen.add(id(node))
        elif count > room:
            return None
        if isinstance(node, MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)
    return count


@lru_cache(maxsize=_REMEMBERED)
def _read(text: str) -> tuple[Any, Exception | None, tuple[_Finding, ...] | Exception | str | None]:
    """One scan of ``text`` for both of its reads: ``(data, problem, findings)``.

    ``data``/``problem`` are what ``parse_yaml(text)`` returns/raises: its load is ruamel's compose
    then construct of that one node, and so is this, with the text-property walk in between (before
    the constructor, which rewrites merge-key mappings in place).  ``findings`` is the composer's
    exception, None when there is no document, :data:`_ALIASED` when a node is reached twice, else
    the text-property findings."""
    yaml = YAML(typ="safe", pure=True)
    yaml.composer.warn_double_anchors = False  # as parse_yaml: an anchor named twice is YAML
    try:
        root = yaml.compose(text)
    except Exception as exc:  # the composer raises many unrelated types for bad input
        return None, exc, exc
    if root is None:
        return None, None, None
    scanned = _findings(_walk(root, "", once=True))
    findings = _ALIASED if scanned is None else scanned
    try:
        return yaml.constructor.construct_document(root), None, findings
    except Exception as exc:  # so does the constructor
        return None, exc, findings


def read_yaml_text(text: str) -> Any:
    """``parse_yaml(text)``, remembered: raises what the parser raised. The data is shared: read only."""
    data, problem, _found = _read(text)
    if problem is not None:
        raise problem
    return data


def has_aliases(text: str) -> bool:
    """Whether ``text`` (a readable document) reaches a node twice, which only an alias does."""
    return _read(text)[2] == _ALIASED


def text_property_differences(text: str, path: str) -> list[Difference]:
    """How ``text`` breaks the text properties (empty: it has them all); unreadable text is one."""
    return list(_text_property_differences(text, path))


@lru_cache(maxsize=_REMEMBERED)
def _text_property_differences(text: str, path: str) -> tuple[Difference, ...]:
    _data, _problem, findings = _read(text)
    if isinstance(findings, Exception):
        return (Difference(path=path, message=f"the YAML text cannot be read: {type(findings).__name__}"),)
    if findings is None:
        return (Difference(path=path, message="the YAML text holds no document"),)
    if isinstance(findings, str):  # aliases: a fresh tree (the constructor rewrote the scan's)
        findings = _expanded_findings(text)
        if findings is None:
            return (Difference(path=path, message=_TOO_FAR),)
    return tuple(Difference(**{**found, "path": path + found["path"]}) for found in findings)


_TOO_FAR = f"the YAML text's aliases spell out past {_EXPANSION_LIMIT} units of work: not checked"


@lru_cache(maxsize=_REMEMBERED)
def _expanded_findings(text: str) -> tuple[_Finding, ...] | None:
    """The findings of a text with aliases, walked the old way (aliases spelt out) on a fresh tree;
    None past :data:`_EXPANSION_LIMIT`."""
    root = YAML(typ="safe", pure=True).compose(text)
    return _findings(_walk(root, "", once=False, limit=_EXPANSION_LIMIT))


def expands_too_far(text: str) -> bool:
    """Whether ``text`` has aliases that spell out past :data:`_EXPANSION_LIMIT` units of work: its
    data is a small graph that is a huge (or endless) tree, which no report may spell out."""
    return _read(text)[2] == _ALIASED and _expanded_findings(text) is None


def _findings(walk: Iterator[_Walked | None]) -> tuple[_Finding, ...] | None:
    """The text-property findings of the nodes of ``walk``; None if the walk stopped early."""
    out: list[_Finding] = []
    for walked in walk:
        if walked is None:
            return None
        where, node, keys = walked
        if isinstance(node, MappingNode):
            if keys != sorted(keys, key=_utf16):
                out.append(
                    {
                        "path": where,
                        "message": "mapping keys are not sorted (KD-EXP-6)",
                        "expected": sorted(keys, key=_utf16),
                        "actual": keys,
                        "kit_defined": ("KD-EXP-6",),
                    }
                )
        elif (
            isinstance(node, ScalarNode)
            and node.style is None
            and node.tag == _STR_TAG
            and YAML11_LOOKALIKE.match(node.value)
        ):
            out.append(
                {
                    "path": where,
                    "message": "a string a YAML 1.1 reader takes for another type is not quoted (KD-EXP-6)",
                    "actual": node.value,
                    "kit_defined": ("KD-EXP-6",),
                }
            )
    return tuple(out)
