"""What a case's setup becomes on the wire: the default agent and tools, the create params, and the
values a step's expectation or operation refers to (``{{workdir}}``, ``{$saved: name}``)."""

from __future__ import annotations

from typing import Any

from relavium_conformance._corpus.cases import Case

__all__ = ["DEFAULT_AGENT", "DEFAULT_TOOLS", "create_params", "resolve_saved", "substitute"]

DEFAULT_AGENT: dict[str, Any] = {
    "id": "helper",
    "model": "model-a",
    "provider": "openai",
    "system_prompt": "You help.",
    "tools": ["echo"],
}
DEFAULT_TOOLS: tuple[dict[str, Any], ...] = ({"name": "echo", "description": "Echo the input."},)


def substitute(value: Any, workdir: str) -> Any:
    if isinstance(value, str):
        return value.replace("{{workdir}}", workdir)
    if isinstance(value, dict):
        return {k: substitute(v, workdir) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [substitute(v, workdir) for v in value]
    return value


def resolve_saved(expected: Any, saved: dict[str, Any]) -> Any:
    """Replace each ``{$saved: name}`` in an expectation by the result kept under ``name``."""
    if isinstance(expected, dict):
        if len(expected) == 1 and "$saved" in expected:
            name = str(expected["$saved"])
            head, _, rest = name.partition(".")
            missing = f"<nothing saved as {name}>"  # matches no result: the case fails visibly
            value = saved.get(head, missing)
            for key in rest.split(".") if rest else ():
                value = value.get(key, missing) if isinstance(value, dict) else missing
            return value
        return {key: resolve_saved(value, saved) for key, value in expected.items()}
    if isinstance(expected, list | tuple):
        return [resolve_saved(value, saved) for value in expected]
    return expected


def create_params(case: Case, handle: str, workdir: str) -> dict[str, Any]:
    setup = case.setup
    agent = {**DEFAULT_AGENT, **(setup.agent or {})}
    context = {"workingDir": workdir, **substitute(setup.context or {}, workdir)}
    return {
        "handle": handle,
        "agent": agent,
        "context": context,
        "deps": dict(setup.deps or {}),
        "tools": list(setup.tools if setup.tools is not None else DEFAULT_TOOLS),
        "case": {"id": case.id, "title": case.title},  # informative: for the implementation's logs
    }
