"""The ``relavium-conformance`` command line: a thin dispatcher over sub-command modules.

Each sub-command lives in its own module exposing ``register(subparsers)``; the modules are imported
when the command line is parsed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

# The module of each sub-command, in the order the help lists them.
_SUBCOMMANDS: tuple[str, ...] = (
    "relavium_conformance._cli.run",
    "relavium_conformance._cli.report",
    "relavium_conformance._cli.fuzz",
    "relavium_conformance._cli.interop",
    "relavium_conformance._cli.selftest",
    "relavium_conformance._cli.coverage",
    "relavium_conformance._cli.snapshots",
    "relavium_conformance._cli.data_path",
    "relavium_conformance._reference.stdio_server",
    "relavium_conformance._reference.export_command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relavium-conformance",
        description="Conformance kit and reference engine for the Relavium Agent Session Specification.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in _SUBCOMMANDS:
        # Every sub-command ships with the kit: a missing one is a packaging bug, so it fails loudly.
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = args.handler
    code: int = handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
