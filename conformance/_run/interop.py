"""Two implementations in one run: one writes the durable rows, the other resumes from exactly those rows.

The kit is the persister, so it holds every row an implementation commits.  One direction, A then B:

1. **A plays** a scripted conversation: start, a text turn, a turn with a tool round, an export
   (``before``), a third turn, an export (``after``).  The kit keeps A's record and rows.
2. **B resumes** from A's record and A's rows of the first two turns, exactly as A committed them, then
   exports (``before``), plays the same third turn, and exports again (``after``).
3. **The kit compares**, as data:

   * B's ``before`` export with A's: the same record and rows must export to the same document
     (AS-EXP-019, export is a deterministic function of the transcript);
   * the messages B sends the provider for the third turn with the ones A sent live (AS-PROJ-003: the
     projection of a resumed instance is the one of the live instance; AS-LIFE-034);
   * the rows B commits for the third turn with A's (role, content and tool structure: AS-MSG-011);
   * the workflow nodes of B's ``after`` export with A's (AS-SESS-007: persisted, resumed, continued).

Then the other direction, B then A.  Each phase is also an ordinary case, so each implementation's own
results are checked on the way (event envelopes, whole-exchange commits, step results).  Optional fields
are never compared: only the projection, the rows' normative fields and the exported documents.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._judge.matching import match
from relavium_conformance._report.results import (
    CaseResult,
    CaseStatus,
    Difference,
    ImplementationInfo,
    RunResult,
    one_line,
)
from relavium_conformance._run.kept import CaseSession
from relavium_conformance._wire.adapters import Adapter

__all__ = ["INTEROP_CAPABILITIES", "INTEROP_CLAUSES", "interop"]

INTEROP_CLAUSES = ("AS-SESS-007", "AS-LIFE-034", "AS-PROJ-003", "AS-MSG-011", "AS-EXP-019")
INTEROP_CAPABILITIES = ("core", "persistence", "resume", "export")

_USAGE = {"inputTokens": 4, "outputTokens": 2}
_STOP = {"type": "stop", "stopReason": "stop", "usage": _USAGE}
_TURN_1 = [{"type": "text_delta", "text": "first answer"}, _STOP]
_TURN_2_TOOL = [
    {"type": "text_delta", "text": "looking it up "},
    {"type": "tool_call_start", "id": "call-interop-1", "name": "echo"},
    {"type": "tool_call_delta", "id": "call-interop-1", "argsJsonDelta": '{"q": "what"}'},
    {"type": "tool_call_end", "id": "call-interop-1"},
    {"type": "stop", "stopReason": "tool_use", "usage": _USAGE},
]
_TURN_2_FINAL = [{"type": "text_delta", "text": "second answer"}, _STOP]
_TURN_3 = [{"type": "text_delta", "text": "third answer"}, _STOP]
_ROW_FIELDS = ("role", "content", "toolCalls", "toolCallId", "name")


def _case(case_id: str, title: str, body: dict[str, Any]) -> Case:
    return Case.model_validate(
        {
            "id": case_id,
            "title": title,
            "clauses": list(INTEROP_CLAUSES),
            "capabilities": list(INTEROP_CAPABILITIES),
            **body,
        }
    )


def _writer_case() -> Case:
    return _case(
        "interop/writes",
        "plays three turns (one with a tool round) and exports twice; the kit keeps the rows",
        {
            "provider": [_TURN_1, _TURN_2_TOOL, _TURN_2_FINAL, _TURN_3],
            "tools": [{"text": "tool says hello"}],
            "steps": [
                {"op": "start"},
                {"op": "send", "text": "first question", "expect": {"status": "completed"}},
                {"op": "send", "text": "second question", "expect": {"status": "completed"}},
                {"op": "export", "path": "before.relavium.yaml"},
                {"op": "send", "text": "third question", "expect": {"status": "completed"}},
                {"op": "export", "path": "after.relavium.yaml"},
            ],
            "expect": {},
        },
    )


def _reader_case(record: dict[str, Any], rows: list[dict[str, Any]]) -> Case:
    return _case(
        "interop/resumes",
        "resumes from another implementation's rows, exports, plays the third turn, exports again",
        {
            "setup": {"history": {"record": record, "messages": rows}},
            "provider": [_TURN_3],
            "steps": [
                {"op": "resume"},
                {"op": "export", "path": "before.relavium.yaml"},
                {"op": "send", "text": "third question", "expect": {"status": "completed"}},
                {"op": "export", "path": "after.relavium.yaml"},
            ],
            "expect": {},
        },
    )


def _turns(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The rows of the first ``count`` completed turns (each begins with its user row)."""
    starts = [index for index, row in enumerate(rows) if row.get("role") == "user"]
    return rows[: starts[count]] if len(starts) > count else list(rows)


def _normative(row: dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in _ROW_FIELDS if row.get(key) is not None}


def _documents(snapshot: dict[str, Any]) -> list[Any]:
    return [export.get("document") for export in snapshot.get("exports", [])]


def _nodes(document: Any) -> Any:
    workflow = document.get("workflow") if isinstance(document, dict) else None
    return workflow.get("nodes") if isinstance(workflow, dict) else None


def _compare(writer: dict[str, Any], reader: dict[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    ours, theirs = _documents(writer), _documents(reader)
    if len(ours) != 2 or len(theirs) != 2:
        return [
            Difference(path="exports", message="each side must export twice", expected=2, actual=len(theirs))
        ]
    out += match(ours[0], theirs[0], "export(before).document", exact=True)
    out += match(_nodes(ours[1]), _nodes(theirs[1]), "export(after).document.workflow.nodes", exact=True)
    live = writer.get("provider_requests", [])[-1:]
    resumed = reader.get("provider_requests", [])[-1:]
    out += match(
        [r.get("request", {}).get("messages") for r in live],
        [r.get("request", {}).get("messages") for r in resumed],
        "third turn: provider request messages",
        exact=True,
    )
    written = [_normative(row) for row in writer.get("rows", [])[len(_turns(writer.get("rows", []), 2)) :]]
    rows = reader.get("rows", [])
    continued = [_normative(row) for row in rows[len(_turns(rows, 2)) :]]
    out += match(written, continued, "third turn: committed rows", exact=True)
    return out


@dataclass
class _Side:
    session: CaseSession

    @property
    def name(self) -> str:
        hello = self.session.adapter.hello
        return hello.implementation.name if hello else self.session.adapter.name


def _direction(writer: _Side, reader: _Side, index: int) -> CaseResult:
    started = time.perf_counter()
    base: dict[str, Any] = {
        "id": f"interop/{'a-to-b' if index == 1 else 'b-to-a'}",
        "title": f"{writer.name} writes the rows, {reader.name} resumes and continues",
        "clauses": INTEROP_CLAUSES,
    }

    def verdict(
        status: CaseStatus, reason: str | None, differences: Sequence[Difference] = (), *, gone: bool = False
    ) -> CaseResult:
        return CaseResult(
            **base,
            status=status,
            reason=one_line(reason) if reason else None,
            differences=tuple(differences) if status is CaseStatus.FAILED else (),
            duration_ms=(time.perf_counter() - started) * 1000,
            handshake_failed=gone,
        )

    writes = writer.session.run([_writer_case()], snapshots=False)
    [written] = writes.run.cases
    if written.status is not CaseStatus.PASSED:
        return verdict(
            CaseStatus.UNSUPPORTED if written.status is CaseStatus.UNSUPPORTED else written.status,
            f"{writer.name} playing the conversation: {written.reason}",
            written.differences,
            gone=written.handshake_failed,
        )
    observed = writes.observations["interop/writes"]
    rows = _turns([dict(row) for row in observed.rows], 2)
    record = dict(observed.record or {})
    reads = reader.session.run([_reader_case(record, rows)], snapshots=False)
    [read] = reads.run.cases
    if read.status is not CaseStatus.PASSED:
        return verdict(
            CaseStatus.UNSUPPORTED if read.status is CaseStatus.UNSUPPORTED else read.status,
            f"{reader.name} resuming {writer.name}'s rows: {read.reason}",
            read.differences,
            gone=read.handshake_failed,
        )
    differences = _compare(
        json.loads(writes.snapshots["interop/writes"]), json.loads(reads.snapshots["interop/resumes"])
    )
    if differences:
        return verdict(CaseStatus.FAILED, f"{differences[0].path}: {differences[0].message}", differences)
    return verdict(CaseStatus.PASSED, None)


def interop(first: Adapter, second: Adapter, *, timeout: float = 15.0) -> RunResult:
    """Both directions, first -> second and second -> first, as a run of two cases."""
    started_at, clock = datetime.now(UTC), time.perf_counter()
    a, b = _Side(CaseSession(first, timeout=timeout)), _Side(CaseSession(second, timeout=timeout))
    try:
        results = [_direction(a, b, 1), _direction(b, a, 2)]
    finally:
        a.session.close()
        b.session.close()
    hellos = [side.session.adapter.hello for side in (a, b)]
    implementation = ImplementationInfo(
        name=" + ".join(side.name for side in (a, b)),
        adapter=f"{first.name} + {second.name}",
        version=" + ".join(h.implementation.version or "?" if h else "?" for h in hellos),
        language=" + ".join(h.implementation.language or "?" if h else "?" for h in hellos),
        capabilities=tuple(sorted(set.intersection(*(set(h.capabilities if h else ()) for h in hellos)))),
    )
    return RunResult.build(
        implementation=implementation,
        cases=results,
        catalogue=load_catalogue().clauses,
        started_at=started_at,
        duration_ms=(time.perf_counter() - clock) * 1000,
    )
