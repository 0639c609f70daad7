"""The handshake's version check: the implementation must answer the kit's protocol major version."""

from __future__ import annotations

import json
import re
from typing import Final

from relavium_conformance._wire.jsonrpc import MalformedMessage, ProtocolMismatch, quote

__all__ = ["check_protocol_version"]


_VERSION: Final = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?")


def _major(version: str) -> int | None:
    match = _VERSION.fullmatch(version)
    return int(match.group(1)) if match else None


def check_protocol_version(kit_version: str, hello_result: object) -> str:
    """Check a ``hello`` answer and return the implementation's ``protocolVersion``.

    Raises :class:`MalformedMessage` when the answer is not an object carrying a ``MAJOR.MINOR[.PATCH]``
    string, and :class:`ProtocolMismatch` when its major differs from ``kit_version``'s.
    """
    if not isinstance(hello_result, dict):
        raise MalformedMessage(f"the hello answer is not an object: {quote(json.dumps(hello_result))}")
    answered = hello_result.get("protocolVersion")
    if not isinstance(answered, str) or _major(answered) is None:
        raise MalformedMessage(
            "the hello answer has no protocolVersion of the form MAJOR.MINOR: "
            + quote(json.dumps(hello_result, ensure_ascii=False))
        )
    if _major(answered) != _major(kit_version):
        raise ProtocolMismatch(
            f"the implementation speaks protocol {answered}, the kit speaks {kit_version} "
            "(the major versions must be equal)"
        )
    return answered
