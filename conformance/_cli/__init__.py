"""The ``relavium-conformance`` command line: a thin dispatcher over sub-command modules.

Each sub-command lives in its own module exposing ``register(subparsers)``; the modules are imported
when the command line is parsed: only the named sub-command's when the command line names one (a
``stdio-server`` or a ``run`` imports what it needs, not every other command's), all of them for the
top-level help, ``--version`` or an unknown command (whose error suggests the known ones).

The console script and ``python -m relavium_conformance`` call :func:`entry`: :func:`main`, then an exit
that skips the interpreter's own teardown (freeing every module, model and cached case: 40-70 ms of a
run here) once every exit handler has run, the output is flushed and no other thread is left; anything
else (a thread still running, an output that cannot be flushed) exits the ordinary way.

Lives here: this dispatcher and one module per sub-command (``run.py``, ``run_cases.py``,
``store_profile.py``, ``selftest.py``, ``fuzz.py``, ``fuzz_store.py``, ``interop.py``, ``report.py``,
``coverage.py``, ``data_path.py``, ``regen_schemas.py``, ``snapshots.py``), the case selection the flags
ask for (``selection.py``) and what every sub-command shares (``_common.py``).

Must not live here: what a sub-command does once its flags are read (running, judging, reporting,
proving the kit bites: the rooms below), and any engine internal (the reference's ``stdio-server`` and
``export`` are reached through ``_reference/``).

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference``, ``_run``, ``_store``, ``_selftest``, ``_connect`` (every room below it, the top room
but for the package's own face; tests/test_layering.py holds the order), and the engine's public package.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from relavium_conformance._cli._common import PROG, KitArgumentParser, VersionAction, error_line
from relavium_conformance._report.exit_status import ExitCode

__all__ = ["entry", "main"]

# The module of each sub-command, in the order the help lists them.
_SUBCOMMANDS: tuple[str, ...] = (
    "relavium_conformance._cli.run",
    "relavium_conformance._cli.report",
    "relavium_conformance._cli.fuzz",
    "relavium_conformance._cli.interop",
    "relavium_conformance._cli.selftest",
    "relavium_conformance._cli.coverage",
    "relavium_conformance._cli.snapshots",
    "relavium_conformance._cli.regen_schemas",
    "relavium_conformance._cli.data_path",
    "relavium_conformance._reference.stdio_server",
    "relavium_conformance._reference.export_command",
)

# The module registering each sub-command name (tests/conformance/cli/test_cli_misuse.py checks it against
# what the modules register).
COMMAND_MODULES: dict[str, str] = {
    "run": "relavium_conformance._cli.run",
    "report": "relavium_conformance._cli.report",
    "fuzz": "relavium_conformance._cli.fuzz",
    "interop": "relavium_conformance._cli.interop",
    "selftest": "relavium_conformance._cli.selftest",
    "spec-coverage": "relavium_conformance._cli.coverage",
    "regen-snapshots": "relavium_conformance._cli.snapshots",
    "regen-schemas": "relavium_conformance._cli.regen_schemas",
    "data-path": "relavium_conformance._cli.data_path",
    "stdio-server": "relavium_conformance._reference.stdio_server",
    "export": "relavium_conformance._reference.export_command",
}


def build_parser(command: str | None = None) -> KitArgumentParser:
    """The command line's parser: every sub-command, or only ``command`` when it names one."""
    parser = KitArgumentParser(
        prog=PROG,
        description="Conformance kit and reference engine for the Relavium Agent Session Specification.",
    )
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=KitArgumentParser
    )
    modules = (COMMAND_MODULES[command],) if command in COMMAND_MODULES else _SUBCOMMANDS
    for module_name in modules:
        # Every sub-command ships with the kit: a missing one is a packaging bug, so it fails loudly.
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(next((word for word in words if not word.startswith("-")), None))
    args, extras = parser.parse_known_args(words)
    if extras:  # reported by the sub-command's own parser, with its usage and a suggestion
        sub = _subparser(parser, args.command)
        (sub or parser).unrecognized(extras)
    handler = args.handler
    try:
        code: int = handler(args)
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside a run: stop at once, one line
        error_line(args.command, "interrupted")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # the reader of our output went away (| head): nothing more to say
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return int(ExitCode.OK)
    return code


def entry() -> NoReturn:
    """The command line as a program: :func:`main`, then the exit (see the module's docstring)."""
    code = main()
    import atexit

    run_handlers = getattr(atexit, "_run_exitfuncs", None)  # (CPython's; elsewhere: the ordinary exit)
    threading = sys.modules.get("threading")  # (not imported: no thread of its can have been started)
    if run_handlers is not None and (threading is None or threading.active_count() == 1):
        run_handlers()  # the kit's caches are written here, as at any exit; they run once
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:  # (None: that descriptor was closed when Python started)
                    stream.flush()
        except (OSError, ValueError):
            pass  # the ordinary exit reports it as Python does
        else:
            os._exit(code)
    sys.exit(code)


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> KitArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            sub = action.choices[command]
            return sub if isinstance(sub, KitArgumentParser) else None
    return None


if __name__ == "__main__":
    sys.exit(main())
