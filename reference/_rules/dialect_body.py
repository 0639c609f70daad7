"""A reply's body as bounded bytes: its content-encoding undone piece by piece, never past a cap (no I/O).

The engine's HTTP client reads a vendor's reply raw and hands each read here.  ``gzip`` and ``deflate``
(the encodings it accepts) are inflated at most :data:`PIECE` bytes at a time, so a small compressed read
that would inflate to gigabytes yields one bounded piece after another; the count of decoded bytes is
checked after every piece, and passing ``limit`` raises :class:`BodyLimitError` (the reader stops there).
An encoding the engine did not ask for, or bytes that do not inflate, raise :class:`BodyEncodingError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from relavium_reference._model.errors import DependencyError

__all__ = ["ACCEPTED_ENCODINGS", "PIECE", "BodyEncodingError", "BodyLimitError", "BoundedBody"]

ACCEPTED_ENCODINGS = "gzip, deflate"
"""The ``accept-encoding`` the client sends: what :class:`BoundedBody` can undo."""
PIECE = 64 * 1024
"""The most bytes one inflation step produces."""

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class BodyLimitError(DependencyError):
    """The decoded body passed its cap."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the reply's body exceeded {limit} bytes")
        self.limit = limit


class BodyEncodingError(DependencyError):
    """The body's content-encoding is not one the client accepts, or its bytes do not decode."""


class BoundedBody:
    """Feed raw reads with :meth:`feed`; each yields the decoded pieces, at most ``limit`` bytes in all."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in _WBITS):
            raise BodyEncodingError(f"content-encoding {content_encoding!r} was not asked for")
        self.limit = limit
        self.size = 0
        self._inflate = zlib.decompressobj(_WBITS[codings[0]]) if codings else None
        self._raw_deflate = codings == ["deflate"]  # some servers send deflate without its zlib header

    def feed(self, raw: bytes) -> Iterator[bytes]:
        if self._inflate is None:
            for start in range(0, len(raw), PIECE):
                yield self._count(raw[start : start + PIECE])
            return
        data = raw
        while data:
            try:
                piece = self._inflate.decompress(data, PIECE)
            except zlib.error as exc:
                if not self._retry_raw():
                    raise BodyEncodingError(f"the body does not decode: {exc}") from exc
                continue
            self._raw_deflate = False  # the first bytes decided the flavour
            data = self._inflate.unconsumed_tail
            if piece:
                yield self._count(piece)
            if self._inflate.eof:
                return  # bytes after the end of the compressed stream are ignored

    def _retry_raw(self) -> bool:
        if not self._raw_deflate or self.size:
            return False
        self._raw_deflate = False
        self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        return True

    def _count(self, piece: bytes) -> bytes:
        self.size += len(piece)
        if self.size > self.limit:
            raise BodyLimitError(self.limit)
        return piece
