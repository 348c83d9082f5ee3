"""``kafkasec acls``: kafka-acls.sh's --add, --remove and --list, plus questions and files.

--add, --remove and --list follow Kafka's AclCommand rule for rule and print its text
(docs/cli.md lists where we are stricter). The subcommands check, who-can and authorized-ops
ask the authorizer; export and import move every stored ACL through a CSV or JSON file. Each
works on a state file or, with --bootstrap-server, on a running cluster: the ACL calls go
through :class:`StateFileAcls` or :class:`ClusterAcls`, and the questions are asked of the
cluster's ACLs copied into memory.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from functools import partial
from typing import Iterator

from kafkasec.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    operations_to_bitfield,
    supported_operations,
)
from kafkasec.authorizer.standard import STORE_SOURCE
from kafkasec.authorizer.validation import validate_new_acl
from kafkasec.cli.acl_files import FILE_FORMATS, file_format, read_acl_file
from kafkasec.cli.acl_warnings import warnings_for
from kafkasec.cli.config import on_cluster, open_cluster, open_security
from kafkasec.cli.options import (
    ACL_PATTERN_TYPES,
    CommandError,
    UsageError,
    client_host_options,
    option_parents,
    output_format,
    pattern_type,
    principal_argument,
    raise_first_error,
)
from kafkasec.cli.output import (
    ACL_FIELDS,
    binding_record,
    binding_sort_key,
    kafka_binding,
    kafka_entry_block,
    kafka_pattern,
    write_acls_by_resource,
    write_records,
)
from kafkasec.cli.output_paths import check_output_file
from kafkasec.context import Action, RequestContext
from kafkasec.errors import KafkaError

# Kafka's AclCommand messages, word for word.
NO_ACTION = "Command must include exactly one action: --list, --add, --remove."
NO_RESOURCE = (
    "You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
    "or --delegation-token <Delegation Token ID>"
)
NO_PRINCIPAL = "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
CONSUMER_NEEDS = (
    "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id "
    "option should be specified."
)

# --producer and --consumer: the operations each role is granted, per resource type.
PRODUCER_OPERATIONS = {
    ResourceType.TOPIC: (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.WRITE, AclOperation.DESCRIBE),
}
CONSUMER_OPERATIONS = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.DESCRIBE),
    ResourceType.GROUP: (AclOperation.READ,),
}

CURRENT_HEADING = "Current ACLs for resource"
CHECK_FIELDS = (
    "principal",
    "host",
    "operation",
    "resource_type",
    "resource_name",
    "result",
    "rule",
    "authorizer",
)
GRANTEE_FIELDS = ("principal", "host", "except_hosts", "except_principals", "rule")
AUTHORIZED_OPERATIONS_FIELDS = ("operations", "bitfield")

Acls = dict[ResourcePatternFilter, list[AccessControlEntry]]
"""Entries per resource (pattern filter), as kafka-acls.sh builds them for --add and --remove."""


# ---------------------------------------------------------------- the parser


def register(commands) -> None:
    """Add ``acls`` and its subcommands to the top-level subparsers."""
    shared = option_parents(None)
    nested = option_parents(argparse.SUPPRESS)
    parser = commands.add_parser(
        "acls",
        help="add, remove, list and question ACLs",
        description="Add, remove or list ACLs as kafka-acls.sh does, ask the authorizer about them "
        "(check, who-can, authorized-ops), or move them through a file (export, import).",
        parents=[
            nested.global_options,
            shared.resources,
            shared.operations,
            shared.principals,
            shared.output,
            shared.dry_run,
        ],
    )
    group = parser.add_argument_group("kafka-acls.sh actions and ACL options")
    flag = partial(group.add_argument, action="store_true")
    repeated = partial(group.add_argument, action="append")
    kafka_only = [
        flag("--add", help="add ACLs"),
        flag("--remove", help="remove ACLs"),
        flag("--list", help="list ACLs (of every resource when none is named)"),
        repeated("--allow-principal", type=principal_argument, help="a principal to allow, e.g. User:alice"),
        repeated("--deny-principal", type=principal_argument, help="a principal to deny"),
        repeated("--allow-host", help="a host the allowed principals may connect from (default *)"),
        repeated("--deny-host", help="a host the denied principals are refused from (default *)"),
        flag("--producer", help="a producer's ACLs: Write, Describe, Create on topics"),
        flag("--consumer", help="a consumer's ACLs: Read, Describe on topics, Read on groups"),
        flag("--idempotent", help="with --producer: IdempotentWrite on the cluster"),
        flag("--force", help="remove without asking"),
        flag("--strict", help="with --add: refuse an ACL that can never match (a warning otherwise)"),
        group.add_argument("--permission-type", choices=("allow", "deny"), type=str.lower,
                           help="with --list: only the ALLOW or the DENY ACLs"),
    ]
    parser.set_defaults(run=partial(run_acls, kafka_only=kafka_only), subcommand=None)

    subcommands = parser.add_subparsers(dest="acls_command", title="subcommands", metavar="SUBCOMMAND")
    question = [nested.global_options, nested.resources]
    check = subcommands.add_parser(
        "check",
        help="may a principal perform an operation on a resource? (exit 0 if allowed, 1 if denied)",
        parents=[*question, nested.operations, nested.principals, client_host_options(), nested.output],
    )
    check.add_argument(
        "--explain", action="store_true", help="also print the rule that decided, and the authorizer"
    )
    check.set_defaults(subcommand=run_check)
    who_can = subcommands.add_parser(
        "who-can",
        help="which principals, from which hosts, may perform an operation on a resource",
        parents=[*question, nested.operations, nested.output],
    )
    who_can.set_defaults(subcommand=run_who_can)
    authorized_ops = subcommands.add_parser(
        "authorized-ops",
        help="the operations a principal may perform on a resource (KIP-430), with their bitfield",
        parents=[*question, nested.principals, client_host_options(), nested.output],
    )
    authorized_ops.set_defaults(subcommand=run_authorized_operations)
    export = subcommands.add_parser(
        "export", help="write every stored ACL to a file or standard output", parents=[nested.global_options]
    )
    _add_format_option(export, "default: from the --file extension, else json")
    export.add_argument("--file", help="the file to write (default: standard output); never a state file")
    export.add_argument("--force", dest="export_force", action="store_true", help="write over --file if it exists")
    export.set_defaults(subcommand=run_export)
    import_ = subcommands.add_parser(
        "import",
        help="add every ACL of a file written by export, all or none",
        parents=[nested.global_options, nested.dry_run],
    )
    import_.add_argument("file", metavar="FILE", help="a CSV or JSON file of ACLs")
    _add_format_option(import_, "default: from the file's extension")
    import_.set_defaults(subcommand=run_import)


def _add_format_option(parser, default_help: str) -> None:
    parser.add_argument("--format", choices=FILE_FORMATS, help=f"the file format ({default_help})")


def run_acls(args, kafka_only) -> int:
    if args.subcommand is None:
        return run_kafka_action(args)
    for action in kafka_only:
        if getattr(args, action.dest) != action.default:
            raise UsageError(f"{action.option_strings[0]} cannot be used with `acls {args.acls_command}`")
    return args.subcommand(args)


# ---------------------------------------------------------------- kafka-acls.sh: --add, --remove, --list


def run_kafka_action(args) -> int:
    check_kafka_arguments(args)
    if args.add:
        return add_acls(args)
    if args.remove:
        return remove_acls(args)
    return list_acls(args)


def check_kafka_arguments(args) -> None:
    """AclCommandOptions.checkArgs: the option combinations kafka-acls.sh refuses, in its order."""
    if [args.add, args.remove, args.list].count(True) != 1:
        raise UsageError(NO_ACTION)
    _refuse_together(
        args, "list", ("producer", "consumer", "allow_host", "allow_principal", "deny_host", "deny_principal")
    )
    for role in ("producer", "consumer"):
        _refuse_together(args, role, ("operation", "deny_principal", "deny_host"))
    if args.principal and not (args.list or args.remove):
        raise UsageError("The --principal option is only available if --list or --remove is set")
    if args.permission_type and not args.list:
        raise UsageError("The --permission-type option is only available if --list is set")
    if args.producer and not args.topic:
        raise UsageError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topic or not args.group or (not args.producer and (args.cluster or args.transactional_id))
    ):
        raise UsageError(CONSUMER_NEEDS)


def _refuse_together(args, used: str, others) -> None:
    if not getattr(args, used):
        return
    for other in others:
        if getattr(args, other):
            raise UsageError(f'Option "{_flag(used)}" can\'t be used with option "{_flag(other)}"')


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def requested_resources(args) -> list[ResourcePatternFilter]:
    """The resources named on the command line, in kafka-acls.sh's order, without repeats."""
    named = [(ResourceType.TOPIC, topic.strip()) for topic in args.topic or ()]
    if args.cluster:
        named.append((ResourceType.CLUSTER, CLUSTER_NAME))
    named += [(ResourceType.GROUP, group.strip()) for group in args.group or ()]
    # kafka-acls.sh trims every resource name except transactional ids.
    named += [(ResourceType.TRANSACTIONAL_ID, name) for name in args.transactional_id or ()]
    named += [(ResourceType.DELEGATION_TOKEN, token.strip()) for token in args.delegation_token or ()]
    named += [(ResourceType.USER, user.strip()) for user in args.user_principal or ()]
    chosen_pattern_type = pattern_type(args)
    return list(dict.fromkeys(ResourcePatternFilter(rt, name, chosen_pattern_type) for rt, name in named))


def _required_resources(args) -> list[ResourcePatternFilter]:
    resources = requested_resources(args)
    if not resources:
        raise UsageError(NO_RESOURCE)
    return resources


def _pattern(resource: ResourcePatternFilter) -> ResourcePattern:
    """The pattern of one resource from :func:`requested_resources`, which names every resource."""
    assert resource.name is not None
    return ResourcePattern(resource.resource_type, resource.name, resource.pattern_type)


def requested_acls(args, resources: list[ResourcePatternFilter]) -> Acls:
    """kafka-acls.sh's entries per resource: from --operation, or the --producer/--consumer roles."""
    if not (args.producer or args.consumer):
        entries = access_entries(args, args.operation or [AclOperation.ALL])
        acls = {resource: entries for resource in resources}
    else:
        chosen_roles = ((args.producer, PRODUCER_OPERATIONS), (args.consumer, CONSUMER_OPERATIONS))
        roles = [role for chosen, role in chosen_roles if chosen]
        merged: dict[ResourcePatternFilter, dict[AccessControlEntry, None]] = {}
        for resource in resources:
            for role in roles:
                if resource.resource_type in role:
                    entries = access_entries(args, role[resource.resource_type])
                    merged.setdefault(resource, {}).update(dict.fromkeys(entries))
        if args.idempotent:
            # Kafka grants IdempotentWrite on the literal cluster whatever --resource-pattern-type says.
            entries = access_entries(args, [AclOperation.IDEMPOTENT_WRITE])
            merged[ResourcePattern.cluster().to_filter()] = dict.fromkeys(entries)
        acls = {resource: list(entries) for resource, entries in merged.items()}
    for resource, entries in acls.items():
        operations = [entry.operation for entry in entries]
        check_supported(resource.resource_type, operations, also_valid=(AclOperation.ALL,))
    return acls


def access_entries(args, operations) -> list[AccessControlEntry]:
    """Each principal x operation x host, allowed then denied; a principal without hosts gets '*'."""
    entries = []
    for permission_type, principals, hosts in (
        (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
        (AclPermissionType.DENY, args.deny_principal, args.deny_host),
    ):
        hosts = [host.strip() for host in hosts] if hosts else [WILDCARD_HOST]
        entries += [
            AccessControlEntry(principal, host, operation, permission_type)
            for principal in principals or ()
            for operation in operations
            for host in hosts
        ]
    return list(dict.fromkeys(entries))


def check_supported(resource_type: ResourceType, operations, also_valid=()) -> None:
    """UsageError, in Kafka's words, unless the resource type supports every operation."""
    valid = supported_operations(resource_type) | set(also_valid)
    if not set(operations) <= valid:
        names = ", ".join(op.name for op in sorted(valid))
        raise UsageError(f"ResourceType {resource_type.name} only supports operations [{names}]")


CLUSTER_SOURCE = "cluster"
"""The source column of an ACL listed from a cluster (DescribeAcls does not say more)."""


class StateFileAcls:
    """The ACL calls of add, remove, list, export and import, on a state file."""

    def __init__(self, security):
        self.security = security

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The stored ACLs the filter matches: what add, remove and export work on.

        Plugin-contributed ACLs are left out: delete_acls does not remove them, and exporting
        them would turn them into stored ones on import.
        """
        stored_acls = self.security.stored_acls(acl_filter)
        return [stored.binding for stored in stored_acls if stored.source == STORE_SOURCE]

    def listed(self, acl_filter: AclBindingFilter) -> list[tuple[AclBinding, str]]:
        """Every ACL the filter matches, with where it comes from (the store, or a plugin)."""
        return [(stored.binding, stored.source) for stored in self.security.stored_acls(acl_filter)]

    def create_acls(self, bindings):
        return self.security.create_acls(bindings)

    def delete_acls(self, filters):
        return self.security.delete_acls(filters)


class ClusterAcls:
    """The same calls on a running cluster, by DescribeAcls, CreateAcls and DeleteAcls."""

    def __init__(self, admin):
        self.admin = admin

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return self.admin.acls(acl_filter)

    def listed(self, acl_filter: AclBindingFilter) -> list[tuple[AclBinding, str]]:
        return [(binding, CLUSTER_SOURCE) for binding in self.admin.acls(acl_filter)]

    def create_acls(self, bindings):
        return self.admin.create_acls(bindings)

    def delete_acls(self, filters):
        return self.admin.delete_acls(filters)


@contextlib.contextmanager
def acl_target(args, *, writes: bool = False) -> Iterator[StateFileAcls | ClusterAcls]:
    """Where the command's ACLs are: the cluster --bootstrap-server names, else the state file."""
    if on_cluster(args):
        with open_cluster(args) as admin:
            yield ClusterAcls(admin)
    else:
        with open_security(args, writes=writes) as security:
            yield StateFileAcls(security)


def add_acls(args) -> int:
    chosen_pattern_type = pattern_type(args)
    if chosen_pattern_type not in ACL_PATTERN_TYPES:
        raise UsageError(
            f"A '--resource-pattern-type' value of '{chosen_pattern_type.name}' is not valid when adding acls."
        )
    if args.cluster and chosen_pattern_type is PatternType.PREFIXED:
        # kafka-acls.sh silently drops --cluster here; saying so is kinder.
        raise UsageError(
            "--cluster cannot be added with --resource-pattern-type PREFIXED: "
            "the cluster resource is always the literal kafka-cluster"
        )
    acls = requested_acls(args, _required_resources(args))
    if not all(acls.values()):
        raise UsageError(NO_PRINCIPAL)
    bindings_by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
    for resource, entries in acls.items():
        pattern = _pattern(resource)
        bindings_by_pattern[pattern] = [AclBinding(pattern, entry) for entry in entries]
        for binding in bindings_by_pattern[pattern]:
            try:
                validate_new_acl(binding)
            except KafkaError as error:  # e.g. an empty --topic: refuse it before anything is stored
                raise UsageError(error.message) from None

    warnings = warnings_for(binding for bindings in bindings_by_pattern.values() for binding in bindings)
    if warnings and args.strict:
        raise UsageError(f"{warnings[0]} (--strict)")
    for warning in warnings:
        sys.stderr.write(f"kafkasec: warning: {warning}\n")
    output, out = output_format(args), sys.stdout
    verb = "Would add" if args.dry_run else "Adding"
    added: list[AclBinding] = []
    with acl_target(args, writes=True) as target:
        for pattern, bindings in bindings_by_pattern.items():
            existing = set(target.acls(AclBindingFilter(pattern.to_filter())))
            fresh = [binding for binding in bindings if binding not in existing]
            if output == "table":
                for binding in bindings:
                    if binding in existing:
                        out.write(f"Acl {kafka_binding(binding)} already exists.\n")
                if fresh:
                    block = kafka_entry_block(binding.entry for binding in fresh)
                    out.write(f"{verb} ACLs for resource `{kafka_pattern(pattern)}`: {block}\n")
            added += fresh
        if not args.dry_run:
            raise_first_error(target.create_acls(added))
    if output != "table":
        write_records(out, ACL_FIELDS, [binding_record(binding) for binding in added], output)
    return 0


def remove_acls(args) -> int:
    if args.principal:
        return _remove_principals_acls(args)
    acls = requested_acls(args, _required_resources(args))
    if not (args.force or args.dry_run):
        for resource, entries in acls.items():
            if not confirm(_removal_question(resource, entries)):
                raise CommandError("aborted: no ACLs were removed")
    filters = [
        AclBindingFilter(resource, entry_filter)
        for resource, entries in acls.items()
        for entry_filter in [entry.to_filter() for entry in entries] or [AccessControlEntryFilter()]
    ]
    return _remove(args, filters)


def _remove_principals_acls(args) -> int:
    """``--remove --principal P``: every ACL that names P, on the resources given or on all."""
    if args.allow_principal or args.deny_principal or args.operation:
        raise UsageError("--remove --principal removes every ACL of the principal: it takes no "
                         "--allow-principal, --deny-principal or --operation")
    resources = requested_resources(args) or [ResourcePatternFilter()]
    principals = list(dict.fromkeys(args.principal))
    if not (args.force or args.dry_run):
        where = "every resource" if resources == [ResourcePatternFilter()] else ", ".join(
            f"`{kafka_pattern(resource)}`" for resource in resources)
        if not confirm(f"Are you sure you want to remove all ACLs of {', '.join(principals)} on {where}? (y/n)"):
            raise CommandError("aborted: no ACLs were removed")
    filters = [
        AclBindingFilter(resource, AccessControlEntryFilter(principal=principal))
        for resource in resources
        for principal in principals
    ]
    return _remove(args, filters)


def _remove(args, filters: list[AclBindingFilter]) -> int:
    """Delete what ``filters`` match (or, with --dry-run, say what it would) and print it."""
    with acl_target(args, writes=True) as target:
        if args.dry_run:
            removed = [binding for acl_filter in filters for binding in target.acls(acl_filter)]
        else:
            results = target.delete_acls(filters)
            raise_first_error(results)
            removed = [binding for result in results for binding in result.bindings]
    output = output_format(args)
    if output == "table":
        heading = "Would remove ACLs for resource" if args.dry_run else "Removed ACLs for resource"
        write_acls_by_resource(sys.stdout, heading, removed)
    else:
        records = [binding_record(binding) for binding in sorted(set(removed), key=binding_sort_key)]
        write_records(sys.stdout, ACL_FIELDS, records, output)
    return 0


def _removal_question(resource: ResourcePatternFilter, entries: list[AccessControlEntry]) -> str:
    resource_filter = kafka_pattern(resource)
    if not entries:
        return f"Are you sure you want to delete all ACLs for resource filter `{resource_filter}`? (y/n)"
    block = kafka_entry_block(entries)
    return f"Are you sure you want to remove ACLs: {block} from resource filter `{resource_filter}`? (y/n)"


def confirm(question: str) -> bool:
    """Ask on standard error (standard output may be JSON); only y or Y is yes, end of input is no."""
    sys.stderr.write(question + "\n")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() == "y"


def list_acls(args) -> int:
    filters = requested_resources(args) or [ResourcePatternFilter()]
    with acl_target(args) as target:
        # Keyed by ACL and source: filters may overlap (a topic and ANY), an ACL is listed once.
        listed = dict.fromkeys(item for resource in filters for item in target.listed(AclBindingFilter(resource)))
    principals = args.principal or []
    # kafka-acls.sh ignores --operation when listing; here it, and --permission-type, narrow the list.
    operations, permission = set(args.operation or ()), args.permission_type
    chosen = [
        (binding, source)
        for binding, source in listed
        if (not operations or binding.entry.operation in operations)
        and (permission is None or binding.entry.permission_type.name == permission.upper())
    ]
    output, out = output_format(args), sys.stdout
    if output == "table":
        bindings = [binding for binding, _ in chosen]
        if not principals:
            write_acls_by_resource(out, CURRENT_HEADING, bindings)
        for principal in principals:
            out.write(f"ACLs for principal `{principal}`\n")
            of_principal = [binding for binding in bindings if binding.entry.principal == principal]
            write_acls_by_resource(out, CURRENT_HEADING, of_principal)
        return 0
    shown = [(binding, source) for binding, source in chosen if not principals or binding.entry.principal in principals]
    records = [
        {**binding_record(binding), "source": source}
        for binding, source in sorted(shown, key=lambda item: (binding_sort_key(item[0]), item[1]))
    ]
    write_records(out, (*ACL_FIELDS, "source"), records, output)
    return 0


# ---------------------------------------------------------------- questions: check, who-can, authorized-ops


def _one_resource(args) -> ResourcePattern:
    resources = requested_resources(args)
    if len(resources) != 1:
        raise UsageError(
            f"{args.acls_command} needs exactly one resource: --topic, --group, --cluster, "
            "--transactional-id, --delegation-token or --user-principal"
        )
    if pattern_type(args) is not PatternType.LITERAL:
        raise UsageError(
            f"{args.acls_command} asks about one named resource: --resource-pattern-type must be literal"
        )
    return _pattern(resources[0])


def _one(args, dest: str):
    values = getattr(args, dest) or []
    if len(values) != 1:
        raise UsageError(f"{args.acls_command} needs exactly one {_flag(dest)}")
    return values[0]


def run_check(args) -> int:
    pattern = _one_resource(args)
    operation = _one(args, "operation")
    check_supported(pattern.resource_type, [operation])
    context = RequestContext.for_principal(_one(args, "principal"), args.host)
    with open_security(args) as security:
        decision = security.explain(context, Action(operation, pattern))
    output, out = output_format(args), sys.stdout
    if output == "table":
        out.write(f"{decision.result.value}\n")
        if args.explain:
            out.write(f"rule: {decision.rule}\nauthorizer: {decision.authorizer}\n")
    else:
        record = {
            "principal": str(context.principal),
            "host": context.client_address,
            "operation": operation.name,
            "resource_type": pattern.resource_type.name,
            "resource_name": pattern.name,
            "result": decision.result.value,
            "rule": str(decision.rule),
            "authorizer": decision.authorizer,
        }
        write_records(out, CHECK_FIELDS, [record], output)
    return 0 if decision.allowed else 1


def run_who_can(args) -> int:
    pattern = _one_resource(args)
    operation = _one(args, "operation")
    check_supported(pattern.resource_type, [operation])
    with open_security(args) as security:
        grantees = security.who_can(operation, pattern)
    records = [
        {
            "principal": grantee.principal,
            "host": grantee.host,
            "except_hosts": list(grantee.except_hosts),
            "except_principals": list(grantee.except_principals),
            "rule": grantee.rule.value,
        }
        for grantee in grantees
    ]
    write_records(sys.stdout, GRANTEE_FIELDS, records, output_format(args))
    return 0


def run_authorized_operations(args) -> int:
    pattern = _one_resource(args)
    context = RequestContext.for_principal(_one(args, "principal"), args.host)
    with open_security(args) as security:
        operations = sorted(security.authorized_operations(context, pattern))
    record = {"operations": [op.name for op in operations], "bitfield": operations_to_bitfield(operations)}
    write_records(sys.stdout, AUTHORIZED_OPERATIONS_FIELDS, [record], output_format(args))
    return 0


# ---------------------------------------------------------------- files: export, import


def run_export(args) -> int:
    chosen_format = file_format(args.format, args.file, default="json")
    if args.file is not None:
        check_output_file(args.file, force=args.export_force)
    with acl_target(args) as target:
        bindings = sorted(target.acls(AclBindingFilter.ANY), key=binding_sort_key)
    records = [binding_record(binding) for binding in bindings]
    if args.file is None:
        write_records(sys.stdout, ACL_FIELDS, records, chosen_format)
        return 0
    with open(args.file, "w", newline="", encoding="utf-8") as file:
        write_records(file, ACL_FIELDS, records, chosen_format)
    sys.stdout.write(f"Exported {len(records)} ACLs to {args.file}.\n")
    return 0


def run_import(args) -> int:
    unique = list(dict.fromkeys(read_acl_file(args.file, file_format(args.format, args.file))))
    with acl_target(args, writes=True) as target:
        existing = set(target.acls(AclBindingFilter.ANY))
        new = [binding for binding in unique if binding not in existing]
        if not args.dry_run:
            raise_first_error(target.create_acls(new))
    existed = len(unique) - len(new)
    if args.dry_run:
        write_acls_by_resource(sys.stdout, "Would import ACLs for resource", new)
        sys.stdout.write(f"Would import {len(new)} ACLs ({existed} already exist); nothing was changed.\n")
    else:
        sys.stdout.write(f"Imported {len(new)} ACLs ({existed} already existed).\n")
    return 0
