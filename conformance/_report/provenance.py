"""What a run ran: the spec revision and the corpus identity, as hashes a reader can compare.

The spec revision hashes the catalogue (each clause's id, status and the fingerprints of the sentences
it is drawn from), so it changes exactly when the rules the kit checks change.  The corpus hash covers
every file under ``fixtures/`` (path and bytes), so it changes with any case, vector, script or snapshot.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache

from relavium_conformance._corpus.catalogue import load_catalogue
from relavium_conformance._data import fixtures_dir
from relavium_conformance._report.results import CorpusInfo, KitInfo, RunContext, ShardInfo
from relavium_conformance._wire.jsonrpc import PROTOCOL_VERSION

__all__ = ["corpus_identity", "run_context", "spec_revision"]


@cache
def spec_revision() -> str:
    digest = hashlib.sha256()
    for clause in load_catalogue().clauses:
        fingerprints = " ".join(sentence.fingerprint for sentence in clause.sentences)
        digest.update(f"{clause.id} {clause.status} {fingerprints}\n".encode())
    return "sha256:" + digest.hexdigest()


@cache
def corpus_identity() -> CorpusInfo:
    root = fixtures_dir()
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return CorpusInfo(version=KitInfo.current().version, content_hash="sha256:" + digest.hexdigest())


def run_context(adapter: str, selection: Sequence[str] = (), shard: ShardInfo | None = None) -> RunContext:
    """The context of a run of the kit's own corpus through ``adapter`` with ``selection`` (and the
    shard of it the run ran, when it ran one)."""
    return RunContext(
        shard=shard,
        adapter=adapter,
        selection=tuple(selection),
        spec_revision=spec_revision(),
        corpus=corpus_identity(),
        protocol_version=PROTOCOL_VERSION,
    )
