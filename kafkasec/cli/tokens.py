"""``kafkasec tokens``: kafka-delegation-tokens.sh's options, on a cluster or on the state file.

The action is a word (``kafkasec tokens create``) or kafka-delegation-tokens.sh's flag
(``--create``, ``--renew``, ``--expire``, ``--describe``).

With --bootstrap-server the requests go to the cluster as the login of --command-config, as
kafka-delegation-tokens.sh sends them: create makes a token for that login unless
--owner-principal names another. On the state file the secret comes from
``delegation.token.secret.key`` in the --command-config file, and requests go through the same
checks as a broker's: they act for ``--principal`` over an authenticated connection (standing for
the login); without it, create acts for the owner, renew and expire for the token's owner, and
describe lists every token (whoever holds the state file and the secret can make any token
anyway). docs/tokens.md describes it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
from typing import Iterator, Sequence

from kafkasec.cli.config import on_cluster, open_cluster, open_security
from kafkasec.cli.options import OUTPUT_FORMATS, CommandError, UsageError, global_options
from kafkasec.cli.output import write_records
from kafkasec.context import RequestContext
from kafkasec.errors import DelegationTokenAuthDisabledError
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.tokens.model import DelegationToken, parse_hmac

ACTIONS = ("create", "renew", "expire", "describe")
NO_ACTION = "Command must include exactly one action: --create, --renew, --expire or --describe"
# Which options each action takes (DelegationTokenCommand's checkArgs).
ACTION_OPTIONS = {
    "create": {"max_life_time_period", "renewer_principal", "owner_principal"},
    "renew": {"hmac", "renew_time_period"},
    "expire": {"hmac", "expiry_time_period"},
    "describe": {"owner_principal"},
}
OPTION_FLAGS = {
    "max_life_time_period": "--max-life-time-period",
    "renewer_principal": "--renewer-principal",
    "owner_principal": "--owner-principal",
    "hmac": "--hmac",
    "renew_time_period": "--renew-time-period",
    "expiry_time_period": "--expiry-time-period",
}
# The connection a command-line request stands for: authenticated, so token requests are allowed.
COMMAND_PROTOCOL = "SASL_SSL"
COMMAND_ADDRESS = "127.0.0.1"


def _principal(text: str) -> KafkaPrincipal:
    try:
        return KafkaPrincipal.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(commands) -> None:
    """Add ``tokens`` to the top-level subparsers."""
    parser = commands.add_parser(
        "tokens",
        help="create, renew, expire and describe delegation tokens",
        description="Manage delegation tokens with kafka-delegation-tokens.sh's options.",
        parents=[global_options(argparse.SUPPRESS)],
    )
    parser.add_argument("action", nargs="?", choices=ACTIONS, help="what to do (or one of the flags below)")
    parser.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table",
                        help="with describe: kafka-delegation-tokens.sh's table (the default), json or csv")
    flags = parser.add_argument_group("kafka-delegation-tokens.sh actions")
    for action in ACTIONS:
        flags.add_argument(f"--{action}", dest=f"flag_{action}", action="store_true", help=f"{action} tokens")
    group = parser.add_argument_group("kafka-delegation-tokens.sh options")
    group.add_argument("--max-life-time-period", type=int, metavar="MS",
                       help="create: the token's maximum life in ms (-1 or absent: the server's maximum)")
    group.add_argument("--renewer-principal", type=_principal, action="append", metavar="PRINCIPAL",
                       help="create: a principal (User:name) that may renew the token; may repeat")
    group.add_argument("--owner-principal", type=_principal, action="append", metavar="PRINCIPAL",
                       help="create: the owner (default: --principal); describe: whose tokens (may repeat)")
    group.add_argument("--hmac", metavar="HMAC", help="renew/expire: the token's HMAC, as create printed it")
    group.add_argument("--renew-time-period", type=int, metavar="MS",
                       help="renew: how long from now the token lasts (-1: the server's expiry time)")
    group.add_argument("--expiry-time-period", type=int, metavar="MS",
                       help="expire: how long from now until the token expires (-1: now, and it is removed)")
    group.add_argument("--principal", type=_principal, metavar="PRINCIPAL",
                       help="the principal the request acts for, as kafka-delegation-tokens.sh's login")
    parser.set_defaults(run=run_tokens)


def run_tokens(args) -> int:
    action = chosen_action(args)
    try:
        with token_target(args, writes=action != "describe") as target:
            if action == "create":
                return create(target, args)
            if action == "renew":
                return renew(target, args)
            if action == "expire":
                return expire(target, args)
            return describe(target, args)
    except DelegationTokenAuthDisabledError as error:
        where = "in the servers' configuration" if on_cluster(args) else "in the --command-config file"
        raise CommandError(
            f"{str(error).rstrip('.')}; set delegation.token.secret.key {where} (the same on every node) to enable delegation tokens"
        ) from None


class StateFileTokens:
    """The token calls of the actions on a state file, each acting for ``principal`` (None: see
    the module docstring). A :class:`~kafkasec.client.ClusterAdmin` makes the same calls on a cluster."""

    def __init__(self, security, principal: KafkaPrincipal | None):
        self.security = security
        self.principal = principal

    def create_delegation_token(self, owner: KafkaPrincipal | None, renewers: Sequence[KafkaPrincipal], max_lifetime_ms: int):
        acting = self.principal or owner  # chosen_action saw that one is given
        assert acting is not None
        return self.security.create_delegation_token(_context(acting), owner=owner, renewers=renewers, max_lifetime_ms=max_lifetime_ms)

    def renew_delegation_token(self, hmac: bytes, renew_period_ms: int) -> int:
        return self.security.renew_delegation_token(self._acting_for(hmac), hmac, renew_period_ms)

    def expire_delegation_token(self, hmac: bytes, expiry_time_period_ms: int) -> int:
        return self.security.expire_delegation_token(self._acting_for(hmac), hmac, expiry_time_period_ms)

    def describe_delegation_tokens(self, owners: Sequence[KafkaPrincipal] | None) -> list[DelegationToken]:
        if self.principal is not None:
            return self.security.describe_delegation_tokens(_context(self.principal), owners)
        return self.security.token_service.all_tokens(owners or None)

    def _acting_for(self, hmac: bytes) -> RequestContext:
        return _context(self.principal or self.security.token_service.owner_of(hmac))


@contextlib.contextmanager
def token_target(args, *, writes: bool) -> Iterator:
    """Where the tokens are: the cluster --bootstrap-server names, else the state file."""
    if on_cluster(args):
        with open_cluster(args) as admin:
            yield admin
    else:
        with open_security(args, writes=writes) as security:
            yield StateFileTokens(security, getattr(args, "principal", None))


def chosen_action(args) -> str:
    chosen = {action for action in ACTIONS if getattr(args, f"flag_{action}", False)}
    if getattr(args, "action", None):
        chosen.add(args.action)
    if len(chosen) != 1:
        raise UsageError(NO_ACTION)
    (action,) = chosen
    for option, flag in OPTION_FLAGS.items():
        if getattr(args, option, None) is not None and option not in ACTION_OPTIONS[action]:
            raise UsageError(f'Option "--{action}" can\'t be used with option "{flag}"')
    if action in ("renew", "expire") and not getattr(args, "hmac", None):
        raise UsageError(f"--{action} needs --hmac")
    if action == "create" and len(getattr(args, "owner_principal", None) or []) > 1:
        raise UsageError("--create takes at most one --owner-principal")
    cluster = on_cluster(args)
    if cluster and getattr(args, "principal", None) is not None:
        raise UsageError("--principal is for the state file: on a cluster the login of --command-config acts")
    if (action == "create" and not cluster
            and not (getattr(args, "owner_principal", None) or getattr(args, "principal", None))):
        raise UsageError("--create needs --owner-principal or --principal (or --bootstrap-server, where the login owns it)")
    if action in ("renew", "expire"):
        parse_hmac(args.hmac)  # a malformed HMAC is refused before the state is opened
    return action


def _context(principal: KafkaPrincipal) -> RequestContext:
    return RequestContext(principal, COMMAND_ADDRESS, security_protocol=COMMAND_PROTOCOL)


def create(target, args) -> int:
    owner = (args.owner_principal or [None])[0]
    renewers = args.renewer_principal or []
    max_life = -1 if args.max_life_time_period is None else args.max_life_time_period
    print(f"Calling create token operation with renewers :{_principals(renewers)} , max-life-time-period :{max_life}")
    token = target.create_delegation_token(owner, renewers, max_life)
    print(f"Created delegation token with tokenId : {token.token_id}")
    print_tokens([token])
    return 0


def renew(target, args) -> int:
    return _change_expiry(args, "renew", "renew-time-period", args.renew_time_period, target.renew_delegation_token)


def expire(target, args) -> int:
    return _change_expiry(args, "expire", "expire-time-period", args.expiry_time_period, target.expire_delegation_token)


def _change_expiry(args, verb: str, period_label: str, period: int | None, change) -> int:
    hmac = parse_hmac(args.hmac)
    period = -1 if period is None else period
    # kafka-delegation-tokens.sh prints the HMAC here; it is the token's password, so not this.
    print(f"Calling {verb} token operation with hmac :*** , {period_label} :{period}")
    expiry = change(hmac, period)
    print(f"Completed {verb} operation. New expiry date : {_date(expiry)}")
    return 0


def describe(target, args) -> int:
    owners = args.owner_principal
    tokens = target.describe_delegation_tokens(owners)
    if args.output == "table":
        if owners:
            print(f"Calling describe token operation for owners: {_principals(owners)}")  # Kafka 3.5+ (Java tool)
        else:
            print("Calling describe token operation for current user.")
    else:
        records = [token_record(token) for token in tokens]
        write_records(sys.stdout, TOKEN_FIELDS, records, args.output)
        return 0
    print(f"Total number of tokens : {len(tokens)}", end="")
    print_tokens(tokens)
    return 0


TOKEN_FIELDS = ("token_id", "hmac", "owner", "requester", "renewers", "issue_date", "expiry_date", "max_date")


def token_record(token: DelegationToken) -> dict:
    """A token as a JSON/CSV record: the table's columns, dates in ISO 8601 UTC."""
    info = token.info

    def iso(timestamp_ms: int) -> str:
        return datetime.datetime.fromtimestamp(timestamp_ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")

    return {
        "token_id": info.token_id, "hmac": token.hmac_as_base64, "owner": str(info.owner),
        "requester": str(info.token_requester), "renewers": [str(renewer) for renewer in info.renewers],
        "issue_date": iso(info.issue_timestamp), "expiry_date": iso(info.expiry_timestamp), "max_date": iso(info.max_timestamp),
    }


def print_tokens(tokens: list[DelegationToken]) -> None:
    """kafka-delegation-tokens.sh's table (its printToken), dates as yyyy-MM-ddTHH:mm local time."""
    # Each line opens with a line break, as the tool's printf("%n..."), hence the blank lines.
    row = "\n%-15s %-30s %-15s %-15s %-25s %-15s %-15s %-15s"
    print(row % ("TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE"))
    for token in tokens:
        info = token.info
        print(row % (
            info.token_id, token.hmac_as_base64, info.owner, info.token_requester, _principals(info.renewers),
            _date(info.issue_timestamp), _date(info.expiry_timestamp), _date(info.max_timestamp),
        ))


def _principals(principals) -> str:
    # Java's List.toString, as the Scala tool prints renewers.
    return "[" + ", ".join(str(principal) for principal in principals) + "]"


def _date(timestamp_ms: int) -> str:
    return datetime.datetime.fromtimestamp(timestamp_ms / 1000).strftime("%Y-%m-%dT%H:%M")
