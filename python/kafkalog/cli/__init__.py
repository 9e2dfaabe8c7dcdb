"""The ``kafkalog`` command: the operator's tools over Kafka log directories.

``kafkalog COMMAND ...`` (installed as a console script by the package, or ``python -m
kafkalog``). Each command lives in its own module of this package, which adds its parser with a
``register(subcommands)`` function and sets ``run`` (``args -> exit code``) as its default:

- ``dump``: Kafka's ``kafka-dump-log.sh`` (DumpLogSegments), output line for line as Kafka's;
- ``stats``: per log dir, topic and partition: sizes, counts, the cleaner's view, retention;
- ``compact`` / ``retention``: run the cleaner or retention now, with a progress bar;
- ``verify``: check every file of a log dir, and ``--fix`` it by recovery.

Exit codes: 0 success; 1 problems found, or the command failed (a clear one-line message on
stderr naming what was wrong, never a traceback for a user error); 2 usage (argparse's).
``dump``, ``stats`` and ``verify`` (without ``--fix``) never write; a command that writes
refuses a directory another process holds, naming the holder.

Thread-safety: ``main`` is not reentrant across threads (it writes to stdout and stderr).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..exceptions import KafkaLogError

__all__ = ["EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "UsageError", "build_parser", "main"]

EXIT_OK = 0
#: Problems found (``verify``), or the command failed.
EXIT_PROBLEMS = 1
#: Bad arguments (argparse exits with 2 too).
EXIT_USAGE = 2

#: The command modules of this package, in ``--help`` order.
COMMAND_MODULES: tuple[str, ...] = ("dump", "stats", "maintain")

_EPILOG = """examples:
  kafkalog dump --files /var/lib/kafka/data/orders-0/00000000000000000000.log --print-data-log
  kafkalog stats /var/lib/kafka/data --json
  kafkalog compact /var/lib/kafka/data --topic orders --partition 0
  kafkalog retention /var/lib/kafka/data
  kafkalog verify /var/lib/kafka/data

Run 'kafkalog COMMAND --help' for a command's options."""


class UsageError(KafkaLogError):
    """Arguments argparse accepted but the command cannot use (a path that does not exist, a
    file of a kind the command does not read): exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    """The ``kafkalog`` parser with every command module's subparser."""
    parser = argparse.ArgumentParser(
        prog="kafkalog",
        description="Tools for Apache Kafka log directories (kafkalog, Kafka's log storage engine as a library).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"kafkalog {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``kafkalog`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error (argparse printed it)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    prog = f"kafkalog {args.command}"
    try:
        code: int = args.run(args)
        sys.stdout.flush()
        return code
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (KafkaLogError, OSError) as e:
        if isinstance(e, BrokenPipeError):  # the reader went away (| head): not an error
            return _quiet_broken_pipe()
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def _quiet_broken_pipe() -> int:
    # Python flushes stdout at exit and would report the broken pipe again: point stdout at
    # /dev/null first (the documented recipe in the signal module's notes).
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


def console_main() -> None:
    """The console script's entry point."""
    sys.exit(main())
