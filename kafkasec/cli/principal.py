"""``kafkasec principal parse|serialize|deserialize``: principals as text and as KIP-590 bytes.

Bytes are hexadecimal on the command line (spaces allowed when reading). Serializing and
deserializing go through the serde hooks, so a plugin's own principal format is honoured; no
state file is opened or created.
"""

from __future__ import annotations

import argparse
import sys

from kafkasec.cli.config import open_security
from kafkasec.cli.options import option_parents, output_format
from kafkasec.cli.output import write_records
from kafkasec.principals.principal import KafkaPrincipal

PRINCIPAL_FIELDS = ("principal", "principal_type", "name", "token_authenticated")


def register(commands) -> None:
    """Add ``principal`` and its three actions to the top-level subparsers."""
    nested = option_parents(argparse.SUPPRESS)
    parser = commands.add_parser(
        "principal",
        help="parse principals and convert them to and from KIP-590 bytes",
        description="Parse a principal, or convert it to and from the bytes that carry it in a "
        "KIP-590 envelope (hexadecimal).",
        parents=[nested.global_options],
    )
    actions = parser.add_subparsers(dest="principal_action", required=True, metavar="ACTION")
    parse = actions.add_parser("parse", help="split Type:name", parents=[nested.global_options, nested.output])
    parse.add_argument("principal", help="e.g. User:alice")
    parse.set_defaults(run=run_parse)
    serialize = actions.add_parser(
        "serialize", help="a principal as envelope bytes (hex)", parents=[nested.global_options]
    )
    serialize.add_argument("principal", help="e.g. User:alice")
    serialize.add_argument("--token-authenticated", action="store_true", help="a delegation-token login")
    serialize.set_defaults(run=run_serialize)
    deserialize = actions.add_parser(
        "deserialize", help="the principal in envelope bytes (hex)", parents=[nested.global_options, nested.output]
    )
    deserialize.add_argument("hex", help="e.g. 0000055573657206616c6963650000")
    deserialize.set_defaults(run=run_deserialize)


def _record(principal: KafkaPrincipal) -> dict:
    return {
        "principal": str(principal),
        "principal_type": principal.principal_type,
        "name": principal.name,
        "token_authenticated": principal.token_authenticated,
    }


def run_parse(args) -> int:
    write_records(sys.stdout, PRINCIPAL_FIELDS, [_record(KafkaPrincipal.parse(args.principal))], output_format(args))
    return 0


def run_serialize(args) -> int:
    principal = KafkaPrincipal.parse(args.principal)
    principal = KafkaPrincipal(principal.principal_type, principal.name, args.token_authenticated)
    with open_security(args, stateless=True) as security:
        sys.stdout.write(security.serialize_principal(principal).hex() + "\n")
    return 0


def run_deserialize(args) -> int:
    try:
        data = bytes.fromhex(args.hex)
    except ValueError:
        raise ValueError(f"not hexadecimal bytes: {args.hex!r}") from None
    with open_security(args, stateless=True) as security:
        principal = security.deserialize_principal(data)
    write_records(sys.stdout, PRINCIPAL_FIELDS, [_record(principal)], output_format(args))
    return 0
