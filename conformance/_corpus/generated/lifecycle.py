"""Generated cases, area ``lifecycle``: Hypothesis builds random operation sequences; the model predicts them.

The hand-written corpus pins each rule in one scenario; generated cases mix the rules in sequences no
one wrote down: starts, sends of every kind (text, empty final, provider error, a tool round), aborts
and cancels in the middle of a stream, idle aborts, a hard cap of 1 to 4 turns, and manual compactions
(refused before start, after a cancel and while a turn streams; ``nothing_to_compact`` with at most one
exchange; otherwise one summary pass that keeps the latest exchange, or a cancel during that pass).  A
small model of the specification predicts every result and refusal and the exact ``session:*`` event
sequence, so each
generated case carries its own normative assertions and runs through the ordinary case executor
against any adapter.  A shrunk counterexample is an ordinary case: :func:`case_to_yaml` writes it as a
golden transcript.

Needs Hypothesis (the kit's ``test`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case

__all__ = [
    "COMPACTION_CLAUSES",
    "GENERATED_CLAUSES",
    "build_case",
    "lifecycle_cases",
    "scenario_actions",
]

GENERATED_CLAUSES = (
    "AS-LIFE-016",  # abort ends the turn, session lives
    "AS-LIFE-017",  # one aborted terminal, no error
    "AS-LIFE-020",  # idle abort is a no-op
    "AS-LIFE-023",  # cancel is the terminal
    "AS-LIFE-049",  # idle/busy lifecycle and its refusals
    "AS-CAP-004",  # past the cap: turn_limit, loudly
    "AS-CAP-005",  # past the cap: no provider request
    "AS-CAP-009",  # engaged turns use slots
    "AS-CAP-010",  # failed and aborted engaged turns use slots
    "AS-EVT-002",  # gap-free sequence numbers
    "AS-MSG-011",  # a completed turn's durable rows
    "AS-MSG-021",  # failed and aborted turns commit nothing
    "AS-LIFE-034",  # resume continues the persisted session
    "AS-LIFE-024",  # a cancelled session stays resumable
    "AS-LIFE-026",  # the allowlist comes before approval
    "AS-LIFE-032",  # commands only when started and idle
    "AS-LIFE-033",  # the session is idle after a command
)
COMPACTION_CLAUSES = (  # cited only by a sequence that compacts (it then needs capability compaction)
    "AS-LIFE-036",  # compact only when started and idle
    "AS-LIFE-037",  # one compaction moment: compacted, or cancelled with nothing installed
    "AS-COMP-022",  # the latest completed exchange stays verbatim: keptTurnCount
)

USAGE = {"inputTokens": 2, "outputTokens": 1}
SEND_KINDS = ("text", "empty", "error", "tool")
INTERRUPTS = (None, None, "abort", "cancel", "compact")
COMPACT_OUTCOMES = ("summarised", "cancelled")  # what the summary pass does, when there is one


@dataclass
class _Model:
    max_turns: int
    started: bool = False
    cancelled: bool = False
    used: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    provider: list[list[dict[str, Any]]] = field(default_factory=list)
    session_events: list[str] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)  # roles of the durable rows, in order
    commits: int = 0
    approvals: int = 0
    confirm: bool = True  # the setup's policy installs a confirm hook; a resumed instance starts without one
    exchanges: int = 0  # completed exchanges in the working transcript (what a compaction may fold)
    summaries: list[list[dict[str, Any]]] = field(default_factory=list)
    compacted: int = 0  # session:compacted events, each keeping the latest exchange

    def refusal(self, *, before_start: str = "not_started") -> dict[str, Any] | None:
        if self.cancelled:
            return {"kind": "session_state", "code": "not_active"}
        if not self.started:
            return {"kind": "session_state", "code": before_start}
        return None

    def start(self) -> None:
        if self.cancelled or self.started:
            code = "not_active" if self.cancelled else "already_started"
            self.steps.append({"op": "start", "expect_error": {"kind": "session_state", "code": code}})
            return
        self.started = True
        self.steps.append({"op": "start", "expect": {}})
        self.session_events.append("session:started")

    def send(self, kind: str, interrupt: str | None) -> None:
        refused = self.refusal()
        if refused is not None:
            self.steps.append({"op": "send", "text": "q", "expect_error": refused})
            return
        self.session_events.append("session:turn_started")
        expect: dict[str, Any]
        if self.used >= self.max_turns:  # the cap: a loud failure without any provider request
            zero = {"input": 0, "output": 0}
            expect = {"status": "failed", "error": {"code": "turn_limit"}, "tokensUsed": zero}
            self.steps.append({"op": "send", "text": "q", "expect": expect})
            self.session_events.append("session:turn_completed")
            return
        self.used += 1  # the provider is invoked: the turn uses a slot however it ends
        if interrupt == "compact":  # a compact while the turn streams: refused busy, the turn goes on
            busy = {"op": "compact", "expect_error": {"kind": "session_state", "code": "busy"}}
            self.provider.append([{"type": "text_delta", "text": "hi"}, {"do": busy}, _stop("stop")])
            self.steps.append({"op": "send", "text": "q", "expect": {"status": "completed", "text": "hi"}})
            self.session_events.append("session:turn_completed")
            self.commits += 1
            self.exchanges += 1
            self.rows += ["user", "assistant"]
            return
        if interrupt is not None:
            partial = {"type": "text_delta", "text": "partial"}
            self.provider.append([partial, {"do": interrupt}, {"hold": True}])
            if interrupt == "cancel":
                self.cancelled = True
                self.session_events.append("session:cancelled")
                self.steps.append({"op": "send", "text": "q", "expect": {"status": "cancelled"}})
            else:
                expect = {"status": "aborted", "stopReason": "aborted", "error": {"$absent": True}}
                self.steps.append({"op": "send", "text": "q", "expect": expect})
                self.session_events.append("session:turn_completed")
            return
        if kind == "text":
            self.provider.append([{"type": "text_delta", "text": "hi"}, _stop("stop")])
            expect = {"status": "completed", "text": "hi"}
        elif kind == "empty":
            self.provider.append([_stop("stop")])
            expect = {"status": "completed", "text": ""}
        elif kind == "error":
            self.provider.append([{"type": "error", "error": {"kind": "auth", "message": "denied"}}])
            expect = {"status": "failed", "error": {"code": "provider_auth"}}
        else:
            self.provider.append(
                [
                    {"type": "tool_call_start", "id": f"call-{len(self.provider)}", "name": "echo"},
                    {"type": "tool_call_end", "id": f"call-{len(self.provider)}"},
                    _stop("tool_use"),
                ]
            )
            self.provider.append([{"type": "text_delta", "text": "after"}, _stop("stop")])
            expect = {"status": "completed", "text": "after"}
        self.steps.append({"op": "send", "text": "q", "expect": expect})
        self.session_events.append("session:turn_completed")
        if kind != "error":  # a completed turn is one commit: user, its tool structure, the terminal
            self.commits += 1
            self.exchanges += 1
            self.rows += (
                ["user", "assistant", "tool", "assistant"] if kind == "tool" else ["user", "assistant"]
            )

    def command(self, allowed: bool) -> None:
        """A user command (``echo``, allowlisted, approved; or ``touch``, off the allowlist)."""
        refused = self.refusal()
        step: dict[str, Any] = {"op": "runUserCommand", "command": "echo" if allowed else "touch"}
        step["args"] = ["hi"] if allowed else ["{{workdir}}/not-created"]
        if refused is not None:
            self.steps.append({**step, "expect_error": refused})
            return
        if allowed and self.confirm:
            self.approvals += 1
            expect = {"outcome": "ran", "exitCode": 0, "stdout": "hi\n"}
        elif allowed:  # no approval hook on this instance: fail-closed (KD-TOOL-1)
            expect = {"outcome": "denied", "allowlist": False}
        else:
            expect = {"outcome": "denied", "allowlist": True}
        self.steps.append({**step, "expect": expect})

    def resume(self) -> None:
        """A new instance from the durable rows: idle, no session:started, the cap counts completed turns."""
        self.steps.append({"op": "resume", "expect": {}})
        self.started, self.cancelled = True, False
        self.used = self.commits  # the reconstructed counter: completed turns only
        self.confirm = False  # the turn policy belongs to the instance: a resumed one has none

    def compact(self, outcome: str) -> None:
        """A manual compaction: refused unless started and idle; nothing to fold with at most one exchange;
        else one summary pass that keeps the latest exchange (a marker row), or a cancel during it."""
        refused = self.refusal()
        if refused is not None:
            self.steps.append({"op": "compact", "expect_error": refused})
            return
        if self.exchanges <= 1:
            self.steps.append({"op": "compact", "expect": {"kind": "nothing_to_compact"}})
            return
        self.session_events.append("session:compacting")
        if outcome == "cancelled":
            self.summaries.append([{"type": "text_delta", "text": "part"}, {"do": "cancel"}, {"hold": True}])
            self.steps.append({"op": "compact", "expect": {"kind": "cancelled"}})
            self.cancelled = True
            self.session_events.append("session:cancelled")
            return
        self.summaries.append([{"type": "text_delta", "text": "S"}, _stop("stop")])
        self.steps.append({"op": "compact", "expect": {"kind": "compacted", "keptTurnCount": 1}})
        self.session_events.append("session:compacted")
        self.compacted += 1
        self.exchanges = 1
        self.rows.append("system")  # the boundary marker

    def abort(self) -> None:
        self.steps.append({"op": "abort", "expect": {}})  # nothing is in flight: a no-op, never refused

    def cancel(self) -> None:
        self.steps.append({"op": "cancel", "expect": {}})
        if not self.cancelled:
            self.cancelled = True
            self.session_events.append("session:cancelled")


_WINDOWS = {"model-a": {"contextWindow": 100000}}
_COMPACTED = {"reason": "manual", "keptTurnCount": 1}


def _stop(reason: str) -> dict[str, Any]:
    return {"type": "stop", "stopReason": reason, "usage": dict(USAGE)}


Action = tuple[str, ...]


def scenario_actions() -> st.SearchStrategy[list[Action]]:
    """Lists of actions: start, send (kind, interrupt), abort, cancel, resume, command (allowed/denied),
    compact (what its summary pass does)."""
    send = st.tuples(st.just("send"), st.sampled_from(SEND_KINDS), st.sampled_from(INTERRUPTS))
    action = st.one_of(
        st.just(("start",)),
        send,
        send,
        send,
        st.just(("abort",)),
        st.just(("cancel",)),
        st.just(("resume",)),
        st.tuples(st.just("command"), st.sampled_from(("allowed", "denied"))),
        st.tuples(st.just("compact"), st.sampled_from(COMPACT_OUTCOMES)),
    )
    return st.lists(action, min_size=1, max_size=12)


def build_case(actions: list[Action], max_turns: int, *, name: str = "generated") -> Case:
    """The case for ``actions``, with every expectation the model predicts."""
    model = _Model(max_turns=max_turns)
    for action in actions:
        if action[0] == "start":
            model.start()
        elif action[0] == "send":
            interrupt = action[2] if len(action) > 2 and action[2] != "None" else None
            model.send(action[1], interrupt)
        elif action[0] == "abort":
            model.abort()
        elif action[0] == "resume":
            model.resume()
        elif action[0] == "command":
            model.command(action[1] == "allowed")
        elif action[0] == "compact":
            model.compact(action[1] if len(action) > 1 else "summarised")
        elif action[0] == "cancel" and model.started:  # a cancel before start: not settled by the spec
            model.cancel()
    steps = model.steps or [{"op": "abort", "expect": {}}]
    compacts = any(action[0] == "compact" or "compact" in action[2:] for action in actions)
    deps: dict[str, Any] = {"maxTurns": max_turns, "allowedCommands": ["echo"]}
    if compacts:  # a known window far above these requests: no soft bound, no acknowledgement, one pass
        deps["models"] = _WINDOWS
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": "a generated sequence of operations checked against the kit's model of the rules",
            "clauses": [*GENERATED_CLAUSES, *(COMPACTION_CLAUSES if compacts else ())],
            # compaction only when a compact is in the sequence: a port without it still runs the others
            "capabilities": [
                "core",
                "persistence",
                "resume",
                "user-commands",
                *(["compaction"] if compacts else []),
            ],
            "setup": {
                "deps": deps,
                "policy": {"confirm": True},
            },
            "approvals": [True] * model.approvals,
            "provider": model.provider,
            "summaries": model.summaries,
            "steps": steps,
            "expect": {
                "session_events": model.session_events,
                "provider_request_count": len(model.provider),  # scripted only for engaged sends
                "rows": [{"role": role, "sequenceNumber": index} for index, role in enumerate(model.rows)],
                "commits": [{"$any": True}] * model.commits,
                **({"summary_request_count": len(model.summaries)} if compacts else {}),
                **({"events": {"session:compacted": [_COMPACTED] * model.compacted}} if compacts else {}),
            },
        }
    )


def lifecycle_cases() -> st.SearchStrategy[Case]:
    """Cases of the lifecycle area: sequences of operations under a hard cap of 1 to 4 turns."""
    return st.builds(build_case, scenario_actions(), st.integers(min_value=1, max_value=4))
