"""A runnable example: three turns (the second with one tool round) against the ScriptedProvider.

Run it with ``python -m relavium_reference.example``; it prints every event as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from relavium_reference._host.scripted import ScriptedProvider, load_script
from relavium_reference._host.session import AgentSession, SessionDeps
from relavium_reference._model.events import SessionEvent
from relavium_reference._model.shapes import AgentSnapshot, SessionContext
from relavium_reference._model.tools import FunctionTool, ToolCallInfo, ToolOutput, ToolRegistry

__all__ = ["main", "play"]


def _script_path() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (
        here.parent / "relavium_conformance" / "fixtures",  # installed wheel
        here.parent / "fixtures",  # checkout
    ):
        path = candidate / "provider-scripts" / "three-turns.yaml"
        if path.is_file():
            return path
    raise FileNotFoundError("provider-scripts/three-turns.yaml not found")


async def _lookup(args: Any, call: ToolCallInfo) -> ToolOutput:
    return ToolOutput(f"forecast for {args.get('topic', '?')}: sunny, 21 C")


async def play() -> list[SessionEvent]:
    events: list[SessionEvent] = []

    async def sink(event: SessionEvent) -> None:
        events.append(event)
        print(json.dumps(event.to_wire(), ensure_ascii=False))

    provider = ScriptedProvider(load_script(_script_path()))
    agent = AgentSnapshot(
        id="helper", model="scripted-model", provider="openai", system_prompt="Be brief.", tools=("lookup",)
    )
    session = AgentSession(
        agent=agent,
        context=SessionContext(working_dir="."),
        deps=SessionDeps(
            resolve_provider=lambda _provider, _model: provider,
            emit=sink,
            tools=ToolRegistry([FunctionTool(name="lookup", function=_lookup)]),
        ),
        session_id="example-session",
    )
    await session.start()
    for text in ("Hi there", "What is the weather?", "Thanks, bye"):
        await session.send_message(text)
    await session.cancel()
    return events


def main() -> int:
    asyncio.run(play())
    return 0


if __name__ == "__main__":
    sys.exit(main())
