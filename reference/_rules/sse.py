"""Server-sent events, decoded incrementally from bytes as they arrive (no I/O).

The vendors stream their replies as ``text/event-stream``: lines of ``field: value``, an event ending at a
blank line.  A network read can end anywhere, inside a line, inside a UTF-8 sequence or between the two
bytes of a ``\\r\\n``, so :class:`SseDecoder` keeps what it has not yet understood until more arrives.
The rules followed are the event-stream format's own: ``data`` lines accumulate (joined by newlines),
``event`` names the event (``message`` when absent), ``id`` is kept, a line starting with ``:`` is a
comment (Anthropic's keep-alive pings are events, not comments), one space after the colon is dropped,
and a blank line dispatches the event when it carried data.

Decoding is linear in what arrives: an unfinished line is kept as the list of its pieces and joined once,
when its end arrives, and each read is scanned once.  A sender cannot make it hold more than a bounded
amount either: a line longer than ``max_line`` characters, or an event whose data outgrows ``max_event``,
raises :class:`SseLimitError` as soon as the cap is passed (the decoder is spent after that).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from relavium_reference._model.errors import DependencyError

__all__ = ["DEFAULT_MAX_EVENT", "DEFAULT_MAX_LINE", "SseDecoder", "SseEvent", "SseLimitError", "decode_all"]

DEFAULT_MAX_LINE = 4 * 1024 * 1024
"""The longest line (in characters) a decoder keeps by default: 4 Mi."""
DEFAULT_MAX_EVENT = 8 * 1024 * 1024
"""The most data (in characters, its lines joined) one event may carry by default: 8 Mi."""


class SseLimitError(DependencyError):
    """A line or an event of the stream passed its cap; ``what`` is ``line`` or ``event``."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"a server-sent {what} exceeded {limit} characters")
        self.what = what
        self.limit = limit


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its name, its data (the ``data`` lines joined by ``\\n``) and its id."""

    event: str
    data: str
    id: str | None = None


class SseDecoder:
    """Feed bytes with :meth:`feed`; each call returns the events completed so far, in order."""

    def __init__(self, *, max_line: int = DEFAULT_MAX_LINE, max_event: int = DEFAULT_MAX_EVENT) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []  # the unfinished line, as it arrived
        self._pending = 0  # its length
        self._after_cr = False  # the last line ended at a \r: a \n opening the next read belongs to it
        self._event = ""
        self._data: list[str] = []
        self._size = 0  # the data held for the current event
        self._id: str | None = None
        self._first = True

    def feed(self, chunk: bytes) -> list[SseEvent]:
        return self._lines(self._text.decode(chunk))

    def close(self) -> list[SseEvent]:
        """The end of the stream: a last line without its newline still counts; an undispatched event
        (no blank line after it) is dropped, as the format says."""
        events = self._lines(self._text.decode(b"", final=True))
        if self._pieces:
            self._field(self._line(""))
        return events

    def _lines(self, text: str) -> list[SseEvent]:
        if self._first and text:
            self._first = False
            text = text.removeprefix("\ufeff")
        if self._after_cr and text:
            self._after_cr = False
            text = text.removeprefix("\n")  # the second half of a \r\n split across reads
        if "\r" in text:
            self._after_cr = text.endswith("\r")
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        rest = lines.pop()  # what follows the last line end: the start of an unfinished line
        events: list[SseEvent] = []
        if lines:
            lines[0] = self._line(lines[0])  # the unfinished line of the earlier reads ends here
            if max(map(len, lines)) > self.max_line:
                raise SseLimitError("line", self.max_line)
            for line in lines:
                if not line:
                    event = self._dispatch()
                    if event is not None:
                        events.append(event)
                elif line[0] != ":":
                    self._field(line)
        if rest:
            self._keep(rest)
        return events

    def _keep(self, piece: str) -> None:
        self._pending += len(piece)
        if self._pending > self.max_line:
            raise SseLimitError("line", self.max_line)
        self._pieces.append(piece)

    def _line(self, last: str) -> str:
        if not self._pieces:
            line = last
        else:
            self._pieces.append(last)
            line = "".join(self._pieces)
            self._pieces = []
            self._pending = 0
        if len(line) > self.max_line:
            raise SseLimitError("line", self.max_line)
        return line

    def _field(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._size += len(value) + 1
            if self._size > self.max_event:
                raise SseLimitError("event", self.max_event)
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        return None  # "retry" and unknown fields are ignored

    def _dispatch(self) -> SseEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SseEvent(event=self._event or "message", data="\n".join(self._data), id=self._id)
        self._event = ""
        self._data = []
        self._size = 0
        return event


def decode_all(body: bytes) -> list[SseEvent]:
    """Every event of a whole body (a recorded stream)."""
    decoder = SseDecoder()
    return decoder.feed(body) + decoder.close()
