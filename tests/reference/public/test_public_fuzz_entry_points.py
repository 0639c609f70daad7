"""Fuzzing every public callable of ``relavium_reference.__all__`` with values of any type: each raises
only documented errors (``RelaviumError``).  Left out, each with its own target or contract:
``AgentSession`` and ``SessionDeps`` (``test_public_fuzz_host_answers.py``, ``..._session_methods.py``),
``HistoryStore`` (``..._history_store.py``), the parsers (``test_fuzz_public.py``), the exception
classes, the enums (a value lookup's ``ValueError`` is Python's enum protocol), the pydantic wire models
(their constructors validate, pydantic's contract), protocols and type unions (not callable).

300 examples; each calls one callable with as many fuzzed arguments as it requires.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from tests.reference.fuzzkit import HOSTILE, only_documented

import relavium_reference

ENTRY_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_OWN_TARGETS = {"AgentSession", "SessionDeps", "HistoryStore", "SessionStore", "parse_strict"}


def _fuzzable(name: str) -> bool:
    if name in _OWN_TARGETS or name.startswith("parse_"):
        return False
    value = getattr(relavium_reference, name)
    if not callable(value) or (not inspect.isclass(value) and not inspect.isfunction(value)):
        return False
    if inspect.isclass(value):
        protocol = getattr(value, "_is_protocol", False)
        return not (issubclass(value, BaseException | enum.Enum | BaseModel) or protocol)
    return True


_CALLABLES = sorted(name for name in relavium_reference.__all__ if _fuzzable(name))


def _arguments(target: Any, values: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """As many fuzzed values as ``target`` requires: its positional parameters, then its keyword-only."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    fuzzed = iter(values * 3)
    for p in inspect.signature(target).parameters.values():
        if p.default is not p.empty:
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional.append(next(fuzzed))
        elif p.kind is p.KEYWORD_ONLY:
            keywords[p.name] = next(fuzzed)
    return positional, keywords


def test_the_target_reaches_the_public_functions() -> None:
    assert {"ToolRegistry", "load_script", "reconstruct_session_state", "resume_state_problem"} <= set(
        _CALLABLES
    )


_VALUES = HOSTILE | st.sampled_from(["\ud800", "", "/nonexistent/x.yaml", -1, 2**63])


@ENTRY_FUZZ
@given(st.sampled_from(_CALLABLES), st.lists(_VALUES, min_size=3, max_size=3))
def test_public_callables_raise_only_documented_errors(name: str, values: list[Any]) -> None:
    target = getattr(relavium_reference, name)
    positional, keywords = _arguments(target, values)

    def call() -> Any:
        answer = target(*positional, **keywords)
        return asyncio.run(answer) if inspect.iscoroutine(answer) else answer

    only_documented(call)  # anything but a RelaviumError escapes and fails the example
