"""The ``kafkasec`` command: ``kafkasec [--state PATH] [--command-config FILE] acls ...``.

docs/cli.md describes every command and flag. ``main`` never lets a traceback through: bad
input is one ``kafkasec: error: ...`` line on standard error and a non-zero exit status.
"""

from __future__ import annotations

import sys
from typing import Sequence

from kafkasec import __version__
from kafkasec.cli import acls, config_command, grid, principal, scram, serve, tokens
from kafkasec.cli.options import (
    ArgumentParser,
    CommandError,
    UsageError,
    global_options,
)
from kafkasec.errors import KafkaError
from kafkasec.store import StateError

FAILURE = 1  # the command ran and failed
USAGE_ERROR = 2  # the command line is wrong


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="kafkasec",
        description="Manage and question the Kafka ACLs, SCRAM credentials and delegation tokens kept in a kafkasec state file.",
        parents=[global_options(None)],
    )
    parser.add_argument("--version", action="version", version=f"kafkasec {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    acls.register(commands)
    principal.register(commands)
    scram.register(commands)
    tokens.register(commands)
    grid.register(commands)
    serve.register(commands)
    config_command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except SystemExit as exited:  # --help and --version: argparse has printed, and exits
        return _exit_status(exited)
    except UsageError as error:
        return _report(error, USAGE_ERROR)
    except (CommandError, ValueError, TypeError, KafkaError, StateError, OSError) as error:
        return _report(error, FAILURE)


def _exit_status(exited: SystemExit) -> int:
    """The status ``sys.exit`` gives for ``exited``: None is success; a message is printed and fails."""
    if exited.code is None:
        return 0
    if isinstance(exited.code, int):
        return exited.code
    sys.stderr.write(f"{exited.code}\n")
    return 1


def _report(error: Exception, status: int) -> int:
    message = " ".join(str(error).split("\n"))
    sys.stderr.write(f"kafkasec: error: {message}\n")
    return status


__all__ = ["main", "build_parser"]
