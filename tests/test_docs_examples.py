"""The documentation's examples are real: the Node.js adapter speaks the protocol, the annotated exchange
validates, every method is documented, and the commands and links in the docs exist."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from relavium_conformance._cli import build_parser
from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import KNOWN_CAPABILITIES
from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._report.results import CaseStatus, ClauseStatus, RunResult
from relavium_conformance._run.runner import run_cases_sync
from relavium_conformance._wire.protocol import (
    CALLBACKS,
    INVALID_INPUT,
    OPERATIONS,
    SESSION_STATE_ERROR,
    UNSUPPORTED_OPERATION,
)
from relavium_conformance._wire.protocol_validation import ProtocolValidator

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ECHO_ADAPTER = DOCS / "examples" / "echo-adapter.mjs"
NODE = shutil.which("node")

#: Cases the echo adapter must pass: the session basics, a plain turn, abort and cancel.
ECHO_PASSES = (
    "session/start-emits-started",
    "session/start-twice-refused",
    "session/send-before-start-refused",
    "lifecycle/plain-turn-event-order",
    "lifecycle/abort-idle-noop",
    "lifecycle/abort-mid-stream",
    "lifecycle/cancel-idle",
    "lifecycle/after-cancel-inert",
    "races/abort-and-cancel-together",
)


def _node_major() -> int | None:
    if NODE is None:
        return None
    out = subprocess.run([NODE, "--version"], capture_output=True, text=True, check=False, timeout=30)
    match = re.match(r"v(\d+)\.", out.stdout.strip())
    return int(match.group(1)) if match else None


needs_node = pytest.mark.skipif(
    (_node_major() or 0) < 20, reason="node 20 or later is not on PATH: the Node.js example cannot run"
)


@pytest.fixture(scope="module")
def echo_run() -> tuple[RunResult, int]:
    assert NODE is not None
    validator = ProtocolValidator()
    adapter = resolve_adapter(
        f"stdio:{shlex.quote(NODE)} {shlex.quote(str(ECHO_ADAPTER))}", validate=validator
    )
    outcome = run_cases_sync(adapter, load_cases())
    return outcome.run, validator.checked


@needs_node
def test_echo_adapter_speaks_the_protocol_without_an_errored_case(echo_run: tuple[RunResult, int]) -> None:
    run, checked = echo_run
    errored = {case.id: case.reason for case in run.cases if case.status is CaseStatus.ERRORED}
    assert errored == {}
    assert checked > 1000  # every message of the run went through the validator
    assert run.implementation.name == "echo-adapter"
    assert run.implementation.capabilities == ("core",)


@needs_node
def test_echo_adapter_passes_the_basic_cases(echo_run: tuple[RunResult, int]) -> None:
    run, _ = echo_run
    status = {case.id: case.status for case in run.cases}
    assert {case: status[case] for case in ECHO_PASSES} == dict.fromkeys(ECHO_PASSES, CaseStatus.PASSED)


@needs_node
def test_echo_adapter_undeclared_capability_is_unsupported_not_failed(
    echo_run: tuple[RunResult, int],
) -> None:
    run, _ = echo_run
    needing_commands = [case for case in run.cases if case.id.startswith("commands/")]
    assert needing_commands
    assert {case.status for case in needing_commands} == {CaseStatus.UNSUPPORTED}


@needs_node
def test_echo_adapter_report_is_per_clause(echo_run: tuple[RunResult, int]) -> None:
    run, _ = echo_run
    cases = {case.id: case for case in run.cases}
    clauses = {clause.id: clause for clause in run.clauses}
    # the toy does not default fsScopeTier: that case fails, and with it the clause it checks
    assert cases["context/default-scope-tier"].status is CaseStatus.FAILED
    assert clauses["AS-CTX-003"].status is ClauseStatus.FAILED
    # every case citing AS-LIFE-047 passes, so the clause passes
    assert clauses["AS-LIFE-047"].status is ClauseStatus.PASSED
    assert all(cases[case].status is CaseStatus.PASSED for case in clauses["AS-LIFE-047"].cases)


# -- the annotated exchange of docs/protocol.md -----------------------------------------------------

_ARROWS = {"K→I": "kit", "I→K": "implementation"}


def _documented_exchange() -> list[tuple[str, dict[str, Any]]]:
    """The complete (not shortened) message lines of protocol.md's annotated exchange, in order."""
    text = (DOCS / "protocol.md").read_text(encoding="utf-8")
    section = text.split("## An annotated exchange", 1)[1].split("### An abort before", 1)[0]
    out = []
    for line in section.splitlines():
        arrow, _, body = line.partition(" ")
        if arrow in _ARROWS:
            out.append((_ARROWS[arrow], json.loads(body)))
    return out


def test_annotated_exchange_validates_against_the_protocol_schemas() -> None:
    exchange = _documented_exchange()
    validator = ProtocolValidator()
    pending: dict[tuple[str, object], str] = {}  # (who asked, id) -> method
    for sender, message in exchange:
        other = "implementation" if sender == "kit" else "kit"
        if "method" in message:
            method = message["method"]
            assert method in (OPERATIONS if sender == "kit" else CALLBACKS), method
            validator("outgoing", message, method)
            if "id" in message:
                pending[(sender, message["id"])] = method
        else:
            method = pending.pop((other, message["id"]))
            validator("incoming", message, method)
    assert pending == {}  # every request of the documented exchange is answered
    assert validator.checked == len(exchange) > 20


def test_annotated_exchange_events_are_numbered_from_zero() -> None:
    events = [
        message["params"]["event"]
        for _, message in _documented_exchange()
        if message.get("method") == "host.emit"
    ]
    assert [event["sequenceNumber"] for event in events] == list(range(len(events)))
    assert {event["sessionId"] for event in events} == {"session-1"}


# -- the reference pages match the code --------------------------------------------------------------


def test_protocol_reference_documents_every_method() -> None:
    text = (DOCS / "protocol.md").read_text(encoding="utf-8")
    rows = {match.group(1) for match in re.finditer(r"^\| `([a-zA-Z.]+)` \|", text, re.MULTILINE)}
    assert set(OPERATIONS) | set(CALLBACKS) <= rows


def test_protocol_reference_documents_the_error_codes_and_capabilities() -> None:
    text = (DOCS / "protocol.md").read_text(encoding="utf-8")
    for code in (
        SESSION_STATE_ERROR,
        INVALID_INPUT,
        UNSUPPORTED_OPERATION,
        -32700,
        -32600,
        -32601,
        -32602,
        -32603,
    ):
        assert f"| `{code}` |" in text, code
    for capability in KNOWN_CAPABILITIES:
        assert f"`{capability}`" in text, capability


def _run_options() -> set[str]:
    """Every option of every sub-command, and the pytest plugin's own options."""
    plugin = (ROOT / "conformance" / "pytest_plugin.py").read_text(encoding="utf-8")
    options = set(re.findall(r'addoption\(\s*"(--[a-z-]+)"', plugin))
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                options |= {option for item in command._actions for option in item.option_strings}
            return options
    raise AssertionError("the command line has no sub-commands")


@pytest.mark.parametrize("page", ["adapters.md", "protocol.md", "index.md", "ci.md", "architecture.md"])
def test_run_options_in_the_docs_exist(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    # not options of the kit: an example adapter's own, and pytest's
    used = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", text)) - {"--verbose", "--lf"}
    assert used, page
    assert used <= _run_options()


@pytest.mark.parametrize(
    "page", ["adapters.md", "protocol.md", "index.md", "ci.md", "architecture.md", "performance.md"]
)
def test_relative_links_resolve(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    targets = re.findall(r"\]\(((?:\.\./|[\w-]+/)*[\w.-]+\.[a-z]+)(?:#[^)]*)?\)", text)
    assert targets, page
    missing = [target for target in targets if not (DOCS / target).exists()]
    assert missing == []


def test_kit_defined_ids_cited_in_the_docs_exist() -> None:
    defined = set(
        re.findall(r"^## (KD-[A-Z]+-\d+):", (DOCS / "kit-defined.md").read_text(encoding="utf-8"), re.M)
    )
    for page in ("adapters.md", "protocol.md", "index.md"):
        cited = set(re.findall(r"\bKD-[A-Z]+-\d+\b", (DOCS / page).read_text(encoding="utf-8")))
        assert cited - defined == set(), page


# --- numbers in the docs come from a real run ---------------------------------------------------------


@needs_node
def test_the_adapter_guide_shows_the_numbers_of_a_real_echo_run(echo_run: tuple[RunResult, int]) -> None:
    """docs/adapters.md steps 6 and 8 quote the echo adapter's run: the case count, the total row, every
    summary line and every baseline line must be this run's.  When a case is added, rerun the command
    of step 6 and paste its table and summary (and step 8's counts)."""
    run, _ = echo_run
    s = run.summary
    text = (DOCS / "adapters.md").read_text(encoding="utf-8")
    shown = re.search(r"The example's run today \((\d+) cases", text)
    assert shown is not None
    assert int(shown.group(1)) == s.total
    totals = re.findall(r"^total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", text, re.M)
    assert totals == [(str(s.passed), str(s.failed), str(s.errored), str(s.unsupported), str(s.total))]
    summaries = re.findall(r"^(\d+) passed, (\d+) unsupported, (\d+) failed .*?(\d+) errored", text, re.M)
    assert summaries
    assert set(summaries) == {(str(s.passed), str(s.unsupported), str(s.failed), str(s.errored))}
    known = {int(n) for n in re.findall(r"(\d+) known", text)}
    assert known == {s.failed + s.errored}
    assert f"The {s.passed} passing cases" in text


@needs_node
def test_the_readme_says_what_the_echo_run_shows(echo_run: tuple[RunResult, int]) -> None:
    run, _ = echo_run
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "it passes the session basics, fails the features it lacks on purpose, and no case errors" in text
    assert run.summary.passed > 0
    assert run.summary.failed > 0
    assert run.summary.errored == 0


def test_the_capability_table_matches_the_corpus() -> None:
    """docs/protocol.md lists every capability once, and says "reserved" exactly for those no case needs."""
    text = (DOCS / "protocol.md").read_text(encoding="utf-8")
    section = text.split("## Capabilities", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented: dict[str, str] = {}
    for row in rows:
        names_cell, *_, cases_cell = (cell.strip() for cell in row.strip("|").split("|"))
        for name in re.findall(r"`([a-z-]+)`", names_cell):
            documented[name] = cases_cell
    assert set(documented) == set(KNOWN_CAPABILITIES)
    needed = {capability for case in load_cases() for capability in case.capabilities}
    reserved = {name for name, cell in documented.items() if cell.startswith("reserved")}
    assert reserved == set(KNOWN_CAPABILITIES) - needed


def test_the_ci_recipe_is_a_workflow_that_runs_the_kit_and_keeps_its_reports() -> None:
    from relavium_conformance._data import parse_yaml

    text = (DOCS / "ci.md").read_text(encoding="utf-8")
    workflow = parse_yaml(text.split("```yaml", 1)[1].split("```", 1)[0])
    steps = workflow["jobs"]["conformance"]["steps"]
    runs = [step["run"] for step in steps if "run" in step]
    [kit] = [run for run in runs if run.startswith("relavium-conformance run")]
    assert "--github-summary" in kit
    assert "--junit" in kit
    assert "--json" in kit
    arguments = build_parser().parse_args(shlex.split(kit)[1:])
    assert arguments.github_summary
    uploads = [step for step in steps if str(step.get("uses", "")).startswith("actions/upload-artifact")]
    assert [step.get("if") for step in uploads] == ["always()"]
