"""The worked minimal store (docs/examples/minimal-store-adapter.py), misbehaving at one chosen case.

``python misbehaving_store.py MODE N`` counts the ``store.open`` requests it receives (each starts a case
on this connection) and, at the N-th:

``stall MARK``  appends ``stalled`` to the file MARK and answers nothing from then on (it still reads its
                input): the run waits there until a signal stops it; ``bye`` is appended when the kit
                says it (stopping the implementation), nothing when the input merely ends
``late``        answers the N-th store.open only after sending a second answer to the request it answered
                last (the previous case's last one): a late duplicate, that case's fault, not this one's

Anything else is answered as the minimal store answers it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "minimal-store-adapter.py"


def _minimal() -> Any:
    spec = importlib.util.spec_from_file_location("minimal_store_adapter", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    minimal = _minimal()
    mode, at = sys.argv[1], int(sys.argv[2])
    store: Any = None
    opens = 0
    last_reply: dict[str, Any] | None = None
    silent = False
    for line in sys.stdin:
        parsed = json.loads(line)
        for message in parsed if isinstance(parsed, list) else [parsed]:
            if "id" not in message:  # a notification: bye
                if silent:  # (the kit stopped the stalled store itself)
                    with open(sys.argv[3], "a", encoding="utf-8") as mark:
                        mark.write("bye\n")
                return
            if message.get("method") == "store.open":
                opens += 1
                if opens == at and mode == "stall":
                    with open(sys.argv[3], "a", encoding="utf-8") as mark:
                        mark.write("stalled\n")
                    silent = True
                if opens == at and mode == "late" and last_reply is not None:
                    sys.stdout.write(json.dumps(last_reply) + "\n")  # the duplicate, sent late
            if silent:
                continue
            store, reply = minimal.answer(store, message)
            last_reply = reply
            sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
