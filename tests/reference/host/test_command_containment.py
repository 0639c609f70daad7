"""User commands cannot escape: a glob admits bare names only (KD-CMD-3), and a command's whole process
group ends on cancel and when the command exits (KD-CMD-4).

No assertion rests on timing.  The group checks read ``/proc`` after the outcome: a process of the
command's group still alive then is the failure, whatever the clock says.  The elapsed time of the
cancel case is printed (``-s`` shows it) for the record only.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from tests.reference.enginekit import make_session, run

from relavium_reference import (
    ApprovalRequest,
    CommandAllowlist,
    CommandCancelled,
    CommandDenied,
    CommandRan,
    SessionContext,
    SessionState,
    TurnPolicy,
)

_LINUX = sys.platform.startswith("linux")


def _recording_policy(seen: list[ApprovalRequest]) -> TurnPolicy:
    async def confirm(request: ApprovalRequest) -> bool:
        seen.append(request)
        return True

    return TurnPolicy(confirm=confirm)


# -- the allowlist ---------------------------------------------------------------------------------

BYPASS_ATTEMPTS = [
    "github/../../../../bin/sh",  # the reported bypass: fnmatch's * crosses "/"
    "git/../../../../bin/sh",
    "./github/../../../../bin/sh",
    "/bin/sh",
    "/usr/bin/git",
    "../bin/sh",
    "git\\..\\..\\sh",
    "..",
    ".",
    "git ",  # trailing space
    " git",
    "git\t",
    "git\n",
    "git\x00",
    "g\u0456t",  # Cyrillic i
    "\uff47it",  # fullwidth g
    "git\u2215..\u2215sh",  # division slash looks like "/"
    "git\uff0f..\uff0fsh",  # fullwidth solidus
    "-git",
]
GLOBS = ("git*", "*", "?it", "[a-z]*", "*sh")


@pytest.mark.parametrize("command", ["GIT", "Git", "gIT"])
def test_globs_and_names_match_case_sensitively(command: str) -> None:
    assert not CommandAllowlist(names=("git",), globs=("git*", "g?t")).allows(command)


@pytest.mark.parametrize("command", BYPASS_ATTEMPTS)
def test_no_glob_admits_a_path_or_a_name_outside_plain_ascii(command: str) -> None:
    allowlist = CommandAllowlist(names=("git", "sh"), globs=GLOBS)
    assert not allowlist.allows(command)


def test_globs_still_admit_bare_names_and_exact_entries_admit_paths() -> None:
    allowlist = CommandAllowlist(names=("/usr/bin/git",), globs=("git*", "py?hon3.1[0-9]"))
    assert allowlist.allows("git")
    assert allowlist.allows("gitk")
    assert allowlist.allows("git-lfs")
    assert allowlist.allows("python3.11")
    assert allowlist.allows("/usr/bin/git")  # an exact entry holding a separator
    assert not allowlist.allows("/usr/bin/gitk")  # a glob never matches a path
    assert not CommandAllowlist(globs=("/usr/bin/*",)).allows("/usr/bin/sh")


@pytest.mark.parametrize("command", BYPASS_ATTEMPTS)
def test_a_bypass_attempt_is_an_allowlist_miss_without_approval(command: str, tmp_path: Path) -> None:
    (tmp_path / "github").mkdir()
    (tmp_path / "git").mkdir()
    seen: list[ApprovalRequest] = []
    h = make_session(calls=[], allowed_command_globs=GLOBS, context=SessionContext(working_dir=str(tmp_path)))
    h.session.set_turn_policy(_recording_policy(seen))

    async def scenario() -> object:
        await h.session.start()
        return await h.session.run_user_command(command, ["-c", "echo escaped > escaped"])

    outcome = run(scenario())
    assert isinstance(outcome, CommandDenied)
    assert outcome.allowlist is True
    assert seen == []
    assert not (tmp_path / "escaped").exists()


# -- process groups --------------------------------------------------------------------------------


def _live_members(group: int) -> list[int]:
    """Pids of live (not zombie) processes whose process group is ``group``, read from ``/proc``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == group and state not in ("Z", "X"):
            members.append(int(entry.name))
    return members


async def _wait_for_file(path: Path) -> int:
    while not path.exists() or not path.read_text().strip():
        await asyncio.sleep(0.01)
    return int(path.read_text().split()[0])


def _session_in(tmp_path: Path):  # type: ignore[no-untyped-def]
    h = make_session(calls=[], allowed_commands=("sh",), context=SessionContext(working_dir=str(tmp_path)))
    h.session.set_turn_policy(_recording_policy([]))
    return h


@pytest.mark.skipif(not _LINUX, reason="reads /proc")
@pytest.mark.parametrize(
    "script",
    [
        # the reported case: a background child and a foreground child, both holding the pipes
        "echo $$ > pid; sleep 20 & sleep 21",
        # children that hold no pipe: killing only the direct child would return at once and leave them
        "echo $$ > pid; sleep 300 >/dev/null 2>&1 & sleep 300 >/dev/null 2>&1",
    ],
    ids=["holding-pipes", "detached-output"],
)
def test_cancel_ends_the_whole_process_group(script: str, tmp_path: Path) -> None:
    h = _session_in(tmp_path)

    async def scenario() -> tuple[object, int, float]:
        await h.session.start()
        task = asyncio.create_task(h.session.run_user_command("sh", ["-c", script]))
        group = await _wait_for_file(tmp_path / "pid")
        while len(_live_members(group)) < 3:  # sh and both sleeps are running
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await h.session.cancel()
        outcome = await task
        return outcome, group, time.monotonic() - started

    outcome, group, elapsed = run(scenario())
    print(f"cancel -> outcome in {elapsed:.3f} s")  # reported, never asserted
    assert isinstance(outcome, CommandCancelled)
    assert _live_members(group) == []
    assert h.session.state is SessionState.CANCELLED


@pytest.mark.skipif(not _LINUX, reason="reads /proc")
def test_what_a_finished_command_leaves_in_its_group_is_ended(tmp_path: Path) -> None:
    h = _session_in(tmp_path)

    async def scenario() -> object:
        await h.session.start()
        return await h.session.run_user_command(
            "sh", ["-c", "echo $$ > pid; sleep 300 >/dev/null 2>&1 & echo done"]
        )

    outcome = run(scenario())
    assert isinstance(outcome, CommandRan)
    assert outcome.stdout == "done\n"
    assert _live_members(int((tmp_path / "pid").read_text())) == []
    assert h.session.state is SessionState.IDLE
