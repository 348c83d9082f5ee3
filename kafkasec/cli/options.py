"""The argparse pieces the kafkasec commands share: the parser class, errors, parents, converters.

Shared options come as argparse parent parsers built for one ``argument_default``: None where a
command's values must exist, SUPPRESS in a parser reached through a subcommand name, so that an
option given before the name (``kafkasec acls --topic t check ...``) is not reset by the
subcommand's default. Every shared option therefore defaults to None; code reads the Kafka
default (LITERAL, table) with :func:`pattern_type` and :func:`output_format`.
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

from kafkasec.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from kafkasec.context import java_host_address
from kafkasec.principals.principal import KafkaPrincipal

DEFAULT_CLIENT_HOST = "127.0.0.1"
OUTPUT_FORMATS = ("table", "json", "csv")

ACL_OPERATIONS = tuple(op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY))
"""What --operation accepts: kafka-acls.sh's operation names (ALL included)."""
PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED, PatternType.ANY, PatternType.MATCH)
"""What --resource-pattern-type accepts; ANY and MATCH select, so only --list and --remove take them."""
ACL_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)
"""The pattern types an ACL can be stored with."""
PERMISSION_TYPES = (AclPermissionType.ALLOW, AclPermissionType.DENY)
RESOURCE_TYPES = tuple(rt for rt in ResourceType if rt not in (ResourceType.UNKNOWN, ResourceType.ANY))


class UsageError(Exception):
    """The command line is wrong: one line on standard error, exit status 1 (as Kafka's tools)."""


class CommandError(Exception):
    """The command ran and failed (or was declined): one line on standard error, exit status 1."""


def raise_first_error(results) -> None:
    """ACL, SCRAM and token changes answer errors per item (``result.error``): raise the first
    rather than drop it."""
    for result in results:
        if result.error is not None:
            raise result.error


class ArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser that reports a bad command line as a UsageError (one line, no usage text)."""

    def error(self, message):
        raise UsageError(message)


def enum_member(enum_type, value: object, allowed, kind: str):
    """The member of ``enum_type`` that ``value`` names (any case, CamelCase), if it is ``allowed``.

    ValueError otherwise, with a message short enough for one line: the enums' own messages list
    every spelling and code, which is more than a command-line user needs.
    """
    if not isinstance(value, str):
        raise ValueError(f"{kind} must be a string such as {allowed[0].name!r}, not {value!r}")
    try:
        member = enum_type.coerce(value.strip())
    except ValueError:
        member = None
    if member not in allowed:
        raise ValueError(f"unknown {kind} {value!r}; valid values are {', '.join(m.name for m in allowed)}")
    return member


def _converter(convert):
    """An argparse ``type=`` from a function raising ValueError, keeping its message (argparse
    would replace a ValueError's message with "invalid <type> value")."""

    def argument(text: str):
        try:
            return convert(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return argument


operation_argument = _converter(lambda text: enum_member(AclOperation, text, ACL_OPERATIONS, "operation"))
pattern_type_argument = _converter(
    lambda text: enum_member(PatternType, text, PATTERN_TYPES, "resource pattern type")
)
# kafka-acls.sh trims principals and hosts before use.
principal_argument = _converter(lambda text: str(KafkaPrincipal.parse(text.strip())))
client_host_argument = _converter(java_host_address)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise ValueError(f"must be at least 1, not {value}")
    return value


positive_int_argument = _converter(_positive_int)


def pattern_type(args) -> PatternType:
    """--resource-pattern-type, LITERAL when not given (kafka-acls.sh's default)."""
    return args.resource_pattern_type or PatternType.LITERAL


def output_format(args) -> str:
    return getattr(args, "output", None) or "table"  # suppressed when not given below the top level


def global_options(argument_default) -> ArgumentParser:
    """--state, --bootstrap-server and --command-config, which every level accepts (see the module docstring)."""
    parser = ArgumentParser(add_help=False, argument_default=argument_default)
    group = parser.add_argument_group("state file or cluster, and configuration")
    group.add_argument(
        "--state",
        metavar="PATH",
        help="the SQLite state file (default: kafkasec.state.path from --command-config, "
        "else $KAFKASEC_STATE, else ./kafkasec.db)",
    )
    group.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="work on a running cluster (kafkasec serve or Apache Kafka) instead of a state file; "
        "--command-config then holds Kafka's client properties (security.protocol, sasl.*, ssl.*)",
    )
    group.add_argument(
        "--command-config",
        "--config",
        dest="config",
        metavar="FILE",
        help="a properties file (key=value lines): Kafka's client properties with --bootstrap-server; "
        "super.users, allow.everyone.if.no.acl.found, kafkasec.state.path and plugin settings",
    )
    return parser


def option_parents(argument_default) -> SimpleNamespace:
    """The shared option groups, each a parent parser, built for ``argument_default``."""

    def parent() -> ArgumentParser:
        return ArgumentParser(add_help=False, argument_default=argument_default)

    resources = parent()
    group = resources.add_argument_group("resources (each option except --cluster may repeat)")
    group.add_argument("--topic", action="append", help="a topic; '*' means every topic")
    group.add_argument("--cluster", action="store_true", help="the cluster resource (named kafka-cluster)")
    group.add_argument("--group", action="append", help="a consumer group; '*' means every group")
    group.add_argument("--transactional-id", action="append", help="a transactional id; '*' means every one")
    group.add_argument("--delegation-token", action="append", help="a delegation token id; '*' means every one")
    group.add_argument("--user-principal", action="append", help="a user as a resource, e.g. for CreateTokens")
    group.add_argument(
        "--resource-pattern-type",
        type=pattern_type_argument,
        metavar="{literal,prefixed,any,match}",
        help="how resource names match (default literal; --add takes literal or prefixed only)",
    )

    operations = parent()
    operations.add_argument(
        "--operation",
        action="append",
        type=operation_argument,
        help=f"an operation, any case: {', '.join(op.camel_name for op in ACL_OPERATIONS)} "
        "(--add and --remove default to All)",
    )

    principals = parent()
    principals.add_argument(
        "--principal", action="append", type=principal_argument, help="a principal (Type:name), e.g. User:alice"
    )

    output = parent()
    output.add_argument("-o", "--output", choices=OUTPUT_FORMATS, help="output format (default table)")

    dry_run = parent()
    dry_run.add_argument("--dry-run", action="store_true", help="print what would change and change nothing")

    return SimpleNamespace(
        global_options=global_options(argument_default),
        resources=resources,
        operations=operations,
        principals=principals,
        output=output,
        dry_run=dry_run,
    )


def client_host_options() -> ArgumentParser:
    """--host for the questions about a client; never shared with a parent level, so it keeps its default."""
    parser = ArgumentParser(add_help=False)
    parser.add_argument(
        "--host",
        type=client_host_argument,
        default=DEFAULT_CLIENT_HOST,
        help=f"the client's IP address (default {DEFAULT_CLIENT_HOST})",
    )
    return parser
