"""runUserCommand: allowlist first, no shell, classified outcomes, idle after, unseen by the model."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from tests.reference.enginekit import make_session, run, text_call

from relavium_reference import (
    ApprovalRequest,
    CommandCancelled,
    CommandDenied,
    CommandFailed,
    CommandRan,
    SessionState,
    SessionStateCode,
    SessionStateError,
    TurnPolicy,
)


def _policy(answer: bool, seen: list[ApprovalRequest] | None = None) -> TurnPolicy:
    async def confirm(request: ApprovalRequest) -> bool:
        if seen is not None:
            seen.append(request)
        return answer

    return TurnPolicy(confirm=confirm)


def test_allowlisted_and_approved_command_runs_without_a_shell(tmp_path: Path) -> None:
    from relavium_reference import SessionContext

    h = make_session(
        calls=[], allowed_commands=(sys.executable,), context=SessionContext(working_dir=str(tmp_path))
    )
    h.session.set_turn_policy(_policy(True))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command(
            sys.executable, ["-c", "import os,sys; print(os.getcwd()); sys.stderr.write('e'); sys.exit(3)"]
        )

    outcome = run(scenario())
    assert isinstance(outcome, CommandRan)
    assert outcome.exit_code == 3
    assert outcome.stdout.strip() == str(tmp_path)
    assert outcome.stderr == "e"
    assert h.session.state is SessionState.IDLE


def test_shell_metacharacters_are_plain_arguments() -> None:
    h = make_session(calls=[], allowed_commands=("echo",))
    h.session.set_turn_policy(_policy(True))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command("echo", ["$HOME", ";", "rm", "-rf", "/nonexistent"])

    outcome = run(scenario())
    assert isinstance(outcome, CommandRan)
    assert outcome.stdout == "$HOME ; rm -rf /nonexistent\n"


def test_allowlist_is_checked_before_approval() -> None:
    seen: list[ApprovalRequest] = []
    h = make_session(calls=[], allowed_commands=("echo",))
    h.session.set_turn_policy(_policy(True, seen))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command("touch", ["/tmp/should-not-exist-relavium"])

    outcome = run(scenario())
    assert isinstance(outcome, CommandDenied)
    assert outcome.allowlist is True
    assert seen == []
    assert not Path("/tmp/should-not-exist-relavium").exists()


def test_glob_allowlist_is_opt_in() -> None:
    h = make_session(calls=[], allowed_command_globs=("ec*",))
    h.session.set_turn_policy(_policy(True))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command("echo", ["hi"])

    assert isinstance(run(scenario()), CommandRan)
    h2 = make_session(calls=[], allowed_commands=("ec*",))
    h2.session.set_turn_policy(_policy(True))

    async def scenario2():  # type: ignore[no-untyped-def]
        await h2.session.start()
        return await h2.session.run_user_command("echo", ["hi"])

    denied = run(scenario2())
    assert isinstance(denied, CommandDenied)
    assert denied.allowlist


def test_refused_approval_is_denied_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    h = make_session(calls=[], allowed_commands=("touch",))
    h.session.set_turn_policy(_policy(False))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command("touch", [str(marker)])

    outcome = run(scenario())
    assert isinstance(outcome, CommandDenied)
    assert outcome.allowlist is False
    assert not marker.exists()


def test_no_confirm_hook_means_denied() -> None:
    h = make_session(calls=[], allowed_commands=("echo",))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command("echo", ["x"])

    outcome = run(scenario())
    assert isinstance(outcome, CommandDenied)
    assert not outcome.allowlist


def test_missing_program_fails_with_a_secret_free_message() -> None:
    h = make_session(calls=[], allowed_commands=("relavium-no-such-program-xyz",))
    h.session.set_turn_policy(_policy(True))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command("relavium-no-such-program-xyz", ["secret-token-123"])

    outcome = run(scenario())
    assert isinstance(outcome, CommandFailed)
    assert "secret-token-123" not in outcome.message
    assert "relavium-no-such-program" not in outcome.message


def test_cancel_during_a_command_yields_cancelled() -> None:
    h = make_session(calls=[], allowed_commands=("sleep",))
    h.session.set_turn_policy(_policy(True))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        task = asyncio.create_task(h.session.run_user_command("sleep", ["30"]))
        while h.session.state is not SessionState.COMMAND:
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        await h.session.cancel()
        return await task

    assert isinstance(run(scenario()), CommandCancelled)


def test_output_is_bounded() -> None:
    h = make_session(calls=[], allowed_commands=(sys.executable,), command_output_limit=1000)
    h.session.set_turn_policy(_policy(True))

    async def scenario():  # type: ignore[no-untyped-def]
        await h.session.start()
        return await h.session.run_user_command(sys.executable, ["-c", "print('x' * 100000)"])

    outcome = run(scenario())
    assert isinstance(outcome, CommandRan)
    assert len(outcome.stdout) == 1000
    assert outcome.truncated


def test_the_model_never_sees_the_command() -> None:
    h = make_session(calls=[text_call("reply")], allowed_commands=("echo",))
    h.session.set_turn_policy(_policy(True))

    async def scenario() -> None:
        await h.session.start()
        await h.session.run_user_command("echo", ["visible-only-to-user"])
        await h.session.send_message("hello")

    run(scenario())
    request = h.provider.requests[0].request
    assert "visible-only-to-user" not in str(request)
    assert "run_command" not in str(request)


@pytest.mark.parametrize("when", ["before_start", "after_cancel"])
def test_command_refused_outside_started_idle(when: str) -> None:
    h = make_session(calls=[], allowed_commands=("echo",))

    async def scenario() -> None:
        if when == "after_cancel":
            await h.session.start()
            await h.session.cancel()
        await h.session.run_user_command("echo", ["x"])

    with pytest.raises(SessionStateError) as info:
        run(scenario())
    expected = SessionStateCode.NOT_STARTED if when == "before_start" else SessionStateCode.NOT_ACTIVE
    assert info.value.code is expected
