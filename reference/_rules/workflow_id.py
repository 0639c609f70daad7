"""The deterministic workflow id of an exported session (kit choices KD-EXP-1 and KD-EXP-2).

A usable title becomes an ASCII kebab-case slug:

1. NFKD compatibility decomposition;
2. every combining mark (Unicode general category ``M*``: ``Mn``, ``Mc``, ``Me``) is removed;
3. full (locale-free) lowercase;
4. the two explicit mappings dotless i (U+0131) to ``i`` and sharp s (U+00DF) to ``ss``; they run *after*
   lowercasing, so the capital sharp s (U+1E9E, which lowercases to U+00DF) also becomes ``ss``;
5. every maximal run of characters outside ``[a-z0-9]`` (ASCII punctuation, spaces and any non-ASCII
   character that is left) is one separator; separators at either end are dropped;
6. the slug is cut to 128 characters and any separator left at the cut end is dropped.

A title is unusable when it is absent or its slug is empty.  Then the session id decides:

* a legal kebab-case id of at most 111 characters gives ``exported-session-<id>`` (at most 128);
* any other non-empty id gives ``exported-session-id-`` followed by four lowercase hexadecimal digits
  for each of the first 24 UTF-16 code units of the id (an astral character is two units, a surrogate
  pair cut at the 24th unit keeps only its high half), so at most 116 characters.

No clock, no randomness, no locale: the same inputs always give the same id.  Ids are not unique.
"""

from __future__ import annotations

import re
import unicodedata

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.shapes import KEBAB_ID_PATTERN

__all__ = [
    "FALLBACK_ID_UNITS",
    "MAX_KEBAB_SESSION_ID",
    "MAX_WORKFLOW_ID_LENGTH",
    "title_slug",
    "workflow_id",
]

MAX_WORKFLOW_ID_LENGTH = 128
MAX_KEBAB_SESSION_ID = 111  # len("exported-session-") + 111 == 128
FALLBACK_ID_UNITS = 24  # len("exported-session-id-") + 4 * 24 == 116

_KEBAB = re.compile(KEBAB_ID_PATTERN)
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_EXPLICIT = str.maketrans({"\u0131": "i", "\u00df": "ss"})
_SESSION_PREFIX = "exported-session-"
_HEX_PREFIX = "exported-session-id-"


def title_slug(title: str) -> str:
    """The kebab slug of ``title`` (possibly empty, which makes the title unusable)."""
    decomposed = unicodedata.normalize("NFKD", title)
    unmarked = "".join(ch for ch in decomposed if not unicodedata.category(ch).startswith("M"))
    lowered = unmarked.lower().translate(_EXPLICIT)
    slug = _NOT_SLUG.sub("-", lowered).strip("-")
    return slug[:MAX_WORKFLOW_ID_LENGTH].rstrip("-")


def _utf16_hex(session_id: str) -> str:
    units = session_id.encode("utf-16-be", "surrogatepass")[: 2 * FALLBACK_ID_UNITS]
    return units.hex()


def workflow_id(title: str | None, session_id: str) -> str:
    """The workflow id for a session export.

    Raises :class:`InvalidInputError` when the title is unusable and ``session_id`` is empty (a
    session id is never empty; there would be nothing left to encode, KD-EXP-2), and when ``title`` is
    neither text nor ``None`` or ``session_id`` is not text.
    """
    if title is not None and not isinstance(title, str):
        raise InvalidInputError("title must be text or absent", location="title")
    if not isinstance(session_id, str):
        raise InvalidInputError("session id must be text", location="session_id")
    if title is not None:
        slug = title_slug(title)
        if slug:
            return slug
    if len(session_id) <= MAX_KEBAB_SESSION_ID and _KEBAB.fullmatch(session_id):
        return _SESSION_PREFIX + session_id
    if not session_id:
        raise InvalidInputError("session id is empty", location="session_id")
    return _HEX_PREFIX + _utf16_hex(session_id)
