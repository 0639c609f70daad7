"""The handshake's version agreement: which protocol version the two sides speak, and what it changes.

The kit sends its newest version in ``hello``; the implementation answers the version it chose.  Minor
versions of one major are cumulative (1.1 is 1.0 plus batch lines), so the kit speaks the newest of its
own versions that is not newer than the answer: an answer of 1.0 is served 1.0's framing, an answer of
1.1 or a later 1.x is served 1.1's.  Another major, or a version older than every one the kit speaks,
cannot be served.  The changelog is ``docs/protocol.md``'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

from relavium_conformance._version import PROTOCOL_VERSION, PROTOCOL_VERSIONS
from relavium_conformance._wire.envelope import MalformedMessage, ProtocolMismatch, quote

__all__ = [
    "BATCH_LINES_SINCE",
    "agree_protocol_version",
    "answer_protocol_version",
    "has_batch_lines",
    "spoken_versions",
]


_VERSION: Final = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?")

#: The first version with batch lines: operations issued together as one JSON array on one line (KD-KIT-1).
BATCH_LINES_SINCE: Final = "1.1"


def _parse(version: str) -> tuple[int, int] | None:
    match = _VERSION.fullmatch(version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _key(version: str) -> tuple[int, int]:
    parsed = _parse(version)
    if parsed is None:
        raise ValueError(f"not a protocol version: {version!r}")
    return parsed


def spoken_versions(versions: Sequence[str] = PROTOCOL_VERSIONS) -> str:
    """``1.0 and 1.1``: the versions, oldest first, for a message."""
    ordered = sorted(versions, key=_key)
    return ordered[0] if len(ordered) == 1 else f"{', '.join(ordered[:-1])} and {ordered[-1]}"


def has_batch_lines(version: str) -> bool:
    """Whether ``version`` carries operations issued together as one batch line (1.1 and later)."""
    return _key(version) >= _key(BATCH_LINES_SINCE)


def _newest_not_after(answered: tuple[int, int], versions: Sequence[str]) -> str | None:
    same_major = [v for v in versions if _key(v)[0] == answered[0] and _key(v) <= answered]
    return max(same_major, key=_key) if same_major else None


def agree_protocol_version(hello_result: object, versions: Sequence[str] = PROTOCOL_VERSIONS) -> str:
    """Check a ``hello`` answer and return the version the kit speaks from now on (one of ``versions``).

    Raises :class:`MalformedMessage` when the answer is not an object carrying a ``MAJOR.MINOR[.PATCH]``
    string, and :class:`ProtocolMismatch`, naming both sides' versions, when no version of ``versions``
    can serve it (another major, or older than all of them).
    """
    if not isinstance(hello_result, dict):
        raise MalformedMessage(f"the hello answer is not an object: {quote(json.dumps(hello_result))}")
    answered = hello_result.get("protocolVersion")
    parsed = _parse(answered) if isinstance(answered, str) else None
    if parsed is None:
        raise MalformedMessage(
            "the hello answer has no protocolVersion of the form MAJOR.MINOR: "
            + quote(json.dumps(hello_result, ensure_ascii=False))
        )
    agreed = _newest_not_after(parsed, versions)
    if agreed is None:
        raise ProtocolMismatch(
            f"the implementation speaks protocol {answered}, the kit speaks {spoken_versions(versions)} "
            "(the major versions must be equal, and the minor one the kit knows or newer)"
        )
    return agreed


def answer_protocol_version(offered: object, versions: Sequence[str] = PROTOCOL_VERSIONS) -> str:
    """The implementation's side: the version to answer to a ``hello`` offering ``offered`` (the newest of
    ``versions`` not newer than it, in its major; the newest of ``versions`` when none fits, which the
    kit then refuses by name)."""
    parsed = _parse(offered) if isinstance(offered, str) else None
    chosen = _newest_not_after(parsed, versions) if parsed is not None else None
    return chosen if chosen is not None else max(versions, key=_key, default=PROTOCOL_VERSION)
