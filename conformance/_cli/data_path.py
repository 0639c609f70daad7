"""``relavium-conformance data-path``: where the installed kit keeps its language-neutral data."""

from __future__ import annotations

import argparse
import json
from typing import Any

from relavium_conformance._data import corpus_json_path, examples_dir, fixtures_dir, schemas_dir

__all__ = ["data_path_command", "register"]

_KINDS = ("fixtures", "schemas", "corpus-json", "examples")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "data-path",
        help="print where the kit's fixtures, schemas, JSON corpus and example adapter are",
        description=(
            "Print the folders of the installed kit's data, for readers in other languages: the YAML "
            "fixtures (the source), the JSON Schemas, the JSON copy of the corpus (corpus.json, present "
            "in a wheel; absent in a checkout) and the example adapters. One kind prints one path."
        ),
    )
    parser.add_argument("kind", nargs="?", choices=_KINDS, help="print only this path")
    parser.add_argument("--json", action="store_true", help="print every path as one JSON object")
    parser.set_defaults(handler=data_path_command)


def _paths() -> dict[str, str | None]:
    corpus = corpus_json_path()
    examples = examples_dir()
    return {
        "fixtures": str(fixtures_dir()),
        "schemas": str(schemas_dir()),
        "corpus-json": str(corpus) if corpus is not None else None,
        "examples": str(examples) if examples is not None else None,
    }


def data_path_command(args: argparse.Namespace) -> int:
    paths = _paths()
    if args.kind:
        value = paths[args.kind]
        if value is None:
            print(f"relavium-conformance: no {args.kind} in this installation")
            return 1
        print(value)
    elif args.json:
        print(json.dumps(paths, indent=2))
    else:
        for kind, value in paths.items():
            print(f"{kind:12} {value if value is not None else '(not in this installation)'}")
    return 0
