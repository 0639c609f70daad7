"""The protocol's versions, end to end: a port frozen at 1.0 is served 1.0 and never left to time out.

``tests/programs/frozen_adapter_1_0.py`` is the reference engine behind a 1.0 reader: it answers ``hello``
with 1.0 and ignores a line that is not a JSON object (a 1.1 batch line).  Before the version agreement
the kit sent it batch lines anyway and the abort-and-cancel races errored on the 15-second timeout.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._data import schemas_dir
from relavium_conformance._version import PROTOCOL_VERSION, PROTOCOL_VERSIONS
from relavium_conformance._wire.jsonrpc import ProtocolMismatch
from relavium_conformance._wire.process import SubprocessConnection

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
FROZEN = PROGRAMS / "frozen_adapter_1_0.py"
FAKE = PROGRAMS / "fake_implementation.py"

#: Every case that issues operations together (KD-KIT-1), and one that issues none.
RACES = (
    "races/abort-and-cancel-together",
    "races/abort-and-cancel-together-in-a-tool-call",
    "lifecycle/abort-and-cancel-together-approval-pending",
    "lifecycle/abort-and-cancel-together-in-event-handler",
)
TOGETHER_ON_SEPARATE_LINES = ("commands/busy-while-command-runs", "lifecycle/refusals-while-approval-pending")
PLAIN = ("lifecycle/abort-idle-noop",)


def _run(adapter: str, cases: tuple[str, ...], report: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "relavium_conformance",
        "run",
        "--adapter",
        adapter,
        "--json",
        str(report),
    ]
    for case in cases:
        command += ["--select", case]
    return subprocess.run([*command, *extra], capture_output=True, text=True, timeout=120)


def _cases(report: Path) -> dict[str, dict[str, Any]]:
    return {case["id"]: case for case in json.loads(report.read_text(encoding="utf-8"))["cases"]}


def test_a_port_frozen_at_1_0_is_served_1_0_and_no_case_times_out(tmp_path: Path) -> None:
    report = tmp_path / "frozen.json"
    done = _run(f"stdio:{sys.executable} {FROZEN}", RACES + TOGETHER_ON_SEPARATE_LINES + PLAIN, report)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    cases = _cases(report)
    assert set(cases) == set(RACES + TOGETHER_ON_SEPARATE_LINES + PLAIN)
    for case in RACES:  # their verdict rests on one message: not judged, and saying why
        assert cases[case]["status"] == "unsupported", cases[case]
        assert "protocol 1.0" in cases[case]["reason"]
        assert "protocol 1.1 on" in cases[case]["reason"]
    for case in TOGETHER_ON_SEPARATE_LINES + PLAIN:  # served as separate lines, which 1.0 reads
        assert cases[case]["status"] == "passed", cases[case]
    assert "frozen-1.0: ignored" not in done.stderr  # the kit never sent it a batch line
    assert "Traceback" not in done.stderr


def test_the_same_cases_through_a_1_1_port_are_all_judged(tmp_path: Path) -> None:
    report = tmp_path / "current.json"
    done = _run("reference-stdio", RACES, report)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert {case["status"] for case in _cases(report).values()} == {"passed"}


@pytest.mark.parametrize("batch_lines", [True, False])
def test_the_frozen_port_ignores_exactly_the_batch_lines(batch_lines: bool) -> None:
    """The frozen port is what it claims: a batch line goes unanswered (a kit sending one to a 1.0 port
    would wait for its timeout), separate lines are answered."""

    async def scenario() -> None:
        conn = SubprocessConnection([sys.executable, str(FROZEN)], request_timeout=3.0)
        hello = await conn.start({"kit": {"name": "test", "version": "0"}})
        assert hello["protocolVersion"] == "1.0"
        assert conn.protocol_version == "1.0"
        peer = conn.peer
        peer.batch_lines = batch_lines
        peer.cork()
        asks = [
            asyncio.ensure_future(peer.request("pure.workflowId", {"sessionId": name}))
            for name in ("session-a", "session-b")
        ]
        await asyncio.sleep(0)
        await peer.uncork()
        if batch_lines:
            with pytest.raises(Exception, match="no answer"):
                await asyncio.gather(*asks)
            assert any("ignored a line that is not a JSON object" in line for line in conn.stderr_tail())
        else:
            answers = await asyncio.gather(*asks)
            assert all(isinstance(answer, dict) for answer in answers)
        await conn.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_kit_that_no_longer_served_1_0_would_refuse_it_at_hello_naming_both() -> None:
    async def scenario() -> None:
        conn = SubprocessConnection(
            [sys.executable, str(FAKE), "--protocol-version", "1.0"], protocol_versions=("1.1",)
        )
        with pytest.raises(ProtocolMismatch) as caught:
            await conn.start()
        assert "speaks protocol 1.0," in caught.value.reason
        assert "the kit speaks 1.1" in caught.value.reason
        await conn.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_another_major_exits_3_naming_both_versions(tmp_path: Path) -> None:
    done = _run(
        f"stdio:{sys.executable} -m relavium_conformance stdio-server --misbehave wrong-version",
        PLAIN,
        tmp_path / "r.json",
    )
    assert done.returncode == 3
    assert "speaks protocol 99.0" in done.stdout + done.stderr
    assert f"the kit speaks {' and '.join(PROTOCOL_VERSIONS)}" in done.stdout + done.stderr


def test_version_names_the_protocol_and_the_older_one_served() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "relavium_conformance", "--version"], capture_output=True, text=True
    )
    assert f"protocol {PROTOCOL_VERSION}, also serves 1.0" in done.stdout


#: The message shapes of the newest protocol version: a digest of ``schemas/protocol/`` without its
#: prose (titles, descriptions).  A change to a message's shape must bump ``PROTOCOL_VERSION`` (and add
#: a changelog row to docs/protocol.md, and to ``PROTOCOL_VERSIONS`` when the kit still serves the old
#: one); then record the new digest here, under the new version.
SHAPES = {"1.1": "sha256:38b5d33b51b12794"}

_PROSE = frozenset({"title", "description", "$comment", "examples", "$id", "$schema"})


#: Keywords whose value maps names to schemas: a member named ``title`` or ``description`` is shape.
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def _without_prose(value: Any, *, names: bool = False) -> Any:
    if isinstance(value, dict):
        if names:
            return {key: _without_prose(item) for key, item in value.items()}
        return {
            key: _without_prose(item, names=key in _NAMED) for key, item in value.items() if key not in _PROSE
        }
    if isinstance(value, list):
        return [_without_prose(item) for item in value]
    return value


def protocol_shapes_digest() -> str:
    root = Path(schemas_dir()) / "protocol"
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.json")):
        shape = _without_prose(json.loads(path.read_text(encoding="utf-8")))
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(json.dumps(shape, sort_keys=True, separators=(",", ":")).encode() + b"\0")
    return "sha256:" + digest.hexdigest()[:16]


def test_a_change_of_message_shape_bumps_the_protocol_version() -> None:
    assert PROTOCOL_VERSION in SHAPES, f"record the shapes of protocol {PROTOCOL_VERSION} in SHAPES"
    assert protocol_shapes_digest() == SHAPES[PROTOCOL_VERSION], (
        "the protocol's message shapes changed under the same version: bump PROTOCOL_VERSION "
        "(conformance/_version.py), add a changelog row in docs/protocol.md, serve or refuse the old "
        "version, then record the new digest in SHAPES"
    )


def test_the_shape_digest_ignores_prose_but_not_members_named_like_it() -> None:
    schema = {"title": "T", "description": "d", "properties": {"title": {"type": "string", "title": "x"}}}
    reworded = {**schema, "description": "other words"}
    retyped = {**schema, "properties": {"title": {"type": "integer", "title": "x"}}}
    assert _without_prose(reworded) == _without_prose(schema)
    assert _without_prose(retyped) != _without_prose(schema)
    assert _without_prose(schema) == {"properties": {"title": {"type": "string"}}}
