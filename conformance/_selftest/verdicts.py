"""The verdict on one broken implementation or broken store: shared by the session profile's selftest
(:mod:`relavium_conformance._selftest.proofs`) and the store profile's
(:mod:`relavium_conformance._selftest.stores.proofs`), so both feed ``proven_by`` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BrokenVerdict"]


@dataclass(frozen=True)
class BrokenVerdict:
    name: str
    rule: str
    clauses: tuple[str, ...]
    cases: tuple[str, ...]
    failed: tuple[str, ...]
    reference_failed: tuple[str, ...]
    proven: tuple[str, ...] = ()  # the broken clauses on which some failure was booked
    transports: tuple[str, ...] = ("in-process",)  # where it was caught (every one it was run on)
    # citing cases left unrun on some transport: every broken clause already had a proving failure there
    # (``failed`` then lists the failures among the cases run; ``caught`` and ``proven`` are unchanged)
    not_run: tuple[str, ...] = ()

    @property
    def caught(self) -> bool:
        return bool(self.cases) and bool(self.failed) and not self.reference_failed and bool(self.proven)

    @property
    def explanation(self) -> str:
        if not self.cases:
            return "no case cites " + ", ".join(self.clauses)
        if self.reference_failed:
            return "the reference fails these cases too: " + ", ".join(self.reference_failed)
        if not self.failed:
            return f"all {len(self.cases)} citing cases still pass"
        if not self.proven:
            return "its cases fail, but on other clauses than " + ", ".join(self.clauses)
        if self.not_run:
            ran = len(self.cases) - len(self.not_run)
            return (
                f"{len(self.failed)} of the {ran} citing cases run fail ({len(self.not_run)} more not run: "
                "every clause it breaks already had a proving failure): " + ", ".join(self.failed)
            )
        return f"{len(self.failed)} of {len(self.cases)} citing cases fail: " + ", ".join(self.failed)
