#!/usr/bin/env python3
"""A minimal session store behind the kit's session-store profile (docs/adapters.md, step 10).

Standard library only, one JSON-RPC message per line on stdin and stdout.  It keeps its sessions in
memory (so it declares no durability: read as process-local), takes the kit's clock, and offers two
optional faces, ``list`` and ``ownership``; every case that needs another face is reported
``unsupported``.  Run it with:

    relavium-conformance run --profile session-store \
        --adapter "stdio:python3 docs/examples/minimal-store-adapter.py"
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

CAPABILITIES = ["session-store", "store:clock", "store:list", "store:ownership"]


class Refusal(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Store:
    def __init__(self, now: int | None) -> None:
        self.now = now
        self.sessions: dict[str, dict[str, Any]] = {}  # id -> {ref, created, active, entries, staged}
        self.owners: dict[str, str | None] = {}
        self.refs: dict[str, dict[str, Any]] = {}

    def clock(self) -> int:
        return self.now if self.now is not None else 0

    def acquire(self, p: dict[str, Any]) -> dict[str, Any]:
        session_id = p.get("sessionId") or uuid.uuid4().hex
        session = self.sessions.get(session_id)
        if session is None:
            if p.get("requireExisting"):
                raise Refusal("not_found", f"no session {session_id}")
            ref = f"ref-{len(self.refs) + 1}"
            session = {"id": session_id, "ref": ref, "created": self.clock(), "entries": [], "staged": []}
            session["incarnation"] = uuid.uuid4().hex
            self.sessions[session_id] = self.refs[ref] = session
        session["active"] = self.clock()
        metadata = {"incarnation": session["incarnation"]}
        return {"sessionId": session_id, "ref": session["ref"], "metadata": metadata}

    def handle(self, method: str, p: dict[str, Any]) -> Any:
        if method == "store.setClock":
            self.now = p["nowMs"]
        elif method == "store.acquire":
            return self.acquire(p)
        elif method == "store.touch":
            if p["sessionId"] in self.sessions:
                self.sessions[p["sessionId"]]["active"] = self.clock()
        elif method == "store.release":
            session = self.sessions.pop(p["sessionId"], None)
            if session is not None:
                self.owners.pop(p["sessionId"], None)  # the history is gone first, then its owner row
        elif method == "store.size":
            return {"size": len(self.sessions)}
        elif method == "store.list":
            rows = sorted(self.sessions.values(), key=lambda s: (-s["active"], s["id"]))
            return {"sessions": [{"sessionId": s["id"], "lastActiveAt": s["active"]} for s in rows]}
        elif method == "store.ownerOf":
            found = p["sessionId"] in self.owners
            return {"owner": self.owners[p["sessionId"]]} if found else {}
        elif method == "store.register":
            if p["sessionId"] not in self.owners:  # first write wins; later calls are silent
                if p["owner"] is not None and not isinstance(p["owner"], str):
                    raise Refusal("invalid_owner", "an owner is a string or null")
                self.owners[p["sessionId"]] = p["owner"]
        elif method == "store.entries":
            return {"entries": self.refs[p["ref"]]["entries"]}
        elif method == "store.append":
            session = self.refs[p["ref"]]
            session["staged"] += p["entries"]
            if p.get("commit", True):
                session["entries"], session["staged"] = session["entries"] + session["staged"], []
        elif method == "store.commit":
            session = self.refs[p["ref"]]
            session["entries"], session["staged"] = session["entries"] + session["staged"], []
        else:
            raise KeyError(method)
        return {}


def pure(method: str, p: dict[str, Any]) -> Any:
    if method == "pure.boundedTail":
        path = p["entries"]
        compactions = [e for e in path if e.get("type") == "compaction"]
        floor = compactions[-1].get("firstKeptEntryId") if compactions else None
        ids = [e.get("id") for e in path]
        if floor not in ids:
            return {"tail": path, "floorEntryId": None}
        return {"tail": path[ids.index(floor) :], "floorEntryId": floor}
    if method == "pure.hasConversationContent":
        return {"result": any(e.get("type") == "message" for e in p["branch"])}
    if method == "pure.isSessionConflict":
        value = p["value"]
        return {"result": value.get("kind") == "session_error" and value.get("code") == "conflict"}
    raise KeyError(method)


def answer(store: Store | None, message: dict[str, Any]) -> tuple[Store | None, dict[str, Any]]:
    method, p = message["method"], message.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    try:
        if method == "hello":
            reply["result"] = {
                "protocolVersion": p["protocolVersion"],
                "implementation": {"name": "minimal-store", "version": "0.1", "language": "python"},
                "capabilities": CAPABILITIES,
            }
        elif method == "store.open":
            store = Store(p.get("clockMs"))
            reply["result"] = {}
        elif method == "store.dispose":
            store = None
            reply["result"] = {}
        elif method.startswith("pure."):
            reply["result"] = pure(method, p)
        elif store is not None:
            reply["result"] = store.handle(method, p)
        else:
            raise Refusal("not_found", "store.open first")
    except Refusal as refusal:
        data = {"kind": "session_error", "code": refusal.code}
        reply["error"] = {"code": -32004, "message": str(refusal), "data": data}
    except KeyError as exc:
        reply["error"] = {"code": -32601, "message": f"not offered: {exc}"}
    return store, reply


def main() -> None:
    store: Store | None = None
    for line in sys.stdin:
        parsed = json.loads(line)
        # requests issued together arrive as one batch (a JSON array); answer each on its own line
        for message in parsed if isinstance(parsed, list) else [parsed]:
            if "id" not in message:  # a notification: bye
                return
            store, reply = answer(store, message)
            sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
