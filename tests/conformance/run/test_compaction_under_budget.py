"""Every compaction case still passes with a real, admitting budget and an acknowledging usage writer.

Each case of ``fixtures/transcripts/compaction/`` runs again with the host's cost governor and usage
writer attached (``deps.admission`` and ``deps.usageWriter``; the kit admits every request and acknowledges
every write unless the case scripts otherwise).  The kit's generic accounting checks then run on every
turn request and every summary pass: admitted exactly as sent (AS-FIN-003), pending acknowledged before
egress (AS-USE-005), cost published only after the resolution (AS-USE-009).  Snapshots are not compared:
the observation now also holds the admissions and usage records.  In-process and over stdio.
"""

from __future__ import annotations

from typing import Any

import pytest

from relavium_conformance._connect import resolve_adapter
from relavium_conformance._corpus.cases import Case
from relavium_conformance._corpus.discovery import load_transcripts
from relavium_conformance._report.results import CaseStatus
from relavium_conformance._run.runner import run_cases_sync


def _under_budget(case: Case) -> Case:
    deps: dict[str, Any] = {**(case.setup.deps or {}), "admission": True, "usageWriter": True}
    return case.model_copy(update={"setup": case.setup.model_copy(update={"deps": deps})})


COMPACTION = tuple(_under_budget(c) for c in load_transcripts() if c.id.startswith("compaction/"))


@pytest.mark.parametrize("adapter", ["reference", "reference-stdio"])
def test_compaction_cases_pass_under_an_admitting_budget(adapter: str) -> None:
    assert len(COMPACTION) >= 10
    outcome = run_cases_sync(resolve_adapter(adapter), COMPACTION, snapshots=False)
    failed = [
        (r.id, [d.message for d in r.differences][:3])
        for r in outcome.run.cases
        if r.status is not CaseStatus.PASSED
    ]
    assert failed == []
    for case in COMPACTION:
        observed = outcome.observations[case.id]
        egress = len(observed.provider_requests) + len(observed.summary_requests)
        admitted = [a for a in observed.admissions if a["decision"] == "admitted"]
        assert len(admitted) >= egress, case.id  # every request that went out was asked and admitted
        pending = [u for u in observed.usage if u["phase"] == "pending"]
        assert len(pending) == len(admitted) - sum(a["released"] for a in admitted), case.id
