"""Spec traceability: split a specification into sentences, fingerprint them, match them to the catalogue.

**What counts as a sentence.**  For a Markdown spec (``agent-session-spec.md``) every sentence of prose
outside code fences is a candidate: paragraphs, list items and the cells of a table (the operation table).
Headings, code fences (the Mermaid diagram, the TypeScript interfaces), table header and separator rows are
skipped.  A table row contributes the sentences of its cells after the first; the first cell (the
operation name) becomes part of the row's *section* (``Lifecycle > abort``).  For the TypeScript
declaration file of the store contract (``session-store.d.ts``) the sentences are those of its comments
(``/** ... */`` and ``//``), and the section is the declaration the comment documents
(``SessionStore.register`` or the top-level name).  Every such sentence is "normative" for triage
purposes: the catalogue cites it either from a rule-bearing clause or from an ``informative`` clause, so
that nothing is left untriaged.

**Normalisation and fingerprint.**  A sentence is normalised by dropping Markdown emphasis and code marks
(``*``, backticks), reducing links to their text, lowercasing and collapsing whitespace.  Its fingerprint
is the first 16 hex digits of the SHA-256 of that normalised text.

**Locator.**  Each sentence a clause cites is stored as ``{anchor, fingerprint}`` under the clause's
``section``.  The anchor is a short run (at most six words) of the normalised sentence's own distinctive
words; it is what survives an edit well enough to tell a *changed* sentence from a *removed* one.  Matching
is by fingerprint first, wherever the sentence now sits (so reordering or renaming a section changes
nothing).  A cited sentence whose fingerprint is gone is looked for again: a sentence that still contains
the anchor (the clause's own section first, then the whole document), else the sentence of the same section
that no fingerprint claims and that shares most of the anchor's words (at least half, and two).  Found: the
clause is *changed* (the prose was edited; re-review the clause and its cases).  Not found: *removed*.  A
sentence no clause claims, by fingerprint or by this search, is *untriaged*: new prose that needs a clause.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relavium_conformance._corpus.catalogue import Catalogue, Clause, load_catalogue
from relavium_conformance._errors import KitUsageError

__all__ = [
    "CoverageReport",
    "SpecSentence",
    "cited_clause_ids",
    "coverage_report",
    "default_case_roots",
    "excerpt",
    "fingerprint",
    "normalise",
    "parse_spec",
    "parse_spec_file",
    "parse_spec_markdown",
    "parse_spec_typescript",
    "report_for_spec",
    "spec_kind",
]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
# A sentence ends at ``.``, ``!`` or ``?`` (perhaps closed by a bracket or quote) followed by white space and
# a letter, a digit or an opening mark; an abbreviation such as "e.g." does not end one.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][)\"']))\s+(?=[A-Za-z0-9`\"'(\[*])")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def normalise(text: str) -> str:
    """The canonical form of a sentence: no emphasis or code marks, links as text, lowercase, one space."""
    text = _LINK.sub(r"\1", text)
    text = text.replace("`", "").replace("*", "")
    return " ".join(text.lower().split())


def fingerprint(text: str) -> str:
    """First 16 hex digits of the SHA-256 of the normalised sentence."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class SpecSentence:
    """One sentence of a specification, where it sits, and its fingerprint."""

    section: str
    index: int
    text: str

    @property
    def normalised(self) -> str:
        return normalise(self.text)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.text)


def _split_sentences(block: str) -> list[str]:
    block = " ".join(block.split())
    if not block:
        return []
    parts: list[str] = []
    for part in _SENTENCE_END.split(block):
        part = part.strip()
        if not part:
            continue
        glued = parts and (
            parts[-1].lower().endswith(_ABBREVIATIONS)
            or (parts[-1].endswith(("!", "?")) and part[0].islower())  # "a ! never races": no end
        )
        if glued:
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
    return parts


def _clean_section(title: str) -> str:
    return " ".join(_LINK.sub(r"\1", title).replace("`", "").replace("*", "").split())


def _table_cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return [cell.strip() for cell in inner.split("|")]


def parse_spec_markdown(text: str) -> list[SpecSentence]:
    """Every candidate sentence of a Markdown specification, in document order."""
    sentences: list[SpecSentence] = []
    section = ""
    blocks: list[tuple[str, str]] = []  # (section, block text)
    paragraph: list[str] = []
    in_fence = False
    in_table = False

    def flush() -> None:
        if paragraph:
            blocks.append((section, " ".join(paragraph)))
            paragraph.clear()

    columns = 0
    for line in text.splitlines():
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            section = _clean_section(heading.group(2))
            in_table = False
            continue
        stripped = line.strip()
        if not stripped:
            flush()
            in_table = False
            continue
        if stripped.startswith("|"):
            flush()
            if _TABLE_SEPARATOR.match(stripped):
                in_table = True  # the row above was the header: it is not prose
                continue
            if not in_table:
                columns = len(_table_cells(stripped))
                continue  # header row
            cells = _table_cells(stripped)
            if columns and len(cells) > columns:  # an unescaped pipe inside the last cell
                cells = [*cells[: columns - 1], " | ".join(cells[columns - 1 :])]
            row = f"{section} > {_clean_section(cells[0])}"
            blocks.extend((row, cell) for cell in cells[1:] if cell)
            continue
        if _LIST_ITEM.match(line):
            flush()
            paragraph.append(_LIST_ITEM.sub("", line, count=1))
            continue
        paragraph.append(stripped)
    flush()
    for block_section, block in blocks:
        for sentence in _split_sentences(block):
            sentences.append(SpecSentence(block_section, len(sentences), sentence))
    return sentences


_DECLARATION = re.compile(
    r"^\s*(?:export\s+)?(?:declare\s+)?(?:(?:interface|type|class|function|const|enum)\s+)?"
    r"(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*[(:<={]"
)
_TOP_LEVEL = re.compile(
    r"^(?:export\s+)?(?:declare\s+)?(?:interface|type|class|function|const|enum)\s+([\w$]+)"
)


def parse_spec_typescript(text: str) -> list[SpecSentence]:
    """Every sentence of the comments of a TypeScript declaration file, sectioned by what they document."""
    comments: list[tuple[list[str], int]] = []  # comment lines, index of the line after the comment
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("/*"):
            body: list[str] = []
            while True:
                part = lines[i].strip()
                ends = part.endswith("*/")
                part = part.removeprefix("/**").removeprefix("/*").removesuffix("*/").strip()
                part = part.removeprefix("*").strip()
                body.append(part)
                i += 1
                if ends or i >= len(lines):
                    break
            comments.append((body, i))
            continue
        if stripped.startswith("//"):
            body = []
            while i < len(lines) and lines[i].strip().startswith("//"):
                body.append(lines[i].strip().removeprefix("//").strip())
                i += 1
            comments.append((body, i))
            continue
        i += 1

    owners = _declaration_owners(lines)
    sentences: list[SpecSentence] = []
    for body, after in comments:
        section = owners[after] if after < len(owners) else ""
        # blank comment lines and list markers separate blocks, like Markdown paragraphs
        block: list[str] = []
        blocks: list[str] = []
        for part in body:
            if not part or _LIST_ITEM.match(part):
                if block:
                    blocks.append(" ".join(block))
                block = [_LIST_ITEM.sub("", part, count=1)] if part else []
                continue
            block.append(part)
        if block:
            blocks.append(" ".join(block))
        for chunk in blocks:
            for sentence in _split_sentences(chunk):
                sentences.append(SpecSentence(section, len(sentences), sentence))
    return sentences


def _declaration_owners(lines: Sequence[str]) -> list[str]:
    """For each line, the name of the declaration a comment ending just before it documents."""
    owners: list[str] = []
    container = ""
    depth = 0
    for line in lines:
        stripped = line.strip()
        name = ""
        if stripped.startswith(("export {", "export type {", "import ")):
            owners.append("module")  # re-exports and imports document nothing
            continue
        top = _TOP_LEVEL.match(stripped)
        if depth == 0 and top:
            name = top.group(1)
        elif not stripped.startswith(("/", "*")):
            member = _DECLARATION.match(stripped)
            if member:
                name = f"{container}.{member.group(1)}" if depth > 0 and container else member.group(1)
        owners.append(name)
        if depth == 0 and top:
            container = top.group(1)
        if not stripped.startswith(("/", "*")):
            depth += stripped.count("{") - stripped.count("}")
            depth = max(depth, 0)
            if depth == 0 and not top:
                container = ""
    # a comment documents the next line that declares something
    resolved = [""] * len(owners)
    upcoming = ""
    for index in range(len(owners) - 1, -1, -1):
        if owners[index]:
            upcoming = owners[index]
        resolved[index] = upcoming
    return resolved


def parse_spec(text: str, *, kind: str) -> list[SpecSentence]:
    """Parse ``text`` as ``kind`` (``markdown`` or ``typescript``)."""
    if kind == "markdown":
        return parse_spec_markdown(text)
    if kind == "typescript":
        return parse_spec_typescript(text)
    raise KitUsageError(f"unknown spec kind {kind!r} (markdown or typescript)")


def spec_kind(path: Path) -> str:
    return "typescript" if path.suffix == ".ts" else "markdown"


def parse_spec_file(path: Path) -> list[SpecSentence]:
    return parse_spec(path.read_text(encoding="utf-8"), kind=spec_kind(path))


# --------------------------------------------------------------------------------------------- matching


@dataclass
class CoverageReport:
    """What a specification's current prose says about the catalogue."""

    spec: str
    clause_count: int
    by_status: dict[str, int]
    tested: list[str]
    untested: list[str]
    removed: list[str]
    sentences: int
    #: for each changed clause, where its sentence (or sentences) now stand
    changed_sentences: dict[str, list[SpecSentence]] = field(default_factory=dict)
    untriaged_sentences: list[SpecSentence] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return sorted(self.changed_sentences)

    @property
    def untriaged(self) -> list[str]:
        return [excerpt(s) for s in self.untriaged_sentences]

    @property
    def changed_detail(self) -> dict[str, list[str]]:
        return {cid: [excerpt(s) for s in found] for cid, found in sorted(self.changed_sentences.items())}

    @property
    def clean(self) -> bool:
        return not (self.changed_sentences or self.untriaged_sentences or self.removed)

    def to_json(self) -> dict[str, object]:
        """The ``--json`` document; ``*_sentences`` carry the new fingerprints a catalogue update needs."""
        return {
            "spec": self.spec,
            "clauses": self.clause_count,
            "by_status": dict(sorted(self.by_status.items())),
            "sentences": self.sentences,
            "tested": self.tested,
            "untested": self.untested,
            "changed": self.changed,
            "untriaged": self.untriaged,
            "removed": self.removed,
            "changed_sentences": {
                cid: [_sentence_json(s) for s in found]
                for cid, found in sorted(self.changed_sentences.items())
            },
            "untriaged_sentences": [_sentence_json(s) for s in self.untriaged_sentences],
        }


def _sentence_json(sentence: SpecSentence) -> dict[str, str]:
    return {"section": sentence.section, "excerpt": excerpt(sentence), "fingerprint": sentence.fingerprint}


_EXCERPT_WORDS = 8


def excerpt(sentence: SpecSentence) -> str:
    """A short excerpt naming an untriaged sentence (the section and its first few words)."""
    words = sentence.text.split()
    head = " ".join(words[:_EXCERPT_WORDS]) + (" …" if len(words) > _EXCERPT_WORDS else "")
    return f"[{sentence.section}] {head}"


def coverage_report(
    sentences: Sequence[SpecSentence],
    clauses: Sequence[Clause],
    *,
    cited: Iterable[str] = (),
    spec_name: str = "",
) -> CoverageReport:
    """Match the current sentences of a spec against the clauses that cite them."""
    by_fp: dict[str, list[SpecSentence]] = {}
    for sentence in sentences:
        by_fp.setdefault(sentence.fingerprint, []).append(sentence)
    claimed: set[int] = set()
    # Cited sentences whose fingerprint is gone, grouped by that fingerprint: one lost sentence may be cited
    # by several clauses, and it is found again (or not) once for all of them.
    lost: dict[str, list[tuple[Clause, str]]] = {}
    for clause in clauses:
        for ref in clause.sentences:
            found = by_fp.get(ref.fingerprint)
            if found:
                claimed.update(s.index for s in found)
            else:
                lost.setdefault(ref.fingerprint, []).append((clause, normalise(ref.anchor)))
    changed: dict[str, list[SpecSentence]] = {}
    removed: set[str] = set()
    for refs in lost.values():
        hit = _relocate(refs, sentences, claimed)
        for clause, _anchor in refs:
            if hit is None:
                removed.add(clause.id)
            else:
                changed.setdefault(clause.id, []).append(hit)
        if hit is not None:
            claimed.add(hit.index)
    cited_set = set(cited)
    by_status: dict[str, int] = {}
    for clause in clauses:
        by_status[clause.status] = by_status.get(clause.status, 0) + 1
    testable = [c.id for c in clauses if c.status == "testable"]
    return CoverageReport(
        spec=spec_name,
        clause_count=len(clauses),
        by_status=by_status,
        tested=[cid for cid in testable if cid in cited_set],
        untested=[cid for cid in testable if cid not in cited_set],
        removed=sorted(removed - set(changed)),
        sentences=len(sentences),
        changed_sentences=changed,
        untriaged_sentences=[s for s in sentences if s.index not in claimed],
    )


_WORD = re.compile(r"[a-z0-9_]+")
_FUZZY_SHARE = 0.5  # at least half of an anchor's words ...
_FUZZY_MIN = 2  # ... and at least two of them


def _relocate(
    refs: Sequence[tuple[Clause, str]], sentences: Sequence[SpecSentence], claimed: set[int]
) -> SpecSentence | None:
    """Where a sentence whose fingerprint is gone now stands, if anywhere.

    First a sentence that still contains one of the anchors (its own section first, then anywhere, a
    sentence no fingerprint claims first); failing that, the unclaimed sentence of the same section that
    shares the most anchor words (at least half of them, and two).  ``None``: the sentence was removed.
    """
    anchors = [anchor for _clause, anchor in refs]
    sections = {clause.section for clause, _anchor in refs}
    exact = [s for s in sentences if any(anchor in s.normalised for anchor in anchors)]
    if exact:
        exact.sort(key=lambda s: (s.section not in sections, s.index in claimed, s.index))
        return exact[0]
    best: tuple[float, int] = (0.0, 0)
    hit: SpecSentence | None = None
    for sentence in sentences:
        if sentence.index in claimed or sentence.section not in sections:
            continue
        words = set(_WORD.findall(sentence.normalised))
        for anchor in anchors:
            wanted = _WORD.findall(anchor)
            common = sum(1 for word in wanted if word in words)
            score = (common / len(wanted) if wanted else 0.0, common)
            if common >= _FUZZY_MIN and score[0] >= _FUZZY_SHARE and score > best:
                best, hit = score, sentence
    return hit


# --------------------------------------------------------------------------------------------- citations

_ID = re.compile(r"\b(?:AS|SS)-[A-Z]+-\d{3}\b")
_MARK = re.compile(r"mark\.clauses\(([^)]*)\)", re.S)


def _walk_clauses_fields(node: object, found: set[str]) -> None:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "clauses" and isinstance(value, list):
                found.update(str(item) for item in value)
            else:
                _walk_clauses_fields(value, found)
    elif isinstance(node, list):
        for item in node:
            _walk_clauses_fields(item, found)


_DOCUMENT_MARK = re.compile(rb"^(?:---|\.\.\.)(?:\s|$)", re.M)


def _documents(path: Path, yaml: Any) -> list[Any]:
    """The YAML documents of ``path``.  A file naming no ``clauses`` cites none and is not parsed; a
    one-document file is read through the kit's parse cache (:func:`read_yaml`), as the corpus is."""
    from relavium_conformance._data import read_yaml

    raw = path.read_bytes()
    if b"clauses" not in raw:
        return []
    if _DOCUMENT_MARK.search(raw) is None:
        with contextlib.suppress(KitUsageError):  # unreadable: the parse below names the fault
            return [read_yaml(path)]
    try:
        return list(yaml.load_all(raw.decode("utf-8")))
    except Exception as exc:  # ruamel raises many unrelated types for bad input
        raise KitUsageError(f"{path.name}: not readable YAML ({type(exc).__name__})") from None


def cited_clause_ids(roots: Iterable[Path], *, skip: Iterable[Path] = ()) -> set[str]:
    """Clause ids cited by cases: ``clauses:`` fields of YAML/JSON data and ``clauses`` pytest marks."""
    from ruamel.yaml import YAML

    skipped = [p.resolve() for p in skip]
    yaml = YAML(typ="safe", pure=True)
    found: set[str] = set()
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            resolved = path.resolve()
            if not path.is_file() or any(resolved.is_relative_to(s) for s in skipped):
                continue
            if path.suffix in {".yaml", ".yml", ".json"}:
                for document in _documents(path, yaml):
                    _walk_clauses_fields(document, found)
            elif path.suffix == ".py":
                for args in _MARK.findall(path.read_text(encoding="utf-8")):
                    found.update(_ID.findall(args))
    return found


def default_case_roots() -> tuple[list[Path], list[Path]]:
    """Where cases live: the kit's fixtures (less the catalogue) and, in a checkout, ``tests/``."""
    from relavium_conformance._data import fixtures_dir

    fixtures = fixtures_dir()
    roots = [fixtures]
    checkout_tests = Path(__file__).resolve().parent.parent / "tests"
    if checkout_tests.is_dir():
        roots.append(checkout_tests)
    return roots, [fixtures / "clauses"]


def report_for_spec(path: Path, catalogue: Catalogue | None = None) -> CoverageReport:
    """The coverage report of the spec at ``path`` against the catalogue made for it."""
    catalogue = catalogue or load_catalogue()
    kind = spec_kind(path)
    prefix = "SS" if kind == "typescript" else "AS"
    clauses = [c for c in catalogue.clauses if c.id.startswith(prefix + "-")]
    roots, skip = default_case_roots()
    return coverage_report(
        parse_spec_file(path), clauses, cited=cited_clause_ids(roots, skip=skip), spec_name=path.name
    )
