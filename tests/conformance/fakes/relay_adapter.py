"""The reference stdio server behind a relay that misbehaves once, for the runner's blame tests.

``python relay_adapter.py MODE ID``: runs ``relavium-conformance stdio-server`` and passes every line
both ways, except:

* ``record``: appends the id of every request the kit sends to ``$FAKE_IDS`` (one per line);
* ``duplicate``: writes the answer to request ``ID`` twice;
* ``exit-after``: exits right after passing on the answer to request ``ID``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

MODE, TARGET = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0


def main() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "relavium_conformance", "stdio-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    to_server, from_server = server.stdin, server.stdout

    def kit_to_server() -> None:
        for line in sys.stdin.buffer:
            if MODE == "record":
                message = json.loads(line)
                if "method" in message and "id" in message:
                    with open(os.environ["FAKE_IDS"], "a", encoding="utf-8") as handle:
                        handle.write(f"{message['id']}\n")
            to_server.write(line)
            to_server.flush()
        to_server.close()

    threading.Thread(target=kit_to_server, daemon=True).start()
    out = sys.stdout.buffer
    for line in from_server:
        message = json.loads(line)
        is_target = "method" not in message and message.get("id") == TARGET
        out.write(line * 2 if is_target and MODE == "duplicate" else line)
        out.flush()
        if is_target and MODE == "exit-after":
            server.kill()
            os._exit(0)
    server.wait()


if __name__ == "__main__":
    main()
