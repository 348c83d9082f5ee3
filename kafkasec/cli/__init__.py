"""The ``kafkasec`` command: ``kafkasec [--state PATH | --bootstrap-server HOST:PORT] [--command-config FILE] acls ...``.

docs/cli.md describes every command and flag. ``main`` never lets a traceback through: bad
input is one ``kafkasec: error: ...`` line on standard error and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from typing import Sequence

from kafkasec import __version__
from kafkasec.cli import acls, completion, config_command, grid, principal, scram, serve, tokens
from kafkasec.cli.options import (
    ArgumentParser,
    CommandError,
    UsageError,
    global_options,
)
from kafkasec.errors import KafkaError
from kafkasec.store import StateError

FAILURE = 1  # the command ran and failed
USAGE_ERROR = 1  # the command line is wrong: 1 too, as Kafka's tools exit (CommandLineUtils)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="kafkasec",
        description="Manage and question the Kafka ACLs, SCRAM credentials and delegation tokens of a running "
        "cluster (--bootstrap-server) or of a kafkasec state file (--state).",
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
    completion.register(commands)
    return parser


KAFKA_ONLY_OPTIONS = {
    "--bootstrap-controller": "kafkasec reaches a cluster through a broker: --bootstrap-server HOST:PORT",
    "--zookeeper": "Kafka dropped ZooKeeper; kafkasec works on a state file (--state PATH)",
    "--authorizer-properties": "kafkasec's authorizer settings go in the --command-config file",
}
"""Options of Kafka's tools that kafkasec does not have, and what to do instead."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        _refuse_unknown_options(parser, arguments)
        args = parser.parse_args(arguments)
        return args.run(args)
    except SystemExit as exited:  # --help and --version: argparse has printed, and exits
        return _exit_status(exited)
    except UsageError as error:
        return _report(error, USAGE_ERROR)
    except KeyboardInterrupt:
        return _report("interrupted", FAILURE)
    except BrokenPipeError:
        # The reader went away (| head): no more output, and no complaint from Python at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _report("the output was closed before the command finished", FAILURE)
    except EOFError:
        return _report("no answer to the question (standard input is closed); --force answers yes", FAILURE)
    except (CommandError, ValueError, TypeError, KafkaError, StateError, OSError) as error:
        return _report(error, FAILURE)


def _known_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its subcommands, at any depth."""
    known: set[str] = set()
    for action in parser._actions:
        known.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                known |= _known_options(subparser)
    return known


def _options_of_command(parser: argparse.ArgumentParser, arguments: list[str]) -> set[str]:
    """The options the command that ``arguments`` name accepts: those of each parser on the way
    down (``kafkasec``, ``acls``, ``check``) and, below the last name given, of every subcommand."""
    options = {option for action in parser._actions for option in action.option_strings}
    subcommands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if subcommands is None:
        return options
    for position, argument in enumerate(arguments):
        if argument == "--":
            break
        if argument in subcommands.choices:
            return options | _options_of_command(subcommands.choices[argument], arguments[position + 1:])
    return options | _known_options(parser)


def _refuse_unknown_options(parser: argparse.ArgumentParser, arguments: list[str]) -> None:
    """A misspelt option, or one of Kafka's that kafkasec lacks, is named as such (argparse would
    take its value for a command and answer 'invalid choice' about that)."""
    known = _known_options(parser)
    for argument in arguments:
        if argument == "--":
            return
        if not argument.startswith("--"):
            continue
        option = argument.split("=", 1)[0]
        if option in known:
            continue
        if option in KAFKA_ONLY_OPTIONS:
            raise UsageError(f"unknown option {option}: {KAFKA_ONLY_OPTIONS[option]}")
        # Suggest only what the named command takes: an option of another command would be
        # refused there in turn.
        near = difflib.get_close_matches(option, _options_of_command(parser, arguments), n=1, cutoff=0.75)
        raise UsageError(f"unknown option {option}" + (f"; did you mean {near[0]}?" if near else ""))


def _exit_status(exited: SystemExit) -> int:
    """The status ``sys.exit`` gives for ``exited``: None is success; a message is printed and fails."""
    if exited.code is None:
        return 0
    if isinstance(exited.code, int):
        return exited.code
    sys.stderr.write(f"{exited.code}\n")
    return 1


def _report(error: Exception | str, status: int) -> int:
    message = " ".join(str(error).split("\n"))
    sys.stderr.write(f"kafkasec: error: {message}\n")
    return status


__all__ = ["main", "build_parser"]
