"""Pure decisions of the financial request inputs: reasoning stripping and the cap message.

A request is measured as built; only then, for an attempt on another provider than the one that produced
this turn's reasoning, are the reasoning parts stripped (the companion's ``stripReasoningParts``).  The
admission estimate therefore never depends on where the attempt goes (KD-COMP-2).
"""

from __future__ import annotations

from relavium_reference._model.llm import LlmMessage, LlmReasoningPart, LlmRequest

__all__ = ["BUDGET_MESSAGE_PREFIX", "budget_message", "strip_reasoning"]

BUDGET_MESSAGE_PREFIX = "the cost cap of "


def budget_message(cap_microcents: int) -> str:
    """KD-FIN-1: the fixed, secret-free refusal text, naming the cap that refused."""
    return f"{BUDGET_MESSAGE_PREFIX}{cap_microcents} microcents refused the request"


def strip_reasoning(request: LlmRequest) -> LlmRequest:
    """``request`` without any reasoning part (a message left empty keeps its place, with no parts)."""
    if not any(isinstance(p, LlmReasoningPart) for m in request.messages for p in m.content):
        return request
    messages = [
        LlmMessage(role=m.role, content=[p for p in m.content if not isinstance(p, LlmReasoningPart)])
        for m in request.messages
    ]
    return request.model_copy(update={"messages": messages})
