"""Generated cases, area ``history``: memory policies, their getters, what each request projects, and
``trimHistory`` at its bounds.

The model (the kit's own reading of AS-PROJ and KD-PROJ-1 / KD-TRIM-1, never the engine's code):

- the agent's memory is unset (it resolves to ``summary``), ``summary``, ``window`` of 1 to 3 slots, or
  ``none``; the getters report the form as authored, permit automatic compaction under ``summary`` only,
  and name the refusing policy in ``compactionRefusal`` / ``trimRefusal``;
- a completed turn is one slot of 2 message units (1 for an empty final); failed and aborted turns leave
  none; a request carries the retained slots (``summary``), the last N (``window``) or none (``none``),
  then the pending user, adjacent users folded (KD-PROJ-2: one message, the texts joined by a blank line);
- ``trimHistory(bound)``: lifecycle misuse first, then the policy, then the bound (below 1 is
  ``invalid_input``); nothing dropped is ``nothing_to_trim{messageCount}``; else the longest suffix of whole
  slots within the bound stays (possibly none) and one ``session:trimmed`` says what was kept and dropped.

Strategies seek the trim bound where it bites: the exact unit total of the newest j slots, one below and
one above, the total of all slots, and the invalid 0; windows of 1 to 3 around histories of 0 to 6 slots;
the memory left unset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from relavium_conformance._corpus.cases import Case

__all__ = ["HISTORY_CLAUSES", "build_history_case", "history_actions", "history_cases"]

HISTORY_CLAUSES = (
    "AS-PROJ-001",  # a request projects the policy's history and the pending user
    "AS-PROJ-007",  # memoryPolicy reports the policy
    "AS-PROJ-009",  # automaticCompactionAllowed
    "AS-PROJ-010",  # the refusal getters equal what the operations return
    "AS-PROJ-011",  # none and window refuse compaction and trim
    "AS-PROJ-025",  # a failed or aborted turn leaves no slot
    "AS-LIFE-039",  # trimHistory keeps a suffix of whole turns under the bound
    "AS-LIFE-041",  # trim only when started and idle
    "AS-LIFE-042",  # the policy refusal comes before the bound and no-op checks
    "AS-MSG-028",  # the bound counts message units
)
HISTORY_KIT_DEFINED = ("KD-PROJ-1", "KD-TRIM-1", "KD-COMP-5")  # binding choices (KD-PROJ-2, the fold, is a
# shape: the $joined_text matcher accepts either form, so it is not named: naming it would make notes of all)

SEND_KINDS = ("full", "empty", "failed", "aborted")
MEMORIES: tuple[dict[str, Any] | None, ...] = (
    None,
    {"type": "summary"},
    {"type": "window", "window_size": 1},
    {"type": "window", "window_size": 2},
    {"type": "window", "window_size": 3},
    {"type": "none"},
)
_USAGE = {"inputTokens": 3, "outputTokens": 1}

Action = tuple[Any, ...]


@dataclass
class _History:
    memory: dict[str, Any] | None
    started: bool = False
    sends: int = 0
    slots: list[tuple[str, str | None]] = field(default_factory=list)  # (question, answer or None)
    steps: list[dict[str, Any]] = field(default_factory=list)
    provider: list[list[dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    trimmed: list[dict[str, Any]] = field(default_factory=list)
    compacts: bool = False

    @property
    def kind(self) -> str:
        return "summary" if self.memory is None else str(self.memory["type"])

    def refusal(self) -> dict[str, Any] | None:
        """The policy's refusal of compaction and trim (KD-PROJ-1), or None under summary."""
        if self.kind == "summary":
            return None
        return {"kind": "policy_refused", "memory": self.kind, "message": {"$any": True}}

    def getters(self) -> None:
        refusal = self.refusal()
        self.steps.append(
            {
                "op": "memoryPolicy",
                "expect": {
                    "memoryPolicy": self.memory if self.memory is not None else {"type": "summary"},
                    "automaticCompactionAllowed": refusal is None,
                    "compactionRefusal": refusal,
                    "trimRefusal": refusal,
                },
            }
        )

    def start(self) -> None:
        if self.started:
            code = {"kind": "session_state", "code": "already_started"}
            self.steps.append({"op": "start", "expect_error": code})
            return
        self.started = True
        self.steps.append({"op": "start", "expect": {}})

    def projected(self) -> list[tuple[str, str | None]]:
        if self.kind == "none":
            return []
        if self.kind == "window":
            size = int(self.memory["window_size"]) if self.memory else 0
            return self.slots[-size:]
        return list(self.slots)

    def send(self, kind: str) -> None:
        self.sends += 1
        question, answer = f"q{self.sends}", f"a{self.sends}"
        if not self.started:
            refused = {"kind": "session_state", "code": "not_started"}
            self.steps.append({"op": "send", "text": question, "expect_error": refused})
            return
        self.requests.append({"request": {"messages": _messages(self.projected(), question)}})
        if kind == "full":
            self.provider.append([{"type": "text_delta", "text": answer}, _stop()])
            expect: dict[str, Any] = {"status": "completed", "text": answer}
            self.slots.append((question, answer))
        elif kind == "empty":
            self.provider.append([_stop()])
            expect = {"status": "completed", "text": ""}
            self.slots.append((question, None))
        elif kind == "failed":
            self.provider.append([{"type": "error", "error": {"kind": "bad_request", "message": "no"}}])
            expect = {"status": "failed"}
        else:
            partial = {"type": "text_delta", "text": "part"}
            self.provider.append([partial, {"do": "abort"}, {"hold": True}])
            expect = {"status": "aborted"}
        self.steps.append({"op": "send", "text": question, "expect": expect})

    def bound(self, newest: int, offset: int) -> int:
        """The unit total of the ``newest`` slots (all of them when fewer), moved by ``offset``."""
        return sum(_units(slot) for slot in self.slots[-newest:] if newest) + offset

    def trim(self, bound: int) -> None:
        step: dict[str, Any] = {"op": "trimHistory", "max_messages": bound}
        refusal = self.refusal()
        if not self.started:
            self.steps.append({**step, "expect_error": {"kind": "session_state", "code": "not_started"}})
            return
        if refusal is not None:
            self.steps.append({**step, "expect": refusal})
            return
        if bound < 1:
            self.steps.append({**step, "expect_error": {"kind": "invalid_input"}})
            return
        total = sum(_units(slot) for slot in self.slots)
        if total <= bound:
            self.steps.append({**step, "expect": {"kind": "nothing_to_trim", "messageCount": total}})
            return
        kept: list[tuple[str, str | None]] = []
        for slot in reversed(self.slots):  # the longest suffix of whole slots within the bound
            if sum(_units(each) for each in kept) + _units(slot) > bound:
                break
            kept.insert(0, slot)
        units = sum(_units(slot) for slot in kept)
        outcome = {
            "keptMessageCount": units,
            "droppedMessageCount": total - units,
            "keptTurnCount": len(kept),
        }
        self.steps.append({**step, "expect": {"kind": "trimmed", **outcome}})
        self.trimmed.append({"reason": "manual", **outcome})
        self.slots = kept

    def compact(self) -> None:
        """A manual compact where the policy refuses it (under summary the lifecycle area compacts)."""
        refusal = self.refusal()
        if not self.started:
            self.compacts = True
            self.steps.append(
                {"op": "compact", "expect_error": {"kind": "session_state", "code": "not_started"}}
            )
        elif refusal is not None:
            self.compacts = True
            self.steps.append({"op": "compact", "expect": refusal})
        else:
            self.getters()


def _units(slot: tuple[str, str | None]) -> int:
    return 2 if slot[1] is not None else 1


def _stop() -> dict[str, Any]:
    return {"type": "stop", "stopReason": "stop", "usage": dict(_USAGE)}


def _messages(slots: list[tuple[str, str | None]], pending: str) -> list[dict[str, Any]]:
    """The request's messages: each slot's user (and answer), the pending user; adjacent users folded."""
    flat: list[tuple[str, str]] = []
    for question, answer in slots:
        flat.append(("user", question))
        if answer is not None:
            flat.append(("assistant", answer))
    flat.append(("user", pending))
    folded: list[tuple[str, list[str]]] = []
    for role, text in flat:
        if folded and folded[-1][0] == role:
            folded[-1][1].append(text)
        else:
            folded.append((role, [text]))
    return [
        {"role": role, "content": {"$joined_text": "\n\n".join(texts)}}
        if role == "user"
        else {"role": role, "content": [{"type": "text", "text": texts[0]}]}
        for role, texts in folded
    ]


def history_actions() -> st.SearchStrategy[list[Action]]:
    """A start, a history of 0 to 6 completed slots (full and empty finals mixed: the window's and the
    bound's edges fall between them), then up to 10 of: sends of four kinds, trims at a boundary (newest
    slots 0-4, offset -1/0/+1), getters, compacts."""
    completed = st.tuples(st.just("send"), st.sampled_from(("full", "empty")))
    send = st.tuples(st.just("send"), st.sampled_from(SEND_KINDS))
    trim = st.tuples(st.just("trim"), st.integers(0, 4), st.sampled_from((-1, 0, 1)))
    action = st.one_of(
        send,
        send,
        completed,
        trim,
        trim,
        st.just(("getters",)),
        st.just(("compact",)),
        st.just(("start",)),
    )
    return st.tuples(st.lists(completed, max_size=6), st.lists(action, min_size=1, max_size=10)).map(
        lambda parts: [("start",), *parts[0], *parts[1]]
    )


def build_history_case(
    actions: list[Action], memory: dict[str, Any] | None, *, name: str = "history"
) -> Case:
    """The case for ``actions`` under ``memory`` (None: unset), with every expectation the model predicts."""
    model = _History(memory=memory)
    for action in actions:
        if action[0] == "start":
            model.start()
        elif action[0] == "send":
            model.send(str(action[1]))
        elif action[0] == "trim":
            model.trim(model.bound(int(action[1]), int(action[2])))
        elif action[0] == "getters":
            model.getters()
        elif action[0] == "compact":
            model.compact()
    trims = any(step["op"] == "trimHistory" for step in model.steps)
    capabilities = [
        "core",
        "memory-policy",
        *(["trim"] if trims else []),
        *(["compaction"] if model.compacts else []),
    ]
    expect: dict[str, Any] = {
        "provider_request_count": len(model.provider),
        "provider_requests": model.requests,
    }
    if model.trimmed:
        expect["events"] = {"session:trimmed": model.trimmed}
    else:
        expect["absent_events"] = ["session:trimmed"]
    return Case.model_validate(
        {
            "id": f"generated/{name}",
            "title": "generated: memory policy, projection and trim bounds checked against the kit's model",
            "clauses": list(HISTORY_CLAUSES),
            "kit_defined": list(HISTORY_KIT_DEFINED),
            "capabilities": capabilities,
            "setup": {"agent": {"memory": memory}} if memory is not None else {},
            "provider": model.provider,
            "steps": model.steps,
            "expect": expect,
        }
    )


def history_cases() -> st.SearchStrategy[Case]:
    """Cases of the history area: every memory form (unset included) under generated sequences."""
    # windows twice as often: their boundaries (empty finals inside and at the edge) need the slots
    memories = st.sampled_from((*MEMORIES, *(m for m in MEMORIES if m and m["type"] == "window")))
    return st.builds(build_history_case, history_actions(), memories)
