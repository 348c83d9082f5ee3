"""The end-to-end demo on the embedded defaults: SQLite state, the in-process authorizer, the
reference plugins (group file, JSON-lines audit) and the `kafkasec` command.

Run: python examples/demo.py [--dir DIR]   (DIR is wiped and reused; default ./demo-state)

Each step prints what it did and checks the answer it expects, so the demo fails loudly
(non-zero exit) if kafkasec stops behaving like Kafka.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from kafkasec import (
    AclBinding,
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    PrincipalDeserializationError,
    RequestContext,
    ResourcePattern,
    operations_to_bitfield,
)

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED


def step(title: str) -> None:
    print(f"\n== {title}")


def expect(label: str, got, wanted) -> None:
    mark = "ok " if got == wanted else "FAIL"
    print(f"  [{mark}] {label}: {got}")
    if got != wanted:
        raise SystemExit(f"demo: {label}: expected {wanted}, got {got}")


def configure(workdir: Path) -> dict[str, str]:
    (workdir / "groups.txt").write_text("# group: members\neng: alice, bob\nsre: carol\n", encoding="utf-8")
    return {
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
        "kafkasec.state.path": str(workdir / "state.db"),
        "kafkasec.groupfile.path": str(workdir / "groups.txt"),
        "kafkasec.audit.jsonl.path": str(workdir / "audit.jsonl"),
        "kafkasec.audit.jsonl.fold.ms": "60000",
    }


def grant_acls(security: KafkaSecurity) -> None:
    step("ACLs, stored in SQLite")
    bindings = [
        AclBinding.of("TOPIC", "orders-", "PREFIXED", "Group:eng", "*", "READ", "ALLOW"),
        AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:bob", "*", "ALL", "DENY"),
        AclBinding.of("TOPIC", "orders-eu", "LITERAL", "User:alice", "10.0.0.1", "WRITE", "ALLOW"),
        AclBinding.of("GROUP", "billing", "LITERAL", "User:*", "*", "READ", "ALLOW"),
        AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "Group:sre", "*", "ALTER_CONFIGS", "ALLOW"),
        AclBinding.of("CLUSTER", "not-the-cluster", "LITERAL", "User:x", "*", "ALTER", "ALLOW"),
    ]
    for result in security.create_acls(bindings):
        outcome = result.error or f"created {result.acl_id}"
        print(f"  {result.binding.entry.principal:10} {result.binding.entry.operation.name:14} "
              f"{result.binding.pattern.resource_type.name}:{result.binding.pattern.name}: {outcome}")
    expect("ACLs stored (the bad CLUSTER name refused)", len(security.acls()), 5)


def ask(security: KafkaSecurity) -> None:
    step("Authorize, with the rule that decided")
    questions = [
        ("User:alice", "10.0.0.1", "READ", "orders-eu", ALLOWED),     # via Group:eng, prefixed
        ("User:alice", "10.0.0.1", "DESCRIBE", "orders-eu", ALLOWED),  # READ implies DESCRIBE
        ("User:alice", "10.0.0.2", "WRITE", "orders-eu", DENIED),      # host-specific ALLOW
        ("User:bob", "10.0.0.1", "READ", "orders-secret", DENIED),     # DENY beats the group ALLOW
        ("User:dave", "10.0.0.1", "READ", "orders-eu", DENIED),        # ACLs exist, none for dave
        ("User:dave", "10.0.0.1", "READ", "payments", DENIED),         # no ACL: allow.everyone=false
        ("User:admin", "10.0.0.9", "DELETE", "orders-secret", ALLOWED),  # super user
    ]
    for principal, host, op, topic, wanted in questions:
        context = RequestContext(KafkaPrincipal.parse(principal), host)
        decision = security.explain(context, Action(op, ResourcePattern("TOPIC", topic)))
        expect(f"{principal}@{host} {op} {topic}", decision.result, wanted)
        print(f"         because: {decision.rule}")


def kip430(security: KafkaSecurity) -> None:
    step("KIP-430 authorized operations and authorizeByResourceType")
    alice = RequestContext(KafkaPrincipal.user("alice"), "10.0.0.1")
    ops = security.authorized_operations(alice, ResourcePattern("TOPIC", "orders-eu"))
    expect("alice on orders-eu", sorted(op.name for op in ops), ["DESCRIBE", "READ", "WRITE"])
    expect("  as a bitfield", operations_to_bitfield(ops), (1 << 3) | (1 << 4) | (1 << 8))
    carol = RequestContext(KafkaPrincipal.user("carol"), "10.0.0.1")
    cluster_ops = security.authorized_operations(carol, ResourcePattern.cluster())
    expect("carol (sre) on the cluster", sorted(op.name for op in cluster_ops), ["ALTER_CONFIGS", "DESCRIBE_CONFIGS"])
    expect("dave may READ some TOPIC", security.authorize_by_resource_type(
        RequestContext(KafkaPrincipal.user("dave"), "10.0.0.1"), "READ", "TOPIC"), DENIED)
    # bob's DENY names one literal topic; his group's READ on the prefix still counts.
    expect("bob may READ some TOPIC", security.authorize_by_resource_type(
        RequestContext(KafkaPrincipal.user("bob"), "10.0.0.1"), "READ", "TOPIC"), ALLOWED)


def who_can(security: KafkaSecurity) -> None:
    step("Who can READ orders-secret?")
    grantees = security.who_can("READ", ResourcePattern("TOPIC", "orders-secret"))
    for grantee in grantees:
        print(f"  {grantee.principal} from {grantee.host} ({grantee.rule.value})")
    expect("grantees", [(g.principal, g.host) for g in grantees], [("User:admin", "*"), ("Group:eng", "*")])


def principal_bytes(security: KafkaSecurity) -> None:
    step("KIP-590: a principal as the bytes a forwarded request carries")
    alice = KafkaPrincipal.user("alice")
    data = security.serialize_principal(alice)
    expect("User:alice as Kafka's DefaultPrincipalData v0", data.hex(), "0000055573657206616c6963650000")
    expect("read back", security.deserialize_principal(data), alice)
    try:
        security.deserialize_principal(b"\x00\x07garbage")
    except PrincipalDeserializationError as error:
        expect("garbage refused with Kafka's error code", error.code, 97)
    else:
        raise SystemExit("demo: garbage principal bytes were accepted")


def restart(config: dict[str, str]) -> KafkaSecurity:
    step("Restart: the ACLs come back from SQLite")
    security = KafkaSecurity.from_config(config)
    expect("ACLs after restart", len(security.acls()), 5)
    return security


def audit(workdir: Path) -> None:
    step("Audit log (JSON lines; identical decisions folded into a count)")
    lines = [json.loads(line) for line in (workdir / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    for line in lines[:4]:
        print(f"  {line['principal']} {line['operation']} {line['resource_name']}: {line['result']} "
              f"x{line['count']} ({line['rule']})")
    expect("repeated denies folded", max(line["count"] for line in lines), 3)


def cli(workdir: Path) -> None:
    step("The kafkasec command on the same state file")
    command = [sys.executable, "-m", "kafkasec.cli", "--state", str(workdir / "state.db"), "acls"]
    check = subprocess.run(
        command + ["check", "--principal", "User:alice", "--host", "10.0.0.1", "--operation", "Write",
                   "--topic", "orders-eu", "--explain"],
        capture_output=True, text=True,
    )
    print("  " + check.stdout.strip().replace("\n", "\n  "))
    expect("kafkasec acls check exit code", check.returncode, 0)
    listing = subprocess.run(command + ["--list", "--topic", "orders-eu"], capture_output=True, text=True, check=True)
    print("  " + listing.stdout.strip().replace("\n", "\n  "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="demo-state", help="working directory (wiped first)")
    workdir = Path(parser.parse_args().dir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    config = configure(workdir)

    with KafkaSecurity.from_config(config) as security:
        grant_acls(security)
        ask(security)
        kip430(security)
        who_can(security)
        principal_bytes(security)
        # Three identical denied requests: the audit plugin writes them as one line, count 3.
        bob = RequestContext(KafkaPrincipal.user("bob"), "10.0.0.1")
        for _ in range(3):
            security.authorize(bob, [Action("READ", ResourcePattern("TOPIC", "orders-secret"))])
    with restart(config):
        pass
    audit(workdir)
    cli(workdir)
    print("\ndemo: all checks passed")


if __name__ == "__main__":
    main()
