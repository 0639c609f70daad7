"""The deterministic YAML form of a workflow document (kit choice KD-EXP-6).

``dump_yaml`` turns JSON-shaped data (``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite
``float``, ``bool``, ``None``) into YAML text, and ``load_yaml`` reads such text back into the same
shapes.  The output depends on the data alone:

* mapping keys are sorted by their UTF-16 code units (the order of a JavaScript ``sort()``; the same as
  code-point order for keys without astral characters), recursively; sequences keep their order;
* block style, two-space mappings, sequences indented by two with the dash inside the indent;
* a line width no scalar reaches, so nothing is folded;
* a string is quoted whenever a plain scalar would read back as something else (``"1.0"``, ``"true"``,
  ``"null"``, ``"2024-01-01"``, leading or trailing spaces, ``{{``, ...); the pure-Python ruamel.yaml
  emitter makes that choice from the string alone;
* Unicode kept as is (characters YAML cannot print are escaped), ``\\n`` line ends, one final newline.

Both directions use the same pure-Python safe loader and dumper, so ``dump(load(dump(x))) ==
dump(x)`` byte for byte.  ``load_yaml`` accepts one document without aliases, duplicate keys or tags
other than the JSON types.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    MappingStartEvent,
    NodeEvent,
)
from ruamel.yaml.parser import Parser
from ruamel.yaml.representer import SafeRepresenter

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.gc_pause import gc_paused
from relavium_reference._rules.yaml_fast import MAX_DEPTH, YAML11_LOOKALIKE, fast_dump

__all__ = ["MAX_DEPTH", "dump_yaml", "ensure_json_data", "load_yaml", "ruamel_dump", "utf16_key"]

#: The deepest nesting of mappings and sequences accepted either way (KD-EXP-6). An export is about ten
#: levels deep; the bound keeps the recursive YAML composer and the checks below far from Python's limit.
#: (``MAX_DEPTH`` is defined beside the fast emitter, which enforces it too.)
_WIDTH = 1 << 30
# Characters a single-quoted or plain scalar cannot carry faithfully (YAML folds or drops them when it
# reads the text back): such strings are written double-quoted, where the emitter escapes them.
_NEEDS_DOUBLE_QUOTES = re.compile("[\r\x85\u2028\u2029\ufeff]")


class _Representer(SafeRepresenter):
    """The safe representer, keeping key order and double-quoting strings YAML would not keep."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sort_base_mapping_type_on_output = False  # keys arrive sorted by ``_sorted``

    def represent_str(self, data: str) -> Any:
        style = '"' if _NEEDS_DOUBLE_QUOTES.search(data) else ("'" if YAML11_LOOKALIKE.match(data) else None)
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Representer.add_representer(str, _Representer.represent_str)


def utf16_key(key: str) -> bytes:
    """Sort key comparing strings by UTF-16 code units (big-endian bytes compare the same way)."""
    return key.encode("utf-16-be", "surrogatepass")


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = _WIDTH
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.explicit_start = False
    yaml.explicit_end = False
    return yaml


def ensure_json_data(value: Any, location: str = "", *, _depth: int = 0) -> None:
    """Refuse anything that is not JSON-shaped data (YAML timestamps, sets, binary, NaN, non-string keys).

    Nesting deeper than :data:`MAX_DEPTH` is refused too.
    """
    if _depth > MAX_DEPTH:
        raise InvalidInputError("data is nested too deeply", location=location)
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError("non-finite number refused", location=location)
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            ensure_json_data(item, f"{location}.{index}" if location else str(index), _depth=_depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError("mapping key is not a string", location=location)
            ensure_json_data(item, f"{location}.{key}" if location else key, _depth=_depth + 1)
        return
    raise InvalidInputError("value is not JSON data", location=location)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value, key=utf16_key)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


@gc_paused
def dump_yaml(data: Any) -> str:
    """Deterministic YAML text of JSON-shaped ``data`` (raises :class:`InvalidInputError` otherwise)."""
    fast = fast_dump(data)  # the same text, written directly when the data allows (see yaml_fast)
    if fast is not None:
        return fast  # an answer means exact JSON types within MAX_DEPTH: what ensure_json_data accepts
    ensure_json_data(data)
    return ruamel_dump(data)


def ruamel_dump(data: Any) -> str:
    """The canonical text through the ruamel.yaml emitter alone (the definition ``fast_dump`` matches)."""
    stream = io.StringIO()
    _yaml().dump(_sorted(data), stream)
    return stream.getvalue()


def _screen(open_collections: list[list[Any]], event: Any) -> None:
    """Refuse what JSON-shaped data cannot hold, one event at a time, before the composer sees it.

    Aliases (an export never holds one; refusing them also rules out alias bombs), a mapping key that is
    itself a mapping or a sequence, and nesting deeper than :data:`MAX_DEPTH`.  ``open_collections``
    holds one entry per open collection: is it a mapping, and how many nodes it holds so far.  The
    event stream is flat, so this check never recurses.
    """
    if isinstance(event, AliasEvent):
        raise InvalidInputError("YAML aliases are not accepted in a workflow")
    if isinstance(event, CollectionEndEvent):
        open_collections.pop()
        return
    if not isinstance(event, NodeEvent):
        return
    if open_collections:
        parent = open_collections[-1]
        if parent[0] and parent[1] % 2 == 0 and isinstance(event, CollectionStartEvent):
            raise InvalidInputError("mapping key is not a string")
        parent[1] += 1
    if isinstance(event, CollectionStartEvent):
        if len(open_collections) >= MAX_DEPTH:
            raise InvalidInputError("workflow YAML is nested too deeply")
        open_collections.append([isinstance(event, MappingStartEvent), 0])


class _ScreeningParser(Parser):
    """ruamel's pure-Python parser with :func:`_screen` applied to each event as it is produced.

    The composer asks the parser for every event (``check_event``, ``peek_event``, ``get_event``), so
    each is screened before the composer acts on it: the recursive composer never meets an alias or a
    nesting past :data:`MAX_DEPTH`, and the text is scanned once (screening the event stream first and
    loading after scanned it twice).  The constructor runs only once the whole document is composed,
    so every event is screened before any value is built.
    """

    def reset_parser(self) -> None:
        super().reset_parser()
        self._open_collections: list[list[Any]] = []

    def _produce(self) -> None:
        if self.current_event is None and self.state:
            event = self.state()
            _screen(self._open_collections, event)
            self.current_event = event

    def check_event(self, *choices: Any) -> bool:
        self._produce()
        return bool(super().check_event(*choices))

    def peek_event(self) -> Any:
        self._produce()
        return super().peek_event()

    def get_event(self) -> Any:
        self._produce()
        return super().get_event()


def _reader() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Parser = _ScreeningParser
    # An anchor named twice is YAML (the later one wins, and with aliases refused nothing refers to
    # either); ruamel would warn about it, which reaches stderr, or raises where warnings are errors.
    yaml.composer.warn_double_anchors = False
    return yaml


def load_yaml(text: str) -> Any:
    """Read YAML text as JSON-shaped data; malformed YAML or non-JSON values raise ``InvalidInputError``."""
    if not isinstance(text, str):
        raise InvalidInputError("workflow YAML must be text")
    try:
        data = _reader().load(text)
    except (YAMLError, ValueError):
        # ValueError: ruamel resolves some plain scalars as floats it then cannot convert ('-_', '._')
        raise InvalidInputError("workflow YAML is not well-formed") from None
    ensure_json_data(data)
    return data
