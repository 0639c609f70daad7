"""Server-sent events, decoded incrementally from bytes as they arrive (no I/O).

The vendors stream their replies as ``text/event-stream``: lines of ``field: value``, an event ending at a
blank line.  A network read can end anywhere, inside a line, inside a UTF-8 sequence or between the two
bytes of a ``\\r\\n``, so :class:`SseDecoder` keeps what it has not yet understood until more arrives.
The rules followed are the event-stream format's own: ``data`` lines accumulate (joined by newlines),
``event`` names the event (``message`` when absent), ``id`` is kept, a line starting with ``:`` is a
comment (Anthropic's keep-alive pings are events, not comments), one space after the colon is dropped,
and a blank line dispatches the event when it carried data.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

__all__ = ["SseDecoder", "SseEvent", "decode_all"]


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its name, its data (the ``data`` lines joined by ``\\n``) and its id."""

    event: str
    data: str
    id: str | None = None


class SseDecoder:
    """Feed bytes with :meth:`feed`; each call returns the events completed so far, in order."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._first = True

    def feed(self, chunk: bytes) -> list[SseEvent]:
        return self._lines(self._text.decode(chunk))

    def close(self) -> list[SseEvent]:
        """The end of the stream: a last line without its newline still counts; an undispatched event
        (no blank line after it) is dropped, as the format says."""
        events = self._lines(self._text.decode(b"", final=True))
        if self._pending:
            line, self._pending = self._pending, ""
            self._field(line)
        return events

    def _lines(self, text: str) -> list[SseEvent]:
        if self._first and text:
            self._first = False
            text = text.removeprefix("\ufeff")
        buffer = self._pending + text
        events: list[SseEvent] = []
        start = 0
        index = 0
        while index < len(buffer):
            char = buffer[index]
            if char == "\r":
                if index + 1 == len(buffer):
                    break  # maybe the first half of \r\n: wait for the next read
                line = buffer[start:index]
                index += 2 if buffer[index + 1] == "\n" else 1
            elif char == "\n":
                line = buffer[start:index]
                index += 1
            else:
                index += 1
                continue
            start = index
            event = self._field(line)
            if event is not None:
                events.append(event)
        self._pending = buffer[start:]
        return events

    def _field(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
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
        return event


def decode_all(body: bytes) -> list[SseEvent]:
    """Every event of a whole body (a recorded stream)."""
    decoder = SseDecoder()
    return decoder.feed(body) + decoder.close()
