"""Breaks of runUserCommand (clauses AS-LIFE-025 to 033): allowlist, approval, the argument vector and
what a command may do while a turn or another command runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from relavium_conformance._selftest.base import break_of, run_command_approved
from relavium_conformance._selftest.breaks.shared import RefusalCodesRenamed
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import SESSION_STATE_ERROR, Callback
from relavium_reference import AgentSession
from relavium_reference._host.session import ExportResult
from relavium_reference._model.commands import CommandAllowlist
from relavium_reference._rules.lifecycle import SessionState
from relavium_reference._rules.projection import Exchange

__all__: list[str] = []  # the breaks register themselves (see ``base.break_of``)


@break_of(
    name="denied-command-runs",
    summary="a user command runs although its approval was refused",
    clauses=("AS-LIFE-030",),
)
class _CommandRunsWhenDenied(AgentSession):
    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        return await run_command_approved(self, command, args)


@break_of(
    name="allowlist-ignored",
    summary="a user command off the allowlist still reaches approval",
    clauses=("AS-LIFE-026", "AS-SEC-002"),
)
class _AllowlistIgnored(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._allowlist = CommandAllowlist(globs=("*",))


@break_of(
    name="command-through-shell",
    summary="a user command line is run through a shell",
    clauses=("AS-LIFE-027", "AS-LIFE-028"),
)
class _CommandThroughShell(AgentSession):
    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        if not self._allowlist.allows(command):
            return await super().run_user_command(command, args)
        kept = self._allowlist
        self._allowlist = CommandAllowlist(names=("sh",))
        try:
            return await super().run_user_command("sh", ["-c", " ".join([command, *args])])
        finally:
            self._allowlist = kept


class _LooseAllowlist(CommandAllowlist):
    """An entry also admits a path to it, another letter case and surrounding blanks."""

    def allows(self, command: str) -> bool:
        loose = os.path.basename(command.strip()).lower()
        return super().allows(command) or loose in {name.lower() for name in self.names}


@break_of(
    name="allowlist-matches-loosely",
    summary="the allowlist admits a path to a listed name, another case and surrounding blanks",
    clauses=("AS-LIFE-026", "AS-SEC-002"),
)
class _AllowlistMatchesLoosely(AgentSession):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._allowlist = _LooseAllowlist(self._allowlist.names, self._allowlist.globs)


@break_of(
    name="export-during-a-command",
    summary="an export while a user command runs is served instead of refused busy",
    clauses=("AS-LIFE-032",),
)
class _ExportDuringACommand(AgentSession):
    async def export(self, workflow_path: str) -> ExportResult:
        if self._state is not SessionState.COMMAND:
            return await super().export(workflow_path)
        self._state = SessionState.IDLE  # the command is not treated as occupying the session
        try:
            return await super().export(workflow_path)
        finally:
            self._state = SessionState.COMMAND


@break_of(
    name="send-during-a-command",
    summary="a send while a user command runs starts a turn instead of being refused busy",
    clauses=("AS-LIFE-032",),
)
class _SendDuringACommand(AgentSession):
    async def send_message(self, text: str) -> Any:
        if self._state is not SessionState.COMMAND:
            return await super().send_message(text)
        self._state = SessionState.IDLE  # the command is not treated as occupying the session
        try:
            return await super().send_message(text)
        finally:
            self._state = SessionState.COMMAND


@break_of(
    name="command-runs-without-hook",
    summary="a user command runs with no approval hook, where the model's run_command is refused",
    clauses=("AS-LIFE-025",),
)
class _CommandRunsWithoutHook(AgentSession):
    """A user command with no approval hook runs, where the model's run_command call is refused."""

    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        if self._policy.confirm is not None:
            return await super().run_user_command(command, args)
        return await run_command_approved(self, command, args)


@break_of(
    name="command-reaches-the-model",
    summary="a user command and its output join the model's next request",
    clauses=("AS-LIFE-029",),
)
class _CommandReachesTheModel(AgentSession):
    """A user command and its output join the conversation the model sees next."""

    async def run_user_command(self, command: str, args: Sequence[str] = ()) -> Any:
        outcome = await super().run_user_command(command, args)
        line = " ".join(["!" + command, *args])
        self._exchanges.append(Exchange(user=line, assistant=str(getattr(outcome, "stdout", ""))))
        return outcome


@break_of(
    name="command-outcome-fields-renamed",
    summary="the ran/denied outcomes name their fields differently",
    clauses=("AS-LIFE-031",),
)
class _CommandOutcomeRenamed(WireVariant):
    def result(self, method: str, params: dict[str, Any], result: Any) -> Any:
        if method == "session.runUserCommand" and isinstance(result, dict) and "exitCode" in result:
            result["code"] = result.pop("exitCode")
        if method == "session.runUserCommand" and isinstance(result, dict) and "allowlist" in result:
            result["allowlisted"] = result.pop("allowlist")
        return result


@break_of(
    name="command-outside-idle-answers-failed",
    summary="a command outside idle answers failed instead of refusing",
    clauses=("AS-LIFE-032",),
)
class _CommandRacesTheTurn(RefusalCodesRenamed):
    """A command refused outside idle answers a failed outcome instead of refusing."""

    methods = ("session.runUserCommand",)

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await WireVariant.operation(self, method, params)
        except RpcError as exc:
            if method in self.methods and exc.code == SESSION_STATE_ERROR:
                return {"outcome": "failed", "message": "the command could not run"}
            raise


@break_of(
    name="busy-after-command",
    summary="after a user command the session stays busy for the next send",
    clauses=("AS-LIFE-033",),
)
class _BusyAfterCommand(WireVariant):
    def __init__(self, callback: Callback, **options: Any) -> None:
        super().__init__(callback, **options)
        self._ran: set[str] = set()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        handle = str(params.get("handle"))
        if method == "session.send" and handle in self._ran:
            self._ran.discard(handle)
            raise RpcError(SESSION_STATE_ERROR, "refused (busy)", {"kind": "session_state", "code": "busy"})
        result = await super().operation(method, params)
        if method == "session.runUserCommand":
            self._ran.add(handle)
        return result
