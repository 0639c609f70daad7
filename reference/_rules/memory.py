"""The agent's memory policy: how it resolves, what it permits, and the refusals it gives.

Pure.  An agent declares ``memory`` as one of ``{type: none}``, ``{type: window, window_size: N}`` or
``{type: summary}``; an agent that declares none resolves to ``summary`` (KD-PROJ-1).  The policy is
resolved once, when a session instance is built, and a fresh, a resumed and a reseated instance resolve
it alike.  Only ``summary`` permits compaction and trimming; ``none`` and ``window`` refuse both with a
:class:`MemoryPolicyRefusal` whose message is a fixed text (no user data, no secrets).

Every value here is frozen; :func:`copy_policy` hands a caller its own copy, so nothing a host does
to what it was given can reach the session.
"""

from __future__ import annotations

from relavium_reference._model.history_results import MemoryPolicyRefusal
from relavium_reference._model.shapes import MemoryNone, MemoryPolicySpec, MemorySummary, MemoryWindow

__all__ = [
    "COMPACTION_REFUSED_MESSAGE",
    "TRIM_REFUSED_MESSAGE",
    "MemoryPolicyRefusal",
    "automatic_compaction_allowed",
    "compaction_refusal",
    "copy_policy",
    "resolve_memory",
    "trim_refusal",
    "window_size",
]

COMPACTION_REFUSED_MESSAGE = "the agent's memory policy does not permit compacting the conversation"
TRIM_REFUSED_MESSAGE = "the agent's memory policy does not permit trimming the conversation"


def resolve_memory(spec: MemoryPolicySpec | None) -> MemoryPolicySpec:
    """The policy a session runs under: the declared one, or ``summary`` when none is declared."""
    if spec is None:
        return MemorySummary(type="summary")
    return copy_policy(spec)


def copy_policy(policy: MemoryPolicySpec) -> MemoryPolicySpec:
    """A new frozen value equal to ``policy`` (the getter's answer: never the session's own)."""
    if policy.type == "none":
        return MemoryNone(type="none")
    if policy.type == "window":
        return MemoryWindow(type="window", window_size=window_size(policy) or 1)
    return MemorySummary(type="summary")


def window_size(policy: MemoryPolicySpec) -> int | None:
    """The number of completed exchanges a ``window`` policy keeps (``None`` for other policies)."""
    return getattr(policy, "window_size", None) if policy.type == "window" else None


def automatic_compaction_allowed(policy: MemoryPolicySpec) -> bool:
    """The policy's own permission for automatic compaction, whatever a trigger or a budget says."""
    return policy.type == "summary"


def _refusal(policy: MemoryPolicySpec, message: str) -> MemoryPolicyRefusal | None:
    if policy.type == "none":
        return MemoryPolicyRefusal(memory="none", message=message)
    if policy.type == "window":
        return MemoryPolicyRefusal(memory="window", message=message)
    return None


def compaction_refusal(policy: MemoryPolicySpec) -> MemoryPolicyRefusal | None:
    """Exactly what ``compact`` returns under ``policy`` before anything else, or ``None``."""
    return _refusal(policy, COMPACTION_REFUSED_MESSAGE)


def trim_refusal(policy: MemoryPolicySpec) -> MemoryPolicyRefusal | None:
    """Exactly what ``trimHistory`` returns under ``policy`` before anything else, or ``None``."""
    return _refusal(policy, TRIM_REFUSED_MESSAGE)
