"""A transport shim that splits every write into single bytes, both ways.

``python byte_shim.py COMMAND...`` runs COMMAND and relays the kit's stdin to it and its stdout back,
one byte per write (pausing briefly after each line end), so a line arrives in as many pieces as it has
bytes and two lines written together arrive apart.  stderr passes through.  A verdict
that depends on how a pipe splits writes flips under it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time

_NEWLINE = ord("\n")
_PAUSE = 0.002  # seconds after each line end: timing only shapes the pieces, never the verdict


def _pump(source: int, target: int) -> None:
    try:
        while True:
            data = os.read(source, 65536)
            if not data:
                break
            for byte in data:
                os.write(target, bytes((byte,)))
                if byte == _NEWLINE:
                    time.sleep(_PAUSE)  # let the reader act on one line before the next one arrives
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.close(target)


def main() -> int:
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None
    assert child.stdout is not None
    inbound = threading.Thread(target=_pump, args=(sys.stdin.fileno(), child.stdin.fileno()), daemon=True)
    outbound = threading.Thread(target=_pump, args=(child.stdout.fileno(), sys.stdout.fileno()), daemon=True)
    inbound.start()
    outbound.start()
    outbound.join()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
