"""The kit's versions, looked up in one place: the kit, the corpus it carries, the protocol it speaks.

* the **kit version** is the installed distribution's version (``0+checkout`` when the sources run
  without being installed);
* the **corpus version** names the exact set of cases and clauses: the number of cases and a
  digest of every file under ``fixtures/`` (two kits with the same corpus version judge alike);
* the **protocol version** is the stdio protocol's ``MAJOR.MINOR`` sent in ``hello`` (the newest the
  kit speaks; :data:`PROTOCOL_VERSIONS` lists every version it still serves, see ``docs/protocol.md``).

Every other module asks here (``--version``, the ``hello`` the kit sends, the reference engine's own
``hello`` answer, the results document's ``kit`` block).

May import: ``_errors``, ``_data`` (the rooms below it; tests/test_layering.py holds the order).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Final

__all__ = [
    "CHECKOUT_VERSION",
    "DISTRIBUTION",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "REFERENCE_NAME",
    "corpus_version",
    "kit_version",
    "version_line",
]

#: The distribution (and the kit's name in ``hello`` and in results).
DISTRIBUTION: Final = "relavium-conformance"

#: The newest version of the kit's stdio protocol, sent in ``hello`` (1.1: batch lines, KD-KIT-1).
PROTOCOL_VERSION: Final = "1.1"

#: Every protocol version the kit serves, oldest first: an implementation answering 1.0 is served 1.0's
#: framing (no batch lines).  The changelog is ``docs/protocol.md``'s.
PROTOCOL_VERSIONS: Final = ("1.0", "1.1")

#: The reference engine's name in its ``hello`` answer (the kit takes snapshots of its runs by default).
REFERENCE_NAME: Final = "relavium-reference"

CHECKOUT_VERSION: Final = "0+checkout"
"""What a source tree that was never installed reports."""


@functools.cache
def kit_version() -> str:
    """The installed kit's version (``0+checkout`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return CHECKOUT_VERSION


@functools.cache
def corpus_version(cases: int) -> str:
    """``<n> cases, sha256:<12 hex>``: ``cases``, the count of the corpus's cases as ``run`` counts them
    (a vector file may hold several; the caller counts them, since the corpus room sits above this one),
    and a digest of every fixture file (paths and contents, in path order), so any edit of a case, script
    or clause changes it."""
    from relavium_conformance._data import fixtures_dir

    root = fixtures_dir()
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return f"{cases} cases, sha256:{digest.hexdigest()[:12]}"


def version_line(cases: int) -> str:
    """What ``relavium-conformance --version`` prints: one line with the three versions (``cases``: the
    corpus's case count, see :func:`corpus_version`)."""
    older = ", ".join(v for v in PROTOCOL_VERSIONS if v != PROTOCOL_VERSION)
    protocol = f"protocol {PROTOCOL_VERSION}" + (f", also serves {older}" if older else "")
    return f"{DISTRIBUTION} {kit_version()} (corpus {corpus_version(cases)}; {protocol})"
