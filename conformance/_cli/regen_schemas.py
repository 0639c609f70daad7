"""``relavium-conformance regen-schemas``: the one writer of the files generated from the models.

Its sources: the engine's boundary models and its workflow document (``schemas/*.schema.json``) and its
lifecycle table (``docs/lifecycle.md``), both through :mod:`relavium_conformance._reference.engine_schemas`;
the kit's case format (``schemas/transcript.schema.json``); and the protocol's method table
(``schemas/protocol/methods/*.schema.json`` and the table of ``docs/protocol.md``).  ``--check`` writes
nothing and exits 1 when a committed file differs from what its model generates, or when a method
schema no longer has a method.  It works on a checkout: ``--root`` names one (by default the checkout
the kit runs from).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from relavium_conformance._data import schemas_dir

__all__ = ["generated_texts", "register", "stale_files"]

_METHODS = Path("schemas", "protocol", "methods")
_PROTOCOL_PAGE = Path("docs", "protocol.md")


def _render(schema: dict[str, Any]) -> str:
    from relavium_reference import strict_clean

    return json.dumps(strict_clean(schema), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generated_texts(root: Path) -> dict[Path, str]:
    """Path (relative to the checkout ``root``) -> the text its generator writes today."""
    from relavium_conformance._corpus.cases import transcript_schema
    from relavium_conformance._reference.engine_schemas import engine_schema_texts, lifecycle_page
    from relavium_conformance._wire.protocol import protocol_schemas, with_method_table

    texts = {Path("schemas", name): text for name, text in engine_schema_texts().items()}
    texts[Path("schemas", "transcript.schema.json")] = _render(transcript_schema())
    texts |= {Path("schemas", name): _render(schema) for name, schema in protocol_schemas().items()}
    page = (root / _PROTOCOL_PAGE).read_text(encoding="utf-8")
    texts[_PROTOCOL_PAGE] = with_method_table(page)
    texts[Path("docs", "lifecycle.md")] = lifecycle_page()
    return texts


def stale_files(root: Path) -> tuple[dict[Path, str], list[Path]]:
    """(files whose committed text differs from the generated one -> that text, method schemas of no
    method), relative to ``root``."""
    texts = generated_texts(root)
    changed = {
        path: text
        for path, text in texts.items()
        if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text
    }
    orphans = sorted(
        path.relative_to(root)
        for path in (root / _METHODS).glob("*.schema.json")
        if path.relative_to(root) not in texts
    )
    return changed, orphans


def _default_root() -> Path:
    return schemas_dir().parent


def _main(args: argparse.Namespace) -> int:
    root: Path = args.root or _default_root()
    if not (root / _PROTOCOL_PAGE).is_file() or not (root / "schemas").is_dir():
        print(
            f"relavium-conformance regen-schemas: {root} is not a checkout (no schemas/ and "
            f"{_PROTOCOL_PAGE.as_posix()}); use --root",
            file=sys.stderr,
        )
        return 2
    changed, orphans = stale_files(root)
    if args.check:
        for path in changed:
            print(f"stale    {path.as_posix()}")
        for path in orphans:
            print(f"orphan   {path.as_posix()}")
        print(f"{len(changed)} stale, {len(orphans)} orphaned" if changed or orphans else "up to date")
        return 1 if changed or orphans else 0
    for path, text in changed.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        print(f"wrote    {path.as_posix()}")
    for path in orphans:
        (root / path).unlink()
        print(f"removed  {path.as_posix()}")
    print(f"{len(changed)} written, {len(orphans)} removed")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "regen-schemas",
        help="rewrite the generated JSON Schemas, the method table and the lifecycle table",
        description=(
            "Write every generated file of a checkout from its models: the engine's schemas and the "
            "workflow schema, the case format's schema, one schema per protocol method (a method schema "
            "of no method is removed), the method table of docs/protocol.md and docs/lifecycle.md. "
            "The only writer of those files. With --check, write nothing: exit 0 when every file is up "
            "to date, 1 when one is not."
        ),
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    parser.add_argument(
        "--root", type=Path, metavar="DIR", help="the checkout to regenerate (default: the kit's own)"
    )
    parser.set_defaults(handler=_main)
