"""Issue 35's bombs, each run as one session turn against a hostile vendor, measured in its own process.

``python -m tests.reference.hostile_bombs NAME [IDLE TOTAL]`` runs one bomb with the engine's default caps
(and the default attempt deadline, unless IDLE and TOTAL seconds are given) and prints one JSON line: the
turn's status and error code and message, the seconds it took, and the process's peak resident memory in
MB (``resource.getrusage``).  ``python -m tests.reference.hostile_bombs all [IDLE TOTAL]`` runs each bomb
in a fresh subprocess and prints a table.  ``test_dialect_bombs.py`` runs two of them under pytest.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tests.reference.hostilekit import Served, chunk, gzip_zeros, head, hostile, openai_frame, send

from relavium_reference import AgentSession, SessionDeps
from relavium_reference._host.attempt_deadline import AttemptDeadline
from relavium_reference._host.dialect_client import HttpEndpoint, HttpProvider
from relavium_reference._model.llm import StreamErrorChunk
from relavium_reference._model.shapes import AgentSnapshot, SessionContext

GIB = 1 << 30
Bomb = Callable[[asyncio.StreamWriter], Awaitable[None]]
_TALLY = Served()  # what the bombs wrote (the server's own count)


async def _error_body(writer: asyncio.StreamWriter) -> None:  # a 1 GiB error body
    await send(writer, _TALLY, head(500, "content-type: application/json", length=GIB))
    piece = b"x" * (1 << 20)
    for _ in range(1024):
        await send(writer, _TALLY, piece)


async def _gzip_500(writer: asyncio.StreamWriter) -> None:  # 1 GiB of zeros in ~1 MiB
    bomb = gzip_zeros(GIB)
    await send(writer, _TALLY, head(500, "content-encoding: gzip", length=len(bomb)) + bomb)


async def _gzip_200(writer: asyncio.StreamWriter) -> None:  # 1 GiB of comment lines
    bomb = gzip_zeros(GIB, b":\n")
    await send(writer, _TALLY, head(200, "content-type: text/event-stream", "content-encoding: gzip") + bomb)


async def _long_line(writer: asyncio.StreamWriter) -> None:  # 1 GiB, not one newline
    await send(writer, _TALLY, head(200, "content-type: text/event-stream", chunked=True))
    piece = chunk(b"data: " + b"a" * (1 << 20))
    for _ in range(1024):
        await send(writer, _TALLY, piece)


async def _deep_frame(writer: asyncio.StreamWriter) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    await send(writer, _TALLY, head(200, "content-type: text/event-stream") + b"data: " + deep + b"\n\n")


async def _redirect(writer: asyncio.StreamWriter) -> None:
    await send(writer, _TALLY, head(302, "location: http://127.0.0.1:9/", length=0))


async def _byte_trickle(writer: asyncio.StreamWriter) -> None:  # a byte every 0.5 s
    await send(writer, _TALLY, head(200, "content-type: text/event-stream", chunked=True))
    while True:
        await send(writer, _TALLY, chunk(b":"))
        await asyncio.sleep(0.5)


async def _token_trickle(writer: asyncio.StreamWriter) -> None:  # a token every 0.5 s
    await send(writer, _TALLY, head(200, "content-type: text/event-stream", chunked=True))
    while True:
        await send(writer, _TALLY, chunk(openai_frame("token ")))
        await asyncio.sleep(0.5)


async def _tokens_forever(writer: asyncio.StreamWriter) -> None:  # as fast as it can
    await send(writer, _TALLY, head(200, "content-type: text/event-stream", chunked=True))
    frame = chunk(openai_frame("token "))
    while True:
        await send(writer, _TALLY, frame)


BOMBS: dict[str, Bomb] = {
    "error-body-1GiB": _error_body,
    "gzip-bomb-on-500": _gzip_500,
    "gzip-bomb-on-200": _gzip_200,
    "line-without-newline-1GiB": _long_line,
    "frame-100k-deep": _deep_frame,
    "redirect": _redirect,
    "byte-trickle": _byte_trickle,
    "token-trickle": _token_trickle,
    "tokens-forever": _tokens_forever,
}


class _Tapped(HttpProvider):
    """The dialect client, noting the error chunk it ends with (the session shows only the code)."""

    seen: list[str] = []

    async def _attest(self, chunks: Any) -> Any:  # type: ignore[override]
        async for each in super()._attest(chunks):
            if isinstance(each, StreamErrorChunk):
                self.seen.append(f"{each.error.kind.value}: {each.error.message}")
            yield each


async def _lag(lags: list[float]) -> None:
    """How late a 10 ms sleep wakes, again and again: the longest lateness is the loop's longest stall."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + 0.01
        await asyncio.sleep(0.01)
        lags.append(loop.time() - due)


async def _turn(bomb: Bomb, deadline: AttemptDeadline) -> dict[str, Any]:
    events = 0
    lags: list[float] = [0.0]
    _Tapped.seen.clear()

    async def sink(_event: Any) -> None:  # a host streams its events out: count them, keep none
        nonlocal events
        events += 1

    async with hostile(bomb) as (base, _served):
        endpoint = HttpEndpoint("openai", base_url=base + "/v1", api_key="k")
        session = AgentSession(
            agent=AgentSnapshot(id="a", model="m", provider="openai", system_prompt="s"),
            context=SessionContext(working_dir="."),
            deps=SessionDeps(
                resolve_provider=lambda _p, _m: _Tapped(endpoint), emit=sink, attempt_deadline=deadline
            ),
        )
        await session.start()
        began = time.monotonic()
        watch = asyncio.ensure_future(_lag(lags))
        result = await session.send_message("hi")
        took = time.monotonic() - began
        watch.cancel()
    error = result.error
    return {
        "status": result.status,
        "code": error.code if error else None,
        "provider_error": _Tapped.seen[-1] if _Tapped.seen else "timeout: the attempt deadline",
        "seconds": round(took, 2),
        "events": events,
        "longest_loop_stall_s": round(max(lags), 3),
    }


def measure(name: str, deadline: AttemptDeadline) -> dict[str, Any]:
    """Run one bomb in this process; the peak memory is this process's."""
    if name.startswith("gzip"):  # the bomb is built before the turn: its making is not the engine's cost
        _ = gzip_zeros(GIB, b":\n") if name.endswith("200") else gzip_zeros(GIB)
    asyncio.run(_turn(_redirect, deadline))  # the first stream's one-time cost (lazy imports, CA bundle)
    row = {"bomb": name, **asyncio.run(_turn(BOMBS[name], deadline))}
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def measure_in_subprocess(name: str, idle: float, total: float, timeout: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "tests.reference.hostile_bombs", name, str(idle), str(total)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def main(argv: list[str]) -> None:
    name = argv[0]
    idle, total = (float(argv[1]), float(argv[2])) if len(argv) > 2 else (60.0, 600.0)
    if name != "all":
        print(json.dumps(measure(name, AttemptDeadline(idle=idle, total=total))))
        return
    for each in BOMBS:
        row = measure_in_subprocess(each, idle, total, timeout=total + 300)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
