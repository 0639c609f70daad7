"""Fuzzing the methods of a started ``AgentSession``: each argument of any type (the right type with
odd values, or a wrong type) meets only documented errors (``RelaviumError``), a wrong type refused as
``InvalidInputError`` where it enters, and the session still runs a turn afterwards (nothing malformed
is kept for later).

300 examples per target, no per-example deadline, scripted provider, no host store.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference.enginekit import make_session, run, text_call
from tests.reference.fuzzkit import HOSTILE

from relavium_reference import RelaviumError, TurnPolicy

METHOD_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_ODD = (
    HOSTILE
    | st.text(st.characters(blacklist_categories=()), max_size=8)
    | st.sampled_from([-1, 0, 1, 2**63, math.nan, "\ud800", "manual", None, TurnPolicy(), ["ls"], ("a", 1)])
)
_METHODS = st.sampled_from(
    [
        "context_estimate",
        "set_turn_policy",
        "trim_history",
        "trim_reason",
        "compact",
        "export",
        "run_user_command",
        "command_args",
        "send_message",
    ]
)


async def _call(session: Any, method: str, value: Any) -> None:
    match method:
        case "context_estimate":
            session.context_estimate(value)
        case "set_turn_policy":
            session.set_turn_policy(value)
        case "trim_history":
            await session.trim_history(value)
        case "trim_reason":
            await session.trim_history(1, reason=value)
        case "compact":
            await session.compact(value)
        case "export":
            await session.export(value)
        case "run_user_command":
            await session.run_user_command(value)
        case "command_args":
            await session.run_user_command("ls", value)
        case _:
            await session.send_message(value)


@METHOD_FUZZ
@given(st.lists(st.tuples(_METHODS, _ODD), min_size=1, max_size=3))
def test_session_methods_raise_only_documented_errors(calls: list[tuple[str, Any]]) -> None:
    async def scenario() -> Any:
        harness = make_session(calls=[text_call("one"), text_call("two"), text_call("three")] * 3)
        await harness.session.start()
        await harness.session.send_message("first")
        for method, value in calls:
            with contextlib.suppress(RelaviumError):
                await _call(harness.session, method, value)
        return await harness.session.send_message("after")  # nothing malformed was kept

    result = run(scenario())
    assert result.status in ("completed", "failed")
