"""Matching observations against expectations, and normalising volatile data.

Matching rules (expected on the left, what the implementation did on the right):

* a mapping matches when every expected key matches the actual value under that key (extra actual
  keys are allowed: normative assertions name only what the clauses require);
* a list matches a list of the same length, item by item; lists of different lengths are aligned (the
  longest run of matching items, then item by item within each gap) so that the report names the
  missing and the extra items rather than only the two lengths;
* a scalar matches an equal scalar;
* operators, as one-key mappings: ``{$absent: true}`` (the key must not be there),
  ``{$any: true}`` (present, any value), ``{$contains: "s"}`` (a string containing ``s``, or a list
  containing a matching item), ``{$not_contains: "s"}`` (``s`` appears nowhere in the value's JSON),
  ``{$len: n}``, ``{$gte: n}``, ``{$lte: n}``, ``{$one_of: [...]}``, ``{$matches: "regex"}`` (a string
  matching it whole), ``{$if_present: x}`` (an optional field: absent is fine, present must match ``x``),
  ``{$all: [...]}`` (every listed expectation matches), ``{$joined_text: x}`` (a list of content parts,
  or of messages, read as one text: the text parts' texts joined by a blank line, so two text parts and
  one part holding both joined by a blank line read the same, KD-PROJ-2 and KD-MSG-4; ``x`` matches it),
  ``{$overflow_message: {model, window, tools_ran}}``
  (the property AS-OVF-003 states of a ``context_overflow`` message, :func:`overflow_message_problems`),
  ``{$shape: {kit_defined: KD-..., is: x}}`` (the kit's own exact shape ``x``: a mismatch is marked with
  that entry, and the judge reports a difference resting on a shape entry as a kit-choice note that never
  fails the case, see :mod:`relavium_conformance._judge.kit_choices`).

Values are kept whole in the differences (a report shortens them for display, visibly); two texts of
which one spans lines also carry a unified diff (``difflib``).

Normalising replaces ids and timestamps by placeholders so that snapshots compare; the envelope
checks (``check_envelope``) verify what the placeholders hide: format, uniqueness and order.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relavium_conformance._report.results import Difference

__all__ = [
    "ABSENT",
    "check_envelope",
    "jsonable",
    "match",
    "normalise",
    "overflow_message_problems",
    "text_difference",
    "unified_diff",
]

ABSENT = object()
_EMBEDDED_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def jsonable(value: Any) -> Any:
    """``value`` when it is JSON data, else its ``str`` (an in-process answer may be any object)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


_ALIGN_LIMIT = 40_000  # item comparisons the list alignment may spend; past it, lists compare by position


def unified_diff(expected: str, actual: str) -> str:
    """A unified diff from the expected text to the actual one, two lines of context."""
    lines = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "expected", "actual", n=2, lineterm=""
    )
    return "\n".join(lines)


def text_difference(expected: str, actual: str, path: str, message: str = "text differs") -> Difference:
    """Two different texts: both whole, and a unified diff when either spans more than one line."""
    multi_line = "\n" in expected.rstrip("\n") or "\n" in actual.rstrip("\n")
    return Difference(
        path=path,
        message=message,
        expected=expected,
        actual=actual,
        diff=unified_diff(expected, actual) if multi_line else None,
    )


def match(expected: Any, actual: Any, path: str = "$", *, exact: bool = False) -> list[Difference]:
    """Every way ``actual`` departs from ``expected`` (empty: it matches).

    With ``exact`` (for language-neutral vectors) there are no operators, an actual mapping may hold
    no key the expected one lacks, and scalars must also agree in JSON type.
    """
    if (
        not exact
        and isinstance(expected, Mapping)
        and len(expected) == 1
        and next(iter(expected)).startswith("$")
    ):
        return _operator(next(iter(expected)), next(iter(expected.values())), actual, path)
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [Difference(path=path, message="expected an object", expected=expected, actual=actual)]
        out: list[Difference] = []
        for key, want in expected.items():
            got = actual.get(key, ABSENT)
            tolerant = isinstance(want, Mapping) and ("$absent" in want or "$if_present" in want)
            if got is ABSENT and (exact or not tolerant):
                out.append(Difference(path=f"{path}.{key}", message="missing", expected=want, form="missing"))
                continue
            out.extend(match(want, got, f"{path}.{key}", exact=exact))
        if exact:
            out += [
                Difference(path=f"{path}.{key}", message="not expected", actual=actual[key], form="extra")
                for key in actual
                if key not in expected
            ]
        return out
    if isinstance(expected, list | tuple):
        if not isinstance(actual, list | tuple):
            return [Difference(path=path, message="expected a list", expected=list(expected), actual=actual)]
        if len(expected) != len(actual):
            return _list_differences(list(expected), list(actual), path, exact=exact)
        return [
            d
            for i, (w, g) in enumerate(zip(expected, actual, strict=True))
            for d in match(w, g, f"{path}[{i}]", exact=exact)
        ]
    same_type = (
        type(expected) is type(actual) if exact else not (type(expected) is bool) ^ (type(actual) is bool)
    )
    if expected != actual or not same_type:
        if isinstance(expected, str) and isinstance(actual, str):
            return [text_difference(expected, actual, path, "differs")]
        return [Difference(path=path, message="differs", expected=expected, actual=actual)]
    return []


def _list_differences(expected: list[Any], actual: list[Any], path: str, *, exact: bool) -> list[Difference]:
    """Lists of different lengths: a summary, then the missing, extra and changed items.

    The items are aligned on the longest run of matching ones (items match as :func:`match` says);
    within a gap between two aligned items, expected and actual items pair up by position and compare
    item by item, and what is left over is missing (expected, not seen) or extra (seen, not expected).
    Paths name the expected index for a missing item and the actual index for an extra or changed one.
    """
    pairs = _align(expected, actual, exact=exact)
    details: list[Difference] = []
    missing: list[int] = []
    extra: list[int] = []
    i = j = 0
    for next_i, next_j in [*pairs, (len(expected), len(actual))]:
        gap_expected, gap_actual = list(range(i, next_i)), list(range(j, next_j))
        for a, b in zip(gap_expected, gap_actual, strict=False):
            details += match(expected[a], actual[b], f"{path}[{b}]", exact=exact)
        for a in gap_expected[len(gap_actual) :]:
            missing.append(a)
            details.append(
                Difference(path=f"{path}[{a}]", message="missing item", expected=expected[a], form="missing")
            )
        for b in gap_actual[len(gap_expected) :]:
            extra.append(b)
            details.append(
                Difference(path=f"{path}[{b}]", message="extra item", actual=actual[b], form="extra")
            )
        i, j = next_i + 1, next_j + 1
    parts = [f"expected {_items(len(expected))}, got {len(actual)}"]
    if missing:
        parts.append(f"{len(missing)} missing ({_indices(missing)} of the expected)")
    if extra:
        parts.append(f"{len(extra)} extra ({_indices(extra)} of the actual)")
    changed = len(details) - len(missing) - len(extra)
    if changed:
        parts.append(f"{changed} difference(s) inside paired items")
    summary = Difference(path=path, message="; ".join(parts), form="length")
    return [summary, *details]


def _items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _indices(indices: Sequence[int]) -> str:
    shown = ", ".join(f"[{i}]" for i in indices[:8])
    return shown + (f" and {len(indices) - 8} more" if len(indices) > 8 else "")


def _align(expected: Sequence[Any], actual: Sequence[Any], *, exact: bool) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of matching items (none past the work limit)."""
    n, m = len(expected), len(actual)
    if n == 0 or m == 0 or n * m > _ALIGN_LIMIT:
        return []
    same = [[not match(expected[a], actual[b], exact=exact) for b in range(m)] for a in range(n)]
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for a in range(n - 1, -1, -1):
        for b in range(m - 1, -1, -1):
            best[a][b] = best[a + 1][b + 1] + 1 if same[a][b] else max(best[a + 1][b], best[a][b + 1])
    pairs: list[tuple[int, int]] = []
    a = b = 0
    while a < n and b < m:
        if same[a][b] and best[a][b] == best[a + 1][b + 1] + 1:
            pairs.append((a, b))
            a, b = a + 1, b + 1
        elif best[a + 1][b] >= best[a][b + 1]:
            a += 1
        else:
            b += 1
    return pairs


def _operator(name: str, argument: Any, actual: Any, path: str) -> list[Difference]:
    def fail(message: str) -> list[Difference]:
        if actual is ABSENT:
            return [Difference(path=path, message=message, expected={name: argument}, form="missing")]
        return [Difference(path=path, message=message, expected={name: argument}, actual=actual)]

    if name == "$absent":
        return (
            []
            if (actual is ABSENT) == bool(argument)
            else fail("must be absent" if argument else "must be present")
        )
    if name == "$if_present":
        return [] if actual is ABSENT else match(argument, actual, path)
    if actual is ABSENT:
        return fail("missing")
    if name == "$matches":
        return (
            []
            if isinstance(actual, str) and re.fullmatch(argument, actual)
            else fail(f"must match {argument}")
        )
    if name == "$any":
        return []
    if name == "$contains":
        if isinstance(actual, str) and isinstance(argument, str):
            return [] if argument in actual else fail(f"does not contain {argument!r}")
        if isinstance(actual, list | tuple):
            return [] if any(not match(argument, item) for item in actual) else fail("no item matches")
        return fail("cannot contain")
    if name == "$not_contains":
        return fail(f"must not contain {argument!r}") if str(argument) in _json(actual) else []
    if name == "$len":
        return (
            []
            if isinstance(actual, Sequence) and len(actual) == argument
            else fail(f"length must be {argument}")
        )
    if name == "$gte":
        return (
            [] if isinstance(actual, int | float) and actual >= argument else fail(f"must be >= {argument}")
        )
    if name == "$lte":
        return (
            [] if isinstance(actual, int | float) and actual <= argument else fail(f"must be <= {argument}")
        )
    if name == "$one_of":
        return (
            []
            if any(not match(option, actual) for option in argument)
            else fail("matches none of the options")
        )
    return _composite(name, argument, actual, path, fail)


def _composite(
    name: str, argument: Any, actual: Any, path: str, fail: Callable[[str], list[Difference]]
) -> list[Difference]:
    """The operators that combine expectations or check a stated property (``actual`` is present)."""
    if name == "$all":
        return [d for each in argument for d in match(each, actual, path)]
    if name == "$joined_text":
        text = _joined_text(actual)
        return (
            match(argument, text, path)
            if text is not None
            else fail("is not a list of text parts or messages")
        )
    if name == "$shape":
        marks = (argument["kit_defined"],)
        return [d.model_copy(update={"kit_defined": marks}) for d in match(argument["is"], actual, path)]
    if name == "$overflow_message":
        problems = overflow_message_problems(
            actual, str(argument["model"]), argument.get("window"), bool(argument.get("tools_ran"))
        )
        return fail("; ".join(problems)) if problems else []
    return fail(f"unknown operator {name}")


def _joined_text(value: Any) -> str | None:
    """The text of a list of content parts or of messages, text parts joined by a blank line."""
    if not isinstance(value, list | tuple):
        return None
    texts: list[str] = []
    for item in value:
        if not isinstance(item, Mapping):
            return None
        if "content" in item and "role" in item:
            inner = _joined_text(item["content"]) if isinstance(item["content"], list | tuple) else None
            if inner is None:
                return None
            texts += [inner] if inner else []
        elif item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
    return "\n\n".join(texts)


_TOOLS_RAN = re.compile(r"\btools?\b[^.;]*\b(ran|run|executed|dispatched|called)\b", re.IGNORECASE)
_NO_TOOLS = re.compile(
    r"\b(no|without|zero)\s+(\w+\s+)?tools?\b|\btools?\s+(\w+\s+){0,2}(not|never)\b|\bbefore\s+(any\s+)?tools?\b",
    re.IGNORECASE,
)


def overflow_message_problems(message: Any, model: str, window: int | None, tools_ran: bool) -> list[str]:
    """How ``message`` fails the property AS-OVF-003 states (empty: it has it).

    The message names the attempted ``model`` (as a whole word); it names the authoritative ``window`` as a
    decimal number (digit groups may be separated by ``,``, ``.``, ``_``, a space or a thin space), or,
    without one, says the size is unknown (the word ``unknown``) and names no number that could pass for
    one; and it says whether tools already ran: a message of a turn that dispatched tools says tools ran
    (``tool`` or ``tools`` followed in the same clause by ran, run, executed, dispatched or called) and
    one of a turn that dispatched none does not say so (unless it says that none ran: no, without or zero
    just before ``tool``, not or never just after it, or before any tool).  The exact wording is
    KD-OVF-2's, a kit choice.
    """
    if not isinstance(message, str):
        return ["is not a text"]
    problems: list[str] = []
    named = re.compile(rf"(?<![\w-]){re.escape(model)}(?![\w-])")
    if not named.search(message):
        problems.append(f"does not name the attempted model {model!r}")
    rest = named.sub(" ", message)
    numbers = [re.sub(r"[,._ \u2009]", "", n) for n in re.findall(r"\d[\d,._ \u2009]*\d|\d", rest)]
    if window is not None and str(window) not in numbers:
        problems.append(f"does not name the window {window}")
    if window is None and ("unknown" not in message.lower() or any(len(n) > 2 for n in numbers)):
        problems.append("does not say the window size is unknown")
    said = bool(_TOOLS_RAN.search(message)) and not _NO_TOOLS.search(message)
    if said != tools_ran:
        problems.append("does not say tools already ran" if tools_ran else "says tools ran, none did")
    return problems


def normalise(value: Any, *, session_ids: Sequence[str], workdir: str | None) -> Any:
    """Replace volatile data: the session id, timestamps, the case's working directory.

    Mappings become dicts and lists or tuples lists; the text under a ``timestamp`` key becomes
    ``<timestamp>``; a text equal to a session id becomes that id's placeholder, and otherwise every
    session id standing as a whole token in a text, the working directory and every embedded ISO 8601
    timestamp are replaced inside it.  A snapshot walks every value a case observed (a long case holds
    tens of thousands), so the id patterns are compiled once per call, plain dicts, lists and texts are
    told apart by their exact type before the abstract checks, and a text too short or without a colon
    skips the timestamp search (no timestamp fits in it)."""
    ids = [
        (sid, f"<session-id-{index + 1}>", re.compile(rf"(?<![A-Za-z0-9]){re.escape(sid)}(?![A-Za-z0-9])"))
        for index, sid in enumerate(session_ids)
        if sid
    ]
    embedded = _EMBEDDED_TIMESTAMP.sub

    def text(value: str) -> str:
        for sid, placeholder, pattern in ids:
            if value == sid:
                return placeholder
            if sid in value:  # inside a text (a workflow id, an exported YAML), as a whole token
                value = pattern.sub(placeholder, value)
        if workdir and workdir in value:
            value = value.replace(workdir, "<workdir>")
        if len(value) < _SHORTEST_TIMESTAMP or ":" not in value:
            return value
        return embedded("<timestamp>", value)  # also inside texts (an exported YAML)

    def walk(value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return text(value)
        if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
            return {
                key: "<timestamp>" if key == "timestamp" and isinstance(item, str) else walk(item)
                for key, item in value.items()
            }
        if kind is list or kind is tuple or isinstance(value, list | tuple):
            return [walk(item) for item in value]
        if kind is int or kind is bool or value is None:
            return value
        return text(value) if isinstance(value, str) else value

    return walk(value)


_SHORTEST_TIMESTAMP = len("2000-01-01T00:00:00Z")


def check_envelope(
    events: Sequence[Mapping[str, Any]], session_id: str | None, *, first: int | None = 0
) -> list[Difference]:
    """Per-instance sequence numbers rising by one with no gap; the session id; ISO 8601 timestamps.

    ``first`` is the number the instance's first event must carry; None accepts any (a resumed instance
    may restart at 0 or continue the session's numbering, KD-EVT-4), the rest must follow it gap-free.
    Each rule reports its first offending event only, booked on its own clause: the numbering on
    AS-EVT-002, the id and the timestamp on AS-EVT-001 (the envelope, KD-EVT-2).
    """
    start = events[0].get("sequenceNumber") if events and first is None else first
    if not isinstance(start, int) or isinstance(start, bool):
        start = 0
    rules: list[tuple[str, str, Callable[[int, Mapping[str, Any]], bool], Callable[[int], Any]]] = [
        (
            "sequenceNumber",
            "sequence numbers rise by one with no gap"
            + (f" from {first}" if first is not None else " from the instance's first event"),
            lambda index, event: event.get("sequenceNumber") == start + index,
            lambda index: start + index,
        ),
        (
            "sessionId",
            "every event carries the session's id",
            lambda _index, event: session_id is None or event.get("sessionId") == session_id,
            lambda _index: session_id,
        ),
        (
            "timestamp",
            "timestamps are ISO 8601 with a zone",
            lambda _index, event: (
                isinstance(event.get("timestamp"), str) and bool(_TIMESTAMP.match(event["timestamp"]))
            ),
            lambda _index: "ISO 8601",
        ),
    ]
    out: list[Difference] = []
    for key, message, holds, expected in rules:
        index = next((i for i, event in enumerate(events) if not holds(i, event)), None)
        if index is not None:
            numbering = key == "sequenceNumber"
            out.append(
                Difference(
                    path=f"events[{index}].{key}",
                    message=message,
                    expected=expected(index),
                    actual=events[index].get(key),
                    clauses=("AS-EVT-002",) if numbering else ("AS-EVT-001",),
                    # starting at 0 is the kit's choice; rising by one with no gap is the spec's
                    kit_defined=() if numbering and index > 0 else ("KD-EVT-2",),
                )
            )
    return out
