"""The kafkasec command on a running cluster: ``--bootstrap-server`` at a ``kafkasec serve``
process, logged in with SCRAM, PLAIN, OAUTHBEARER, a client certificate (SSL) and SCRAM over
TLS. The examples of Kafka's documentation for kafka-acls.sh, kafka-configs.sh and
kafka-delegation-tokens.sh print what they print on a state file (whose text the other CLI
tests pin to Kafka's) and have the same effect; a broken, silent or hostile server is one line.
"""

import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading

import pytest
from cryptography.x509.oid import NameOID

from kafkasec.acl import AclBindingFilter
from kafkasec.cli import main
from kafkasec.client import ClientSettings, ClusterAdmin
from kafkasec.errors import SaslAuthenticationError

from certificates import A, TestCertificateAuthority
from server_support import PASSWORDS, add_users, open_security

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
ADMIN_PLAIN_PASSWORD = "admin-plain"
SECRET = "cluster-test-secret"


def properties(**values) -> str:
    """A properties file's text; a keyword's underscores are the key's dots (literal keys go in ``literal``)."""
    literal = values.pop("literal", {})
    dotted = {key.replace("_", "."): value for key, value in values.items()}
    return "".join(f"{key}={value}\n" for key, value in {**dotted, **literal}.items())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A ``kafkasec serve`` process with SASL_PLAINTEXT, SSL and SASL_SSL listeners, and a
    client properties file per way of logging in as User:admin."""
    directory = tmp_path_factory.mktemp("cluster")
    ca = TestCertificateAuthority(directory)
    keystores = {}
    for name, common_name, ip in (("server", "localhost", "127.0.0.1"), ("admin", "admin", None)):
        key, certificate = ca.issue(name, A(NameOID.COMMON_NAME, common_name), ip=ip)
        keystores[name] = directory / f"{name}-keystore.pem"
        keystores[name].write_text(open(key).read() + open(certificate).read())
    with open_security(directory / "state.db") as security:
        add_users(security)
    (directory / "server.properties").write_text(properties(
        super_users="User:admin",
        delegation_token_secret_key=SECRET,
        listeners="SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        sasl_enabled_mechanisms="SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
        ssl_keystore_location=keystores["server"],
        ssl_truststore_location=ca.ca_file,
        ssl_principal_mapping_rules="RULE:^CN=(.*?)$/$1/,DEFAULT",
        literal={
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": f'{PLAIN} required user_admin="{ADMIN_PLAIN_PASSWORD}";',
            "listener.name.ssl.ssl.client.auth": "required",
        },
    ))
    (directory / "catalogue.json").write_text(json.dumps({
        "topics": [{"name": "Test-topic"}, {"name": "orders"}], "groups": [{"group_id": "Group-1"}],
    }))
    command = [sys.executable, "-m", "kafkasec.cli", "--state", str(directory / "state.db"), "--config",
               str(directory / "server.properties"), "serve", "--catalogue", str(directory / "catalogue.json")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=directory)
    listeners = {}
    try:
        for _ in range(3):
            line = process.stdout.readline()
            assert line.startswith("kafkasec serve: "), line + process.stderr.read()
            listeners[line.split()[2]] = line.split()[-1]
        logins = {
            "scram": properties(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                sasl_jaas_config=f'{SCRAM} required username="admin" password="{PASSWORDS["admin"]}";'),
            "plain": properties(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                sasl_jaas_config=f'{PLAIN} required username="admin" password="{ADMIN_PLAIN_PASSWORD}";'),
            "oauthbearer": properties(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                      sasl_jaas_config=f'{OAUTH} required unsecuredLoginStringClaim_sub="admin";'),
            "ssl": properties(security_protocol="SSL", ssl_truststore_location=ca.ca_file,
                              ssl_keystore_location=keystores["admin"]),
            "sasl_ssl": properties(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", ssl_truststore_location=ca.ca_file,
                                   sasl_jaas_config=f'{SCRAM} required username="admin" password="{PASSWORDS["admin"]}";'),
        }
        for name, text in logins.items():
            (directory / f"{name}.properties").write_text(text)
        yield Cluster(directory, listeners, ca)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0


LISTENER_OF = {"scram": "SASL_PLAINTEXT", "plain": "SASL_PLAINTEXT", "oauthbearer": "SASL_PLAINTEXT", "ssl": "SSL",
               "sasl_ssl": "SASL_SSL"}
LOGINS = tuple(LISTENER_OF)


class Cluster:
    def __init__(self, directory, listeners, ca):
        self.directory = directory
        self.listeners = listeners
        self.ca = ca

    def arguments(self, login: str) -> list[str]:
        """The global options that point the command at the cluster, logged in as ``login``."""
        return ["--bootstrap-server", self.listeners[LISTENER_OF[login]],
                "--command-config", str(self.directory / f"{login}.properties")]

    def admin(self, login: str = "scram") -> ClusterAdmin:
        with open(self.directory / f"{login}.properties") as file:
            values = dict(line.split("=", 1) for line in file.read().splitlines())
        return ClusterAdmin.connect(ClientSettings.from_properties(values, self.listeners[LISTENER_OF[login]]))


@pytest.fixture
def clean(cluster):
    """The cluster with no ACLs and no tokens, before and after the test."""

    def clear():
        with cluster.admin() as admin:
            admin.delete_acls([AclBindingFilter.ANY])
            for token in admin.describe_delegation_tokens():
                admin.expire_delegation_token(token.hmac, -1)

    clear()
    yield cluster
    clear()


def kafkasec(capsys, monkeypatch, *argv, stdin=None):
    import io

    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# The examples of Kafka's documentation (docs/security.html, "Authorization and ACLs": Examples).
ACL_EXAMPLES = [
    ["--add", "--allow-principal", "User:Bob", "--allow-principal", "User:Alice", "--allow-host", "198.51.100.0",
     "--allow-host", "198.51.100.1", "--operation", "Read", "--operation", "Write", "--topic", "Test-topic"],
    ["--add", "--allow-principal", "User:*", "--allow-host", "*", "--deny-principal", "User:BadBob", "--deny-host",
     "198.51.100.3", "--operation", "Read", "--topic", "Test-topic"],
    ["--add", "--allow-principal", "User:Jane", "--producer", "--topic", "Test-", "--resource-pattern-type", "prefixed"],
    ["--add", "--allow-principal", "User:Peter", "--allow-host", "198.51.200.1", "--producer", "--topic", "*"],
    ["--add", "--allow-principal", "User:Bob", "--producer", "--topic", "Test-topic"],
    ["--add", "--allow-principal", "User:Bob", "--consumer", "--topic", "Test-topic", "--group", "Group-1"],
    ["--add", "--allow-principal", "User:Bob", "--operation", "CreateTokens", "--user-principal", "User:Alice"],
    ["--list", "--topic", "Test-topic"],
    ["--list", "--topic", "Test-topic", "--resource-pattern-type", "match"],
    ["--list", "--topic", "*"],
    ["--list", "--principal", "User:Bob"],
    ["--remove", "--allow-principal", "User:Bob", "--allow-principal", "User:Alice", "--allow-host", "198.51.100.0",
     "--allow-host", "198.51.100.1", "--operation", "Read", "--operation", "Write", "--topic", "Test-topic"],
    ["--remove", "--allow-principal", "User:Jane", "--producer", "--topic", "Test-", "--resource-pattern-type", "Prefixed"],
    ["--remove", "--principal", "User:Peter"],
    ["--list"],
    ["--list", "-o", "json"],
]


@pytest.mark.parametrize("login", LOGINS)
def test_kafkas_acl_examples_print_and_do_on_a_cluster_what_they_do_on_a_state_file(clean, capsys, monkeypatch, tmp_path, login):
    offline = str(tmp_path / "offline.db")
    for example in ACL_EXAMPLES:
        answer = "y\n" if "--remove" in example else None
        on_cluster = kafkasec(capsys, monkeypatch, *clean.arguments(login), "acls", *example, stdin=answer)
        on_file = kafkasec(capsys, monkeypatch, "--state", offline, "acls", *example, stdin=answer)
        if "json" in example:  # the same ACLs; the source says where they are
            assert on_cluster[1].replace('"cluster"', '"store"') == on_file[1]
        else:
            assert on_cluster == on_file, example
    with clean.admin() as admin, open_security(offline) as security:
        assert sorted(map(str, admin.acls())) == sorted(map(str, security.acls())) != []


def test_the_questions_ask_the_clusters_acls(clean, capsys, monkeypatch):
    cluster = clean.arguments("scram")
    kafkasec(capsys, monkeypatch, *cluster, "acls", *ACL_EXAMPLES[0])
    allowed = kafkasec(capsys, monkeypatch, *cluster, "acls", "check", "--principal", "User:Bob", "--operation", "Read",
                       "--topic", "Test-topic", "--host", "198.51.100.1")
    denied = kafkasec(capsys, monkeypatch, *cluster, "acls", "check", "--principal", "User:Bob", "--operation", "Read",
                      "--topic", "Test-topic", "--host", "198.51.100.9")
    assert (allowed[0], allowed[1], denied[0], denied[1]) == (0, "ALLOWED\n", 1, "DENIED\n")
    status, out, _ = kafkasec(capsys, monkeypatch, *cluster, "acls", "authorized-ops", "--principal", "User:Alice",
                              "--topic", "Test-topic", "--host", "198.51.100.0", "-o", "json")
    assert status == 0 and json.loads(out)[0]["operations"] == ["READ", "WRITE", "DESCRIBE"]


def test_export_from_a_cluster_and_import_into_another_place(clean, capsys, monkeypatch, tmp_path):
    cluster = clean.arguments("scram")
    for example in ACL_EXAMPLES[:6]:
        kafkasec(capsys, monkeypatch, *cluster, "acls", *example)
    exported = tmp_path / "acls.json"
    assert kafkasec(capsys, monkeypatch, *cluster, "acls", "export", "--file", str(exported))[0] == 0
    status, out, _ = kafkasec(capsys, monkeypatch, "--state", str(tmp_path / "copy.db"), "acls", "import", str(exported))
    assert status == 0 and out.startswith("Imported 21 ACLs")
    with clean.admin() as admin:
        admin.delete_acls([AclBindingFilter.ANY])
    status, out, _ = kafkasec(capsys, monkeypatch, *cluster, "acls", "import", str(exported))
    assert (status, out) == (0, "Imported 21 ACLs (0 already existed).\n")
    with clean.admin() as admin, open_security(tmp_path / "copy.db") as copy:
        assert sorted(map(str, admin.acls())) == sorted(map(str, copy.acls()))


# docs/security.html, "Authentication using SASL/SCRAM": creating, describing and deleting credentials.
SCRAM_EXAMPLES = [
    ["--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]",
     "--entity-type", "users", "--entity-name", "alice"],
    ["--alter", "--add-config", f"SCRAM-SHA-512=[password={PASSWORDS['admin']}]", "--entity-type", "users", "--entity-name", "admin"],
    ["--describe", "--entity-type", "users", "--entity-name", "alice"],
    ["--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users", "--entity-name", "alice"],
    ["--describe", "--entity-type", "users", "--entity-name", "alice"],
]


@pytest.mark.parametrize("login", LOGINS)
def test_kafkas_scram_examples_on_a_cluster(cluster, capsys, monkeypatch, tmp_path, login):
    offline = str(tmp_path / "offline.db")
    for example in SCRAM_EXAMPLES:
        assert kafkasec(capsys, monkeypatch, *cluster.arguments(login), "scram", *example) == kafkasec(
            capsys, monkeypatch, "--state", offline, "scram", *example), example
    # The effect: alice logs in with the new password over SCRAM-SHA-256, and no longer over 512.
    def alice(mechanism):
        return ClientSettings.from_properties({
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{SCRAM} required username="alice" password="alice-secret";',
        }, cluster.listeners["SASL_PLAINTEXT"])

    ClusterAdmin.connect(alice("SCRAM-SHA-256")).close()
    with pytest.raises(SaslAuthenticationError):
        ClusterAdmin.connect(alice("SCRAM-SHA-512"))


TOKEN_LINE = re.compile(r"(\S+)\s+(\S+)\s+(User:\S+)\s+(User:\S+)\s+(\[.*?\])\s+\S+\s+\S+\s+\S+")


@pytest.mark.parametrize("login", LOGINS)
def test_kafkas_token_examples_on_a_cluster_the_login_owns_the_token(clean, capsys, monkeypatch, login):
    """docs/security.html, "Token Management": create, renew, expire and describe."""
    arguments = clean.arguments(login)
    status, out, _ = kafkasec(capsys, monkeypatch, *arguments, "tokens", "--create", "--max-life-time-period", "-1",
                              "--renewer-principal", "User:user1")
    assert status == 0 and out.startswith(
        "Calling create token operation with renewers :[User:user1] , max-life-time-period :-1\nCreated delegation token with tokenId : ")
    token_id, hmac, owner, requester, renewers = TOKEN_LINE.search(out.split("MAXDATE")[1]).groups()
    assert (owner, requester, renewers) == ("User:admin", "User:admin", "[User:user1]")
    status, out, _ = kafkasec(capsys, monkeypatch, *arguments, "tokens", "--describe", "--owner-principal", "User:admin")
    assert status == 0 and "Calling describe token operation for owners: [User:admin]" in out and token_id in out
    status, out, _ = kafkasec(capsys, monkeypatch, *arguments, "tokens", "--renew", "--renew-time-period", "-1", "--hmac", hmac)
    assert status == 0 and "Completed renew operation. New expiry date : " in out
    # The token logs in, as its owner (SCRAM with tokenauth=true).
    token_login = ClientSettings.from_properties({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": f'{SCRAM} required username="{token_id}" password="{hmac}" tokenauth=true;',
    }, clean.listeners["SASL_PLAINTEXT"])
    ClusterAdmin.connect(token_login).close()
    status, out, _ = kafkasec(capsys, monkeypatch, *arguments, "tokens", "--expire", "--expiry-time-period", "-1", "--hmac", hmac)
    assert status == 0 and "Completed expire operation." in out
    with pytest.raises(SaslAuthenticationError):
        ClusterAdmin.connect(token_login)
    status, out, _ = kafkasec(capsys, monkeypatch, *arguments, "tokens", "describe", "-o", "json")
    assert (status, json.loads(out)) == (0, [])


def test_a_user_without_the_acls_is_refused_in_kafkas_words(cluster, capsys, monkeypatch, tmp_path):
    alice = tmp_path / "alice.properties"
    alice.write_text(properties(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                sasl_jaas_config=f'{SCRAM} required username="alice" password="{PASSWORDS["alice"]}";'))
    where = ["--bootstrap-server", cluster.listeners["SASL_PLAINTEXT"], "--command-config", str(alice)]
    status, out, err = kafkasec(capsys, monkeypatch, *where, "acls", "--add", "--allow-principal", "User:alice",
                                "--operation", "All", "--topic", "orders")
    assert status == 1 and err.startswith("kafkasec: error: ") and "CLUSTER_AUTHORIZATION_FAILED" in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sasl.jaas.config": f'{SCRAM} required username="admin" password="wrong";'}, "Authentication failed"),
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism GSSAPI is not one kafkasec logs in with"),
        ({"security.protocol": "SSL"}, "no bootstrap server answered"),  # TLS spoken to a SASL_PLAINTEXT listener
        ({"request.timeout.ms": "soon"}, "request.timeout.ms must be a positive number"),
    ],
)
def test_bad_logins_are_one_line(cluster, capsys, monkeypatch, tmp_path, change, message):
    values = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.jaas.config": f'{SCRAM} required username="admin" password="{PASSWORDS["admin"]}";',
              "ssl.truststore.location": cluster.ca.ca_file, **change}
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    status, out, err = kafkasec(capsys, monkeypatch, "--bootstrap-server", cluster.listeners["SASL_PLAINTEXT"],
                                "--command-config", str(config), "acls", "--list")
    assert (status, out) == (1, "") and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["scram", "--export"], "--export and --import work on a state file"),
        (["tokens", "--describe", "--principal", "User:admin"], "--principal is for the state file"),
        (["serve"], "serve is a cluster's node"),
    ],
)
def test_what_only_a_state_file_has_is_refused_on_a_cluster(cluster, capsys, monkeypatch, argv, message):
    status, out, err = kafkasec(capsys, monkeypatch, *cluster.arguments("scram"), *argv)
    assert (status, out) == (1, "") and message in err


class HostileServer:
    """A listener on 127.0.0.1 that is not a Kafka server: it answers each connection with
    ``answer`` (then waits), or with nothing at all."""

    def __init__(self, answer: bytes | None):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.socket.getsockname()[1]}"
        self.answer = answer
        self.connections = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections.append(connection)
            connection.recv(65536)
            if self.answer is not None:
                connection.sendall(self.answer)
                if self.answer == b"":
                    connection.close()

    def close(self):
        self.socket.close()
        for connection in self.connections:
            connection.close()


@pytest.mark.parametrize(
    "answer, message",
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "announced a"),
        (b"\x7f\xff\xff\xff", "announced a 2147483647-byte answer"),
        (b"\x00\x00\x00\x08\x00\x00\x00\x01\xff\xff", "no bootstrap server answered"),  # a short, garbled frame, then silence
        (b"", "closed the connection before it answered"),
        (None, "did not answer within request.timeout.ms (300 ms)"),
    ],
    ids=["http", "huge-frame", "garbled", "closes", "silent"],
)
def test_a_server_that_is_not_kafka_is_one_line(capsys, monkeypatch, tmp_path, answer, message):
    server = HostileServer(answer)
    config = tmp_path / "client.properties"
    config.write_text("request.timeout.ms=300\n")
    try:
        status, out, err = kafkasec(capsys, monkeypatch, "--bootstrap-server", server.address,
                                    "--command-config", str(config), "acls", "--list")
    finally:
        server.close()
    assert (status, out) == (1, "") and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("config", [None, "security.protocol=PLAINTEXT\n"], ids=["no-config", "plaintext"])
def test_a_sasl_listener_without_client_properties_says_which_are_missing(cluster, capsys, monkeypatch, tmp_path, listener, config):
    arguments = ["--bootstrap-server", cluster.listeners[listener]]
    if config is not None:
        (tmp_path / "client.properties").write_text(config)
        arguments += ["--command-config", str(tmp_path / "client.properties")]
    status, out, err = kafkasec(capsys, monkeypatch, *arguments, "acls", "--list")
    assert (status, out) == (1, "") and err.count("\n") == 1
    assert "closed the connection" in err and err.endswith("; is security.protocol / sasl.mechanism set in --command-config?\n")


def test_nothing_listening_names_the_server(capsys, monkeypatch):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    status, _, err = kafkasec(capsys, monkeypatch, "--bootstrap-server", f"127.0.0.1:{port}", "acls", "--list")
    assert status == 1 and f"no bootstrap server answered: 127.0.0.1:{port}" in err


@pytest.mark.slow
def test_grid_from_the_cluster_equals_grid_from_its_state_file(clean, capsys, monkeypatch, tmp_path):
    pytest.importorskip("pyspark")
    from spark_udfs.spark import local_session

    cluster = clean.arguments("scram")
    for example in ACL_EXAMPLES[:7]:
        kafkasec(capsys, monkeypatch, *cluster, "acls", *example)
    (tmp_path / "principals.csv").write_text("principal,host\nUser:Bob,198.51.100.0\nUser:Alice,198.51.100.1\n"
                                             "User:BadBob,198.51.100.3\nUser:Peter,198.51.200.1\nUser:Jane,10.0.0.1\n")
    (tmp_path / "resources.csv").write_text("resource_type,resource_name\nTOPIC,Test-topic\nTOPIC,Test-other\n"
                                            "GROUP,Group-1\nUSER,User:Alice\nCLUSTER,kafka-cluster\n")
    inputs = ["--principals", str(tmp_path / "principals.csv"), "--resources", str(tmp_path / "resources.csv"),
              "--format", "csv"]
    spark = local_session("local[2]", "kafkasec-cluster-grid")  # kept for the three runs
    try:
        assert kafkasec(capsys, monkeypatch, *cluster, "grid", *inputs, "--output", str(tmp_path / "from-cluster"))[0] == 0
        assert kafkasec(capsys, monkeypatch, "--state", str(clean.directory / "state.db"), "grid", *inputs,
                        "--output", str(tmp_path / "from-file"))[0] == 0
        assert kafkasec(capsys, monkeypatch, *cluster, "grid", "--format", "csv", "--output", str(tmp_path / "all"))[0] == 0
        read = spark.read.option("header", True).csv
        from_cluster, from_file = read(str(tmp_path / "from-cluster")), read(str(tmp_path / "from-file"))
        assert sorted(map(tuple, from_cluster.collect())) == sorted(map(tuple, from_file.collect()))
        assert from_cluster.where("bitfield != 0").count() > 5
        # Without files: the principals of the cluster's ACLs against its topics, groups and cluster.
        everything = read(str(tmp_path / "all"))
        assert {row.resource_name for row in everything.collect()} == {"Test-topic", "orders", "Group-1", "kafka-cluster"}
        assert {row.principal for row in everything.collect()} == {"User:Bob", "User:Alice", "User:BadBob", "User:Jane", "User:Peter"}
    finally:
        spark.stop()
    shutil.rmtree(tmp_path / "all")


def test_the_cluster_example_of_docs_cli_md_runs_as_shown(clean, capsys, monkeypatch):
    import os
    import shlex

    docs = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "docs", "cli.md")
    with open(docs, encoding="utf-8") as file:
        example = file.read().split("```console\n")[2].split("```", 1)[0]
    sessions = example.split("$ ")[1:]
    assert len(sessions) == 2
    for session in sessions:
        command, expected = session.split("\n", 1)
        command = command.replace("localhost:9092", clean.listeners["SASL_PLAINTEXT"]).replace(
            "admin.properties", str(clean.directory / "scram.properties"))
        argv = shlex.split(command)
        assert argv[0] == "kafkasec"
        status, out, _ = kafkasec(capsys, monkeypatch, *argv[1:])
        assert (status, out.rstrip("\n")) == (0, expected.rstrip("\n"))
