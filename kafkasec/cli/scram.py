"""``kafkasec scram``: kafka-configs.sh's SCRAM credential options, on a cluster or on the state file.

--alter (with --add-config and --delete-config) and --describe take kafka-configs.sh's syntax
and print its text, on the cluster --bootstrap-server names (AlterUserScramCredentials and
DescribeUserScramCredentials, KIP-554) or on the state file. --export and --import move
credentials as the strings ZooKeeper-era clusters kept under /config/users, for migration: on
the state file only, since the Kafka protocol never carries a stored credential. No password or
salted password is ever printed or stored. docs/scram.md describes the command and where it
differs from kafka-configs.sh.
"""

from __future__ import annotations

import argparse
import getpass
import re
import sys
import warnings

from kafkasec.cli.config import on_cluster, open_cluster, open_security
from kafkasec.cli.options import OUTPUT_FORMATS, CommandError, UsageError, global_options, raise_first_error
from kafkasec.cli.output import write_records
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.scram.credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
    credential_from_string,
    credential_to_string,
)

ACTIONS = ("alter", "describe", "export", "import_file")
NO_ACTION = "Command must include exactly one action: --describe, --alter, --export, --import."
ALTER_ONLY = ("add_config", "delete_config", "password_stdin")
USERS = "users"
DEFAULT_ITERATIONS = 4096
"""kafka-configs.sh's iteration count when --add-config gives none (or -1)."""
MECHANISMS = (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)

# kafka-configs.sh splits --add-config at commas and '=' that are outside square brackets.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_CONFIG_KEY = re.compile(r"[a-zA-Z0-9._-]*")
# ConfigCommand's credential pattern; without password= the password is asked for.
_WITH_PASSWORD = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)
_WITHOUT_PASSWORD = re.compile(r"(?:iterations=(-?[0-9]*))?")
_LATER_ITERATIONS = re.compile(r",\s*iterations=")


def register(commands) -> None:
    """Add ``scram`` to the top-level subparsers."""
    parser = commands.add_parser(
        "scram",
        help="create, delete, describe, export and import SCRAM credentials",
        description="Manage users' SCRAM credentials with kafka-configs.sh's options (--alter, "
        "--describe), or move them as credential strings (--export, --import).",
        parents=[global_options(argparse.SUPPRESS)],
    )
    group = parser.add_argument_group("kafka-configs.sh actions and options")
    group.add_argument("--alter", action="store_true", help="add or delete a user's credentials")
    group.add_argument("--describe", action="store_true", help="show mechanisms and iterations (never a secret)")
    group.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table",
                       help="with --describe: kafka-configs.sh's lines (table, the default), json or csv")
    group.add_argument("--entity-type", help="users (the only type; the default)")
    group.add_argument(
        "--entity-name", action="append", help="a user; --alter takes one, --describe and --export any (default all)"
    )
    group.add_argument(
        "--user", action="append", metavar="NAME", help="kafka-configs.sh's shorthand for --entity-type users --entity-name NAME"
    )
    group.add_argument("--all", action="store_true",
                       help="with --describe, as kafka-configs.sh accepts it: a credential has no static configs to add")
    # Kafka's default-user flags are taken so that the answer can say why they do not apply.
    group.add_argument("--entity-default", action="store_true", help=argparse.SUPPRESS)
    group.add_argument("--user-defaults", action="store_true", help=argparse.SUPPRESS)
    group.add_argument(
        "--add-config",
        metavar="CONFIGS",
        help="e.g. 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[]': "
        "a credential without password= takes the password from a prompt or --password-stdin",
    )
    group.add_argument(
        "--delete-config", action="append", metavar="MECHANISMS", help="e.g. SCRAM-SHA-512 (comma-separated)"
    )
    files = parser.add_argument_group("passwords and migration")
    files.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password for credentials without password= from the first line of standard input",
    )
    files.add_argument("--export", action="store_true", help="print each credential as a credential string")
    files.add_argument("--import", dest="import_file", metavar="FILE", help="store the credentials of an --export file")
    parser.set_defaults(run=run_scram)


def run_scram(args) -> int:
    check_arguments(args)
    if (args.export or args.import_file is not None) and on_cluster(args):
        raise UsageError("--export and --import work on a state file (--state): the Kafka protocol never carries a stored credential")
    if args.alter:
        return alter(args)
    if args.describe:
        return describe(args)
    if args.export:
        return export(args)
    return import_credentials(args)


def check_arguments(args) -> None:
    """kafka-configs.sh's checks (ConfigCommandOptions.checkArgs) that apply to users' credentials."""
    chosen = [action for action in ACTIONS if getattr(args, action)]
    if len(chosen) != 1:
        raise UsageError(NO_ACTION)
    if args.user:
        if args.entity_type is not None or args.entity_name or args.entity_default:
            raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
        args.entity_name = args.user
    if args.entity_type is None:
        args.entity_type = USERS
    if args.entity_default or args.user_defaults:
        # Kafka keeps quotas, not credentials, for the default user: kafka-configs.sh refuses it too.
        raise UsageError("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials")
    if args.all and not args.describe:
        raise UsageError(f'Option "{_flag(chosen[0])}" can\'t be used with option "--all"')
    if args.entity_type != USERS:
        raise UsageError(f"Invalid entity type {args.entity_type}: kafkasec scram manages the SCRAM credentials of users")
    if not args.alter:
        for option in ALTER_ONLY:
            if getattr(args, option):
                raise UsageError(f'Option "{_flag(chosen[0])}" can\'t be used with option "{_flag(option)}"')
        if args.import_file is not None and args.entity_name:
            raise UsageError('Option "--import" can\'t be used with option "--entity-name"')
        return
    if not args.entity_name:
        raise UsageError("An entity-name or default entity must be specified with --alter of users, clients, brokers or ips")
    if len(args.entity_name) > 1:
        raise UsageError("--alter changes one user: give exactly one --entity-name")
    if args.add_config is None and not args.delete_config:
        raise UsageError("At least one of --add-config or --delete-config must be specified with --alter")


def _flag(dest: str) -> str:
    return "--import" if dest == "import_file" else "--" + dest.replace("_", "-")


# ---------------------------------------------------------------- --alter


def alter(args) -> int:
    user = args.entity_name[0]
    added = parse_add_config(args.add_config) if args.add_config is not None else {}
    deleted = parse_delete_config(args.delete_config or ())
    for mechanism in added:
        if mechanism in deleted:
            raise UsageError(f"{mechanism.mechanism_name} is both added and deleted")
    if args.password_stdin and all(password is not None for _, password in added.values()):
        raise UsageError("--password-stdin needs a credential without password= in --add-config")
    asked = None
    if any(password is None for _, password in added.values()):
        asked = read_password_stdin() if args.password_stdin else ask_password(user)
    deletions = [UserScramCredentialDeletion(user, mechanism) for mechanism in deleted]
    upsertions = [
        UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), asked if password is None else password)
        for mechanism, (iterations, password) in added.items()
    ]
    if on_cluster(args):
        with open_cluster(args) as admin:
            # One request per change, as on the state file (see ScramService.alter_each_separately):
            # a KRaft controller refuses two changes to one user in one request.
            for deletion in deletions:
                raise_first_error(admin.alter_user_scram_credentials([deletion], []))
            for upsertion in upsertions:
                raise_first_error(admin.alter_user_scram_credentials([], [upsertion]))
    else:
        with open_security(args, writes=True) as security:
            security.scram_service.alter_each_separately(deletions, upsertions)
    sys.stdout.write(f"Completed updating config for user {user}.\n")
    return 0


def parse_add_config(text: str) -> dict[ScramMechanism, tuple[int, str | None]]:
    """--add-config as kafka-configs.sh reads it: per mechanism, (iterations, password or None).

    As there, every '[' and ']' is dropped from a value (a password with brackets must come
    from the prompt or --password-stdin), and a mechanism named twice keeps its last value.
    Errors never repeat a value: it may hold a password.
    """
    parts = re.split("," + _OUTSIDE_BRACKETS, text)
    while len(parts) > 1 and parts[-1] == "":  # Java's String.split drops trailing empty parts
        parts.pop()
    pairs = [re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, part) for part in parts]
    if not all(len(pair) == 2 for pair in pairs):
        raise UsageError('Invalid entity config: all configs to be added must be in the format "key=val".')
    configs = {key.strip(): value.replace("[", "").replace("]", "").strip() for key, value in pairs}
    for key in configs:
        if not _CONFIG_KEY.fullmatch(key):
            raise UsageError(f"Invalid character found for config key: {key}")
    return {_mechanism(key, "added"): _credential_config(key, value) for key, value in configs.items()}


def parse_delete_config(values) -> list[ScramMechanism]:
    """--delete-config values, each a comma-separated list of mechanism names, without repeats."""
    names = [name.strip() for value in values for name in value.split(",")]
    return list(dict.fromkeys(_mechanism(name, "deleted") for name in names))


def _mechanism(name: str, verb: str) -> ScramMechanism:
    for mechanism in MECHANISMS:
        if name == mechanism.mechanism_name:  # kafka-configs.sh: exactly, in upper case
            return mechanism
    raise UsageError(
        f"Only SCRAM credential configs ({', '.join(m.mechanism_name for m in MECHANISMS)}) can be {verb} "
        f"with kafkasec scram. Unexpected config names: {name}"
    )


def _credential_config(name: str, value: str) -> tuple[int, str | None]:
    match = _WITH_PASSWORD.fullmatch(value)
    iterations, password = match.groups() if match else (None, None)
    if password is not None and _LATER_ITERATIONS.search(password):
        # Kafka's pattern reads password= to the end: the iterations written after it are part
        # of the password, and the default count is used. Kept as Kafka does, but said.
        sys.stderr.write(
            f"kafkasec: warning: in {name}, iterations= after password= is part of the password "
            f"(as kafka-configs.sh reads it) and the iterations are {iterations or DEFAULT_ITERATIONS}; "
            "write iterations= first to set them\n"
        )
    if match is None:
        match = _WITHOUT_PASSWORD.fullmatch(value)
        if match is None:
            raise UsageError(
                f"Invalid credential property {name}: expected [iterations=<n>,password=<password>], "
                "[iterations=<n>] or [] (then the password is asked for)"
            )
        iterations = match.group(1)
    if iterations is None or iterations == "-1":
        return DEFAULT_ITERATIONS, password
    try:
        count = int(iterations)
    except ValueError:
        raise UsageError(f"Invalid credential property {name}: iterations must be a number") from None
    if count < MIN_ITERATIONS:
        raise UsageError(f"Iterations {count} is less than the minimum {MIN_ITERATIONS} required for {name}")
    return count, password


def read_password_stdin() -> str:
    line = sys.stdin.readline()
    if not line:
        raise CommandError("--password-stdin: standard input has no password; nothing was changed")
    return line.rstrip("\r\n")


def ask_password(user: str) -> str:
    """Ask twice without echo, so the password stays out of the shell's history."""
    try:
        with warnings.catch_warnings():
            # Without a terminal getpass warns and reads standard input with echo: refuse instead.
            warnings.simplefilter("error", getpass.GetPassWarning)
            password = getpass.getpass(f"Password for user '{user}': ")
            again = getpass.getpass("Again, to confirm: ")
    except getpass.GetPassWarning:
        raise CommandError("no terminal to ask for the password on; nothing was changed (see --password-stdin)") from None
    except EOFError:
        raise CommandError("no password was given; nothing was changed (see --password-stdin)") from None
    if password != again:
        raise CommandError("the passwords do not match; nothing was changed")
    return password


# ---------------------------------------------------------------- --describe


SCRAM_FIELDS = ("user", "mechanism", "iterations", "error")


def describe(args) -> int:
    if on_cluster(args):
        with open_cluster(args) as admin:
            result = admin.describe_user_scram_credentials(args.entity_name)
    else:
        with open_security(args) as security:
            result = security.describe_user_scram_credentials(args.entity_name)
    out = sys.stdout
    if args.output in ("json", "csv"):  # one record per credential (never a secret), or the user's error
        records: list[dict[str, object]] = []
        for user in result.users():
            try:
                infos = result.description(user).infos
            except KafkaError as error:
                records.append({"user": user, "mechanism": None, "iterations": None, "error": KafkaErrorCode(error.code).name})
                continue
            records += [{"user": user, "mechanism": info.mechanism.mechanism_name, "iterations": info.iterations,
                         "error": None} for info in infos]
        write_records(out, SCRAM_FIELDS, records, args.output)
        return 0
    for user in result.users():
        try:
            description = result.description(user)
        except KafkaError as error:
            out.write(
                f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                f"{type(error).__name__}: {error.message}\n"
            )
            continue
        text = ", ".join(f"{info.mechanism.mechanism_name}=iterations={info.iterations}" for info in description.infos)
        out.write(f"SCRAM credential configs for user-principal '{user}' are {text}\n")
    return 0


# ---------------------------------------------------------------- --export and --import

# Kafka's Sanitizer: user names as ZooKeeper node names, URL-encoded (UTF-8, upper-case hex).
_SANITIZE_KEEP = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_SANITIZED = re.compile(r"(?:[A-Za-z0-9._*+-]|%[0-9A-Fa-f]{2})+")


def sanitize(user: str) -> str:
    """Kafka's Sanitizer.sanitize: the name of ``user``'s node under /config/users."""
    return "".join(c if c in _SANITIZE_KEEP else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in user)


def desanitize(text: str) -> str:
    """Kafka's Sanitizer.desanitize (Java's URLDecoder): ValueError for text it refuses."""
    if not _SANITIZED.fullmatch(text):
        raise ValueError(f"{text!r} is not a URL-encoded user name")
    data = bytearray()
    position = 0
    while position < len(text):
        if text[position] == "%":
            data.append(int(text[position + 1:position + 3], 16))
            position += 3
        else:
            data += b" " if text[position] == "+" else text[position].encode("ascii")
            position += 1
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{text!r} does not decode to a UTF-8 user name") from None


def export(args) -> int:
    """One line per credential: the URL-encoded user, a space, ``<MECHANISM>=<credential string>``."""
    names = list(dict.fromkeys(args.entity_name or ()))
    with open_security(args) as security:
        result = security.describe_user_scram_credentials(names)
        lines = [
            f"{sanitize(r.user)} {info.mechanism.mechanism_name}={credential_to_string(credential)}\n"
            for r in result.results
            if r.description is not None
            for info in r.description.infos
            # None: another process deleted it since the describe (the follower applied that).
            if (credential := security.scram_credential(r.user, info.mechanism)) is not None
        ]
    sys.stdout.writelines(lines)
    return 0


def import_credentials(args) -> int:
    path = args.import_file
    if path == "-":
        text = sys.stdin.read()
    else:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    upserts = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            user, mechanism, credential = parse_export_line(line)
        except ValueError as error:
            raise CommandError(f"{path}: line {number}: {error}; nothing was imported") from None
        if (user, mechanism) in upserts:
            raise CommandError(
                f"{path}: line {number}: a second {mechanism.mechanism_name} credential for {user!r}; "
                "nothing was imported"
            )
        upserts[(user, mechanism)] = credential
    with open_security(args, writes=True) as security:
        security.scram_service.import_credentials(
            (user, mechanism, credential) for (user, mechanism), credential in upserts.items()
        )
    users = {user for user, _ in upserts}
    sys.stdout.write(f"Imported {len(upserts)} SCRAM credentials of {len(users)} users.\n")
    return 0


def parse_export_line(line: str):
    """(user, mechanism, credential) from a line of --export; ValueError saying what is wrong
    (never repeating the credential)."""
    fields = line.split()
    if len(fields) != 2:
        raise ValueError("expected '<user> <MECHANISM>=salt=...,stored_key=...,server_key=...,iterations=...'")
    user = desanitize(fields[0])
    name, equals, credential_text = fields[1].partition("=")
    mechanism = next((m for m in MECHANISMS if m.mechanism_name == name), None)
    if not equals or mechanism is None:
        raise ValueError(f"expected SCRAM-SHA-256=... or SCRAM-SHA-512=... after the user, not {name!r}")
    credential = credential_from_string(credential_text)
    # The same acceptance as an upsertion, so that what is stored could have come from Kafka.
    if not (MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS):
        raise ValueError(f"iterations must be from {MIN_ITERATIONS} to {MAX_ITERATIONS}, not {credential.iterations}")
    return user, mechanism, credential
