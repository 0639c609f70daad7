"""Breaks of the session context (clauses AS-CTX-*)."""

from __future__ import annotations

from typing import Any

from relavium_conformance._selftest.base import break_of
from relavium_conformance._selftest.wire_variants import WireVariant

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="context-optionals-dropped",
    summary="session:started drops activeFile, selection and gitRef",
    clauses=("AS-CTX-001",),
)
class _ContextLosesOptionals(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        context = event.get("context")
        if event.get("type") == "session:started" and isinstance(context, dict):
            for key in ("activeFile", "selection", "gitRef"):
                context.pop(key, None)
        return event


@break_of(
    name="scope-tier-out-of-set",
    summary="a full scope tier is reported as 'unrestricted'",
    clauses=("AS-CTX-003",),
)
class _ScopeTierRenamed(WireVariant):
    def event(self, handle: str, event: dict[str, Any]) -> dict[str, Any]:
        context = event.get("context")
        if isinstance(context, dict) and context.get("fsScopeTier") == "full":
            context["fsScopeTier"] = "unrestricted"
        return event
