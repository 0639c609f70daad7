"""What every sub-command shares: one error style, one-line usage errors, "did you mean".

Every message the command line prints about a misuse has the form
``relavium-conformance COMMAND: error: WHAT`` on one line and exits 2 (:data:`EXIT_USAGE`).  An unknown
option or sub-command names the closest known one.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from relavium_conformance._errors import KitUsageError
from relavium_conformance._report.exit_status import ExitCode

__all__ = [
    "EXIT_USAGE",
    "PROG",
    "KitArgumentParser",
    "VersionAction",
    "add_report_options",
    "check_output_path",
    "check_readable_file",
    "error_line",
    "output_problems",
    "positive_count",
    "positive_seconds",
    "run_guarded",
    "suggest",
]

PROG = "relavium-conformance"
EXIT_USAGE = 2

_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")


def error_line(command: str | None, message: str, stream: TextIO | None = None) -> None:
    """Print the one error line of the kit's command line."""
    prog = PROG if not command else f"{PROG} {command}"
    flat = " ".join(message.split())
    print(f"{prog}: error: {flat}", file=stream if stream is not None else sys.stderr)


def suggest(given: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``known``, or nothing."""
    import difflib  # (only a misuse needs it)

    close = difflib.get_close_matches(given, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _terminal_columns() -> int:
    """The columns ``shutil.get_terminal_size()`` reports (``COLUMNS`` when a positive number, else the
    terminal of ``sys.__stdout__``, else 80), without importing ``shutil`` (which imports ``bz2`` and
    ``lzma``): argparse asks for them each time it makes a formatter, once per ``add_argument``."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:  # (sys.__stdout__ is None when Python started without a stdout: AttributeError, as in shutil)
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _KitHelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, given the width argparse would compute (:func:`_terminal_columns`)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        width = _terminal_columns() - 2 if width is None else width  # (the margin argparse leaves)
        super().__init__(prog, indent_increment, max_help_position, width)


class KitArgumentParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line in the kit's style, with a suggestion."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _KitHelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        match = _INVALID_CHOICE.search(message)
        if match:
            choices = re.findall(r"'([^']*)'", match.group("choices"))
            message = (
                f"{message.split(':', 1)[0]}: unknown choice {match.group('given')!r}"
                f"{suggest(match.group('given'), choices)}; choose from {', '.join(choices)}"
            )
        command = self.prog.removeprefix(PROG).strip()
        error_line(command, f"{message} (see --help)")
        sys.exit(EXIT_USAGE)

    def unrecognized(self, extras: list[str]) -> NoReturn:
        """Refuse arguments this (sub-)parser does not know, naming the closest option."""
        options = [o for action in self._actions for o in action.option_strings]
        hints = [suggest(extra.split("=", 1)[0], options) for extra in extras if extra.startswith("-")]
        hint = next((h for h in hints if h), "")
        self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


class VersionAction(argparse.Action):
    """``--version``: print the kit, corpus and protocol versions on one line (never wrapped) and exit."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="print the kit, corpus and protocol versions and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from relavium_conformance._corpus.index import corpus_index
        from relavium_conformance._version import version_line

        print(version_line(len(corpus_index())))
        parser.exit(0)


def positive_seconds(text: str) -> float:
    """An ``argparse`` type: a finite number of seconds greater than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds above 0")
    return value


def positive_count(text: str) -> int:
    """An ``argparse`` type: a whole number greater than zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
    return value


def check_output_path(path: Path, option: str) -> str | None:
    """Why ``path`` cannot receive an output file (a folder or another non-file in its place, a file where
    a folder of its path should be, a folder it cannot write in), or ``None``.  Missing folders are not a
    problem: the writer creates them (``--json out/results.json`` works in a fresh checkout); the check
    creates nothing, it asks the nearest existing folder of the path whether it may be written in."""
    if path.is_dir():
        return f"{option} {path}: is a folder, not a file"
    if path.exists() and not path.is_file():
        return f"{option} {path}: is not a regular file"
    parent = path.parent if str(path.parent) else Path(".")
    existing = parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{option} {path}: {existing} is a file, not a folder"
    if existing != parent:  # the folders below ``existing`` will be made: it must take a new entry
        if not os.access(existing, os.W_OK | os.X_OK):
            return f"{option} {path}: cannot create the folder {parent} (no write permission in {existing})"
        return None
    import tempfile  # (only an output option needs it)

    try:
        descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
    except OSError as exc:
        return f"{option} {path}: cannot write in {parent} ({exc.strerror or exc})"
    os.close(descriptor)
    os.unlink(name)
    if path.exists() and not os.access(path, os.W_OK):
        return f"{option} {path}: the file is not writable"
    return None


def output_problems(outputs: Iterable[tuple[Path | None, str]]) -> list[str]:
    """Every reason the given ``(path, option)`` outputs cannot be written as asked: each path's own
    (:func:`check_output_path`), and two options naming one file (the second write would replace the
    first report)."""
    given = [(path, option) for path, option in outputs if path is not None]
    problems = [problem for path, option in given if (problem := check_output_path(path, option))]
    seen: dict[Path, str] = {}
    for path, option in given:
        where = path.resolve()
        if where in seen:
            problems.append(f"{seen[where]} and {option} name the same file {path}: give each its own")
        else:
            seen[where] = option
    return problems


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--junit`` and ``--markdown``: the report files a run-like command writes."""
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON results here")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary here")


def run_guarded(command: str, args: argparse.Namespace, body: Callable[[argparse.Namespace], int]) -> int:
    """Check the report paths before any work, then run ``body``; a usage error is one line, exit 2."""
    problems = output_problems(
        ((args.json, "--json"), (args.junit, "--junit"), (args.markdown, "--markdown"))
    )
    if problems:
        error_line(command, "; ".join(problems))
        return int(ExitCode.USAGE)
    try:
        return body(args)
    except KitUsageError as exc:
        error_line(command, str(exc))
        return int(ExitCode.USAGE)


def check_readable_file(path: Path, option: str) -> str | None:
    """Why ``path`` cannot be read as an input file (missing, a FIFO or device, unreadable), or ``None``.
    A FIFO is refused before it is opened: reading one would block until someone writes to it."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"{option} {path}: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return f"{option} {path}: not a regular file"
    if not os.access(path, os.R_OK):
        return f"{option} {path}: not readable"
    return None
