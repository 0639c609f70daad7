"""The error answers of the kit's host when a case scripts a failure (a failing event sink or commit).

The kit plays the host; these are its answers, not judgements: the judge reads what the implementation
did with them.
"""

from __future__ import annotations

from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import CLASSIFIED_HOST_FAILURE

__all__ = ["failed_commit", "failed_sink"]


def failed_sink(fail: bool | str) -> RpcError:
    """The error answer of a scripted failing event sink: opaque for ``fail: true`` or ``raw``, readable
    and classified (the classified data) for ``classified`` (KD-EVT-8)."""
    if fail == "classified":
        return RpcError(-32000, "kit: the host's event sink failed (scripted)", dict(CLASSIFIED_HOST_FAILURE))
    return RpcError(-32000, "kit: the host's event sink failed (scripted)")


def failed_commit(fail: bool | str) -> RpcError:
    """The error answer of a scripted failed commit: classified (readable, with the classified data) for
    ``fail: true`` or ``classified``, raw (no data: an opaque failure) for ``raw`` (KD-MSG-6)."""
    if fail == "raw":
        return RpcError(-32000, "kit: an opaque host failure (scripted)")
    return RpcError(-32000, "kit: the commit failed (scripted)", dict(CLASSIFIED_HOST_FAILURE))
