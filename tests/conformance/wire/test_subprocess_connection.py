"""The stdio connection with real child processes: handshake, callbacks, every failure, restart, close.

The child is ``tests/programs/fake_implementation.py`` run with ``sys.executable``; it misbehaves on
command (per method, or per run through its options).  Timeouts are small; no test measures time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from relavium_conformance._data import schemas_dir
from relavium_conformance._errors import KitUsageError
from relavium_conformance._version import PROTOCOL_VERSION
from relavium_conformance._wire.jsonrpc import (
    JsonObject,
    MalformedMessage,
    OversizeMessage,
    PeerClosed,
    PeerCrashed,
    PeerTimeout,
    ProtocolMismatch,
)
from relavium_conformance._wire.process import StderrTail, SubprocessConnection, parse_command

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
FAKE = PROGRAMS / "fake_implementation.py"
PEER_SERVER = PROGRAMS / "peer_server.py"
GUARD = 30.0  # seconds: only ever reached by a hanging regression
POSIX = sys.platform != "win32"


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    async def guarded() -> None:
        await asyncio.wait_for(scenario(), GUARD)

    asyncio.run(guarded())


def fake(*options: str, **settings: Any) -> SubprocessConnection:
    settings.setdefault("request_timeout", 10.0)
    settings.setdefault("close_timeout", 2.0)
    return SubprocessConnection([sys.executable, str(FAKE), *options], **settings)


async def kit_handler(method: str, params: JsonObject) -> Any:
    return {"method": method, "doubled": params["n"] * 2}


async def wait_until(predicate: Callable[[], bool]) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


def assert_reaped(pid: int) -> None:
    """The child is gone and was waited for: it is no zombie of ours."""
    if POSIX:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


async def assert_works(conn: SubprocessConnection) -> None:
    assert await conn.peer.request("echo", {"still": "alive"}) == {"still": "alive"}


# --------------------------------------------------------------------------------------------------
# Handshake and normal traffic


def test_hello_carries_the_kit_protocol_version_and_returns_the_answer() -> None:
    async def scenario() -> None:
        conn = fake()
        result = await conn.start({"kit": "relavium-conformance", "capabilities": ["stdio"]})
        assert result == {
            "protocolVersion": "1.0",
            "name": "fake",
            "received": {
                "kit": "relavium-conformance",
                "capabilities": ["stdio"],
                "protocolVersion": PROTOCOL_VERSION,
            },
        }
        assert conn.hello_result == result
        assert conn.protocol_version == "1.0"  # what the program answered: the kit speaks it
        assert not conn.peer.batch_lines
        assert conn.running
        await assert_works(conn)
        await conn.close()

    run(scenario)


def test_a_minor_version_difference_is_accepted() -> None:
    async def scenario() -> None:
        conn = fake("--protocol-version", "1.4")
        assert (await conn.start())["protocolVersion"] == "1.4"
        assert conn.protocol_version == PROTOCOL_VERSION  # a newer minor is served the kit's newest
        assert conn.peer.batch_lines
        await conn.close()

    run(scenario)


def test_the_implementation_calls_back_while_the_kit_request_is_pending() -> None:
    async def scenario() -> None:
        conn: SubprocessConnection
        nested: list[Any] = []

        async def handler(method: str, params: JsonObject) -> Any:
            # before answering the callback, the kit sends its own request (as it would an abort)
            nested.append(await conn.peer.request("echo", {"while": "pending"}))
            return await kit_handler(method, params)

        conn = fake()
        await conn.start()
        conn.handler = handler  # the runner may plug its callbacks in after the handshake
        answer = await conn.peer.request("callback", {"n": 21})
        assert answer == {"fromKit": {"method": "kit.compute", "doubled": 42}}
        assert nested == [{"while": "pending"}]
        await assert_works(conn)
        await conn.close()

    run(scenario)


def test_a_notification_from_the_implementation_reaches_the_handler() -> None:
    async def scenario() -> None:
        notes: list[tuple[str, JsonObject]] = []

        async def handler(method: str, params: JsonObject) -> Any:
            notes.append((method, params))
            return None

        conn = fake(handler=handler)
        await conn.start()
        assert await conn.peer.request("notify", {"event": "turn_started"}) == "noted"
        await wait_until(lambda: bool(notes))
        assert notes == [("kit.note", {"event": "turn_started"})]
        await conn.close()

    run(scenario)


def test_a_two_mib_line_passes_under_the_default_limit() -> None:
    async def scenario() -> None:
        conn = fake()
        await conn.start()
        result = await conn.peer.request("huge", {"bytes": 2 * 1024 * 1024})
        assert result == "y" * (2 * 1024 * 1024)
        big = {"blob": "é" * (1024 * 1024)}
        assert await conn.peer.request("echo", big) == big
        await conn.close()

    run(scenario)


def test_an_implementation_built_on_the_peer_serves_pulls_and_an_abort_under_validation() -> None:
    """Both ends are asyncio peers across real pipes: the implementation pulls chunks from the kit; the
    kit, before answering the second pull, sends ``session.abort``; every message of both directions
    is checked against the envelope schema on the kit's side."""
    envelope = jsonschema.Draft202012Validator(
        json.loads((schemas_dir() / "protocol" / "jsonrpc.schema.json").read_text(encoding="utf-8"))
    )
    checked: list[tuple[str, str | None]] = []

    def validate(direction: str, message: JsonObject, method: str | None) -> None:
        envelope.validate(message)
        checked.append((direction, method))

    async def scenario() -> None:
        conn: SubprocessConnection
        pulls = 0

        async def handler(method: str, params: JsonObject) -> Any:
            nonlocal pulls
            pulls += 1
            if pulls == 2:
                assert await conn.peer.request("session.abort", {"reason": "user"}) == {"accepted": True}
            return None if pulls == 3 else f"chunk{pulls} "

        conn = SubprocessConnection([sys.executable, str(PEER_SERVER)], handler=handler, validate=validate)
        assert (await conn.start())["name"] == "peer-server"
        result = await conn.peer.request("session.send", {"turn": 1})
        assert result == {"text": "chunk1 chunk2 ", "abortedDuringTurn": ["user"]}
        await conn.close()
        assert conn.returncode == 0
        assert conn.stderr_tail() == ["peer-server ready"]

    run(scenario)
    assert checked == [
        ("outgoing", "hello"),
        ("incoming", "hello"),
        ("outgoing", "session.send"),
        ("incoming", "provider.next"),
        ("outgoing", "provider.next"),
        ("incoming", "provider.next"),
        ("outgoing", "session.abort"),
        ("incoming", "session.abort"),
        ("outgoing", "provider.next"),
        ("incoming", "provider.next"),
        ("outgoing", "provider.next"),
        ("incoming", "session.send"),
        ("outgoing", "bye"),
    ]


# --------------------------------------------------------------------------------------------------
# Failures mid-request, and restart after each


def test_a_crash_mid_request_is_peer_crashed_with_exit_code_and_stderr_then_restart_works() -> None:
    async def scenario() -> None:
        conn = fake()
        await conn.start()
        first_pid = conn.pid
        assert first_pid is not None
        with pytest.raises(PeerCrashed) as caught:
            await conn.peer.request("crash", {})
        reason = caught.value.reason
        assert "'crash' was pending" in reason
        assert "exited with code 3" in reason
        assert "fatal: simulated crash in the middle of a request" in reason
        assert "\n" not in reason
        assert conn.stderr_tail()[-1] == "fatal: simulated crash in the middle of a request"
        with pytest.raises(PeerCrashed):
            await conn.peer.request("echo", {})
        await conn.restart()
        assert conn.restarts == 1
        assert conn.pid != first_pid
        assert conn.stderr_tail() == []
        await assert_works(conn)
        await conn.close()
        assert_reaped(first_pid)

    run(scenario)


def test_a_hang_is_peer_timeout_naming_method_and_timeout_then_restart_works() -> None:
    async def scenario() -> None:
        conn = fake()
        await conn.start()
        hung_pid = conn.pid
        assert hung_pid is not None
        with pytest.raises(PeerTimeout) as caught:
            await conn.peer.request("hang", {}, timeout=0.5)
        assert "'hang'" in caught.value.reason
        assert "0.5 s" in caught.value.reason
        assert conn.running  # the child still hangs until the runner restarts it
        await conn.restart()
        assert_reaped(hung_pid)
        await assert_works(conn)
        await conn.close()

    run(scenario)


def test_a_garbage_line_is_malformed_then_restart_works() -> None:
    async def scenario() -> None:
        conn = fake()
        await conn.start()
        with pytest.raises(MalformedMessage) as caught:
            await conn.peer.request("garbage", {})
        assert "'this line is not JSON {'" in caught.value.reason
        await conn.restart()
        await assert_works(conn)
        await conn.close()

    run(scenario)


def test_a_two_mib_line_is_oversize_under_a_one_mib_limit_then_restart_works() -> None:
    async def scenario() -> None:
        conn = fake(line_limit=1024 * 1024)
        await conn.start()
        with pytest.raises(OversizeMessage) as caught:
            await conn.peer.request("huge", {"bytes": 2 * 1024 * 1024})
        assert "1048576-byte line limit" in caught.value.reason
        await conn.restart()
        await assert_works(conn)
        await conn.close()

    run(scenario)


def test_an_exit_between_requests_fails_the_next_request() -> None:
    async def scenario() -> None:
        conn = fake()
        await conn.start()
        assert await conn.peer.request("exit", {}) == "exiting"
        with pytest.raises(PeerCrashed) as caught:
            await conn.peer.request("echo", {})
        assert "exited with code 0" in caught.value.reason
        await conn.restart()
        await assert_works(conn)
        await conn.close()

    run(scenario)


# --------------------------------------------------------------------------------------------------
# stderr stays out of band


def test_stderr_noise_never_disturbs_the_protocol() -> None:
    """The child writes far more than a pipe buffer of stderr around every message, some of it shaped
    like JSON-RPC answers; every answer still arrives, intact, on stdout.  (A small line limit keeps
    asyncio's own buffering of an unread stderr small, so a connection that stopped draining stderr
    would block the child and fail here.)"""

    async def scenario() -> None:
        conn = fake("--stderr-noise", "400", handler=kit_handler, line_limit=64 * 1024, request_timeout=5.0)
        await conn.start()
        for index in range(15):
            assert await conn.peer.request("echo", {"index": index}) == {"index": index}
        answer = await conn.peer.request("callback", {"n": 5})
        assert answer == {"fromKit": {"method": "kit.compute", "doubled": 10}}
        assert conn.peer.failure is None
        tail = conn.stderr_tail()
        assert 0 < len(tail) <= 200
        assert any("stderr is not the protocol" in line for line in tail)
        await conn.close()

    run(scenario)


def test_the_stderr_tail_keeps_only_the_last_lines() -> None:
    async def scenario() -> None:
        conn = fake(stderr_lines=50)
        await conn.start()
        assert await conn.peer.request("stderr", {"lines": 500}) == "written"
        await wait_until(lambda: conn.stderr_tail()[-1:] == ["stderr line 499"])
        assert conn.stderr_tail() == [f"stderr line {index}" for index in range(450, 500)]
        assert conn.stderr_tail(2) == ["stderr line 498", "stderr line 499"]
        await conn.close()

    run(scenario)


def test_the_stderr_tail_cuts_long_lines_and_keeps_an_unterminated_one() -> None:
    tail = StderrTail(max_lines=3)
    tail.feed(b"one\r\ntw")
    assert tail.lines() == ["one", "tw"]
    tail.feed(b"o\n" + b"x" * 20000 + b"\nthr")
    assert tail.lines() == ["two", "x" * 2000 + " [cut]", "thr"]
    tail.feed(b"ee \xff")
    tail.finish()
    assert tail.lines() == ["two", "x" * 2000 + " [cut]", "three \ufffd"]
    assert tail.finished


# --------------------------------------------------------------------------------------------------
# Handshake failures


def test_another_protocol_major_is_a_mismatch_naming_both_versions() -> None:
    async def scenario() -> None:
        conn = fake("--protocol-version", "2.0")
        with pytest.raises(ProtocolMismatch) as caught:
            await conn.start()
        assert "speaks protocol 2.0," in caught.value.reason
        assert "the kit speaks 1.0 and 1.1" in caught.value.reason
        assert not conn.running
        assert conn.returncode is not None
        await conn.close()

    run(scenario)


@pytest.mark.parametrize(
    ("mode", "error", "fragment"),
    [
        pytest.param("garbled", MalformedMessage, "no protocolVersion", id="garbled"),
        pytest.param("refuse", ProtocolMismatch, "refused hello", id="refused"),
        pytest.param("hang", PeerTimeout, "'hello'", id="silent"),
        pytest.param("crash", PeerCrashed, "missing configuration", id="crash"),
    ],
)
def test_a_failed_handshake_raises_its_failure_and_stops_the_child(
    mode: str, error: type[Exception], fragment: str
) -> None:
    async def scenario() -> None:
        # only the silent child needs a short handshake timeout; the others must not race a slow start
        conn = fake("--hello", mode, hello_timeout=0.5 if mode == "hang" else 10.0)
        with pytest.raises(error) as caught:
            await conn.start()
        assert fragment in str(caught.value)
        assert not conn.running
        pid = conn.pid
        assert pid is not None
        assert_reaped(pid)
        with pytest.raises(error):  # the same command fails the same way when started again
            await conn.restart()
        await conn.close()

    run(scenario)


def test_a_program_that_cannot_run_is_a_usage_error() -> None:
    async def scenario() -> None:
        conn = SubprocessConnection(["/nonexistent/relavium-implementation"])
        with pytest.raises(KitUsageError, match="cannot run"):
            await conn.start()
        await conn.close()

    run(scenario)


# --------------------------------------------------------------------------------------------------
# Closing


def test_close_sends_bye_and_the_child_exits_by_itself() -> None:
    async def scenario() -> None:
        conn = fake()
        await conn.start()
        pid = conn.pid
        assert pid is not None
        peer = conn.peer
        await conn.close()
        assert conn.returncode == 0
        assert_reaped(pid)
        await conn.close()  # idempotent
        with pytest.raises(PeerClosed):
            await peer.request("echo", {})
        with pytest.raises(PeerClosed):
            await conn.start()
        with pytest.raises(PeerClosed):
            await conn.restart()

    run(scenario)


def test_close_terminates_a_child_that_ignores_bye() -> None:
    async def scenario() -> None:
        conn = fake("--ignore-bye", close_timeout=1.0)
        await conn.start()
        await conn.close()
        assert conn.returncode == (-signal.SIGTERM if POSIX else 1)

    run(scenario)


@pytest.mark.skipif(not POSIX, reason="SIGTERM cannot be ignored on Windows")
def test_close_kills_a_child_that_ignores_bye_and_sigterm() -> None:
    async def scenario() -> None:
        conn = fake("--ignore-bye", "--ignore-term", close_timeout=0.3)
        await conn.start()
        pid = conn.pid
        assert pid is not None
        await conn.close()
        assert conn.returncode == -signal.SIGKILL
        assert_reaped(pid)

    run(scenario)


def test_the_context_manager_closes_the_connection() -> None:
    async def scenario() -> None:
        async with fake() as conn:
            await conn.start()
            await assert_works(conn)
        assert conn.returncode == 0

    run(scenario)


# --------------------------------------------------------------------------------------------------
# Misuse


def test_start_twice_and_restart_before_start_are_usage_errors() -> None:
    async def scenario() -> None:
        conn = fake()
        with pytest.raises(KitUsageError, match="before start"):
            await conn.restart()
        with pytest.raises(KitUsageError, match="never started"):
            _ = conn.peer
        await conn.start()
        with pytest.raises(KitUsageError, match="already started"):
            await conn.start()
        await conn.close()

    run(scenario)


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("stdio:node adapter.js --flag 'two words'", ["node", "adapter.js", "--flag", "two words"]),
        ("python -m port", ["python", "-m", "port"]),
        (["prog", "a b"], ["prog", "a b"]),
    ],
)
def test_a_command_becomes_an_argv_list(command: str | list[str], argv: list[str]) -> None:
    assert parse_command(command) == argv


@pytest.mark.parametrize("command", ["", "stdio:", "stdio:   ", [], "stdio:'unbalanced"])
def test_a_command_without_a_program_is_a_usage_error(command: str | list[str]) -> None:
    with pytest.raises(KitUsageError):
        parse_command(command)
