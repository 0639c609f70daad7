"""The second set of broken implementations (issue 10, points 3 and 12) is caught over stdio as well.

``test_kit_selftest.py`` runs every broken implementation in-process; these run the newer ones as a
subprocess (``selftest --serve NAME``) too, so a break that only an in-process adapter could see would
show up here.  A clause counts as proven only when a failure is booked on that very clause.
"""

from __future__ import annotations

import asyncio

import pytest

from relavium_conformance._corpus.discovery import load_cases
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.breaks import BrokenImplementation, broken_by_name
from relavium_conformance._selftest.proofs import _statuses, check_broken
from relavium_conformance._selftest.verdicts import BrokenVerdict
from relavium_conformance._wire.adapters import InProcessAdapter

SECOND_SET = tuple(
    broken_by_name(name)
    for name in (
        "tool-round-is-a-turn",
        "cancel-replays-tokens",
        "empty-final-not-committed",
        "policy-change-reseats",
        "abort-emits-cancelled",
        "command-runs-without-hook",
        "command-reaches-the-model",
        "default-cap-hundred",
        "zero-cap-is-zero",
        "cap-counts-requests",
        "max-turns-ignored",
        "aborted-turn-is-free",
        "silent-turn-is-free",
        "latch-forgotten",
        "second-cancel-emits",
        "resume-resets-the-cap",
        "sink-failure-is-free",
        "sink-failure-has-no-terminal",
        "turn-start-failure-keeps-busy",
        "refused-start-uses-a-slot",
        "turn-started-after-cancel",
        "commit-cancel-publishes",
        "aborted-turn-committed",
        "reseat-keeps-the-model",
        "reseat-keeps-the-chain",
        "busy-after-command",
        "usage-of-the-last-request",
        "failed-commit-loses-usage",
        "error-message-names-the-cause",
        "git-commit-ungoverned",
        "tool-arguments-in-the-transcript",
        "trimmed-without-kept-turns",
        "unknown-part-fields-dropped",
        "compaction-on-any-row-ignored",
        "given-state-ignored",
        "export-leaves-out-the-last-turn",
        "export-skips-superseded-turns",
        "export-redacts-keys",
        "store-names-unchecked",
        "store-drops-unknown-fields",
        "store-drops-media-names",
        "store-refuses-media",
        "store-one-error-code",
        "store-drops-byte-size",
        "reconstruct-folds-same-role",
        "reconstruct-empty-terminal-is-absent",
        "reconstruct-reasoning-as-text",
        "reconstruct-preamble-is-terminal",
        "reconstruct-rollback-at-write-time",
        "export-preamble-ends-the-turn",
        "export-text-forgets-markers",
        "export-legacy-text-is-a-node",
        "raw-commit-failure-presented",
        "classified-commit-failure-raised",
        "misplaced-parts-dropped",
        "media-refused",
        "media-names-dropped",
        "export-normalises-next-line",
        "empty-final-forgotten",
        "resume-forgets-empty-finals",
        "resume-keeps-the-policy",
        "final-stop-flattened",
        "node-id-is-the-agent-id",
        "reasoning-joins-the-reply",
        "signature-committed",
        "engaged-at-first-chunk",
        "send-during-a-command",
        "allowlist-matches-loosely",
        "abort-stops-the-command",
        "export-during-a-command",
        "sessions-share-a-counter",
        "events-to-the-first-session",
        "sessions-share-an-id",
        "sessions-share-a-transcript",
        "busy-across-sessions",
        "request-list-shared",
    )
)


def test_each_break_names_one_rule_and_few_clauses() -> None:
    names = [b.name for b in SECOND_SET]
    assert len(names) == len(set(names))
    assert all(1 <= len(b.clauses) <= 2 for b in SECOND_SET)


@pytest.mark.slow
@pytest.mark.parametrize("broken", SECOND_SET, ids=lambda b: b.name)
def test_broken_is_caught_in_process_and_over_stdio(broken: BrokenImplementation) -> None:
    cases = [c for c in load_cases() if set(broken.clauses) & set(c.clauses)]

    async def verdict() -> BrokenVerdict:
        reference = await _statuses(InProcessAdapter("reference", ReferenceImplementation), cases, 10.0)
        return await check_broken(broken, cases, reference, 10.0, stdio=True)

    found = asyncio.run(verdict())
    assert found.caught, found.explanation
    assert found.transports == ("in-process", "stdio")
    assert set(found.proven) == set(broken.clauses)
