"""No secret in any output: every secret-bearing input is driven through the failure paths that
could echo it, and every output is searched for it.

Secrets: a user's password and what SCRAM derives from it (salted password, client and server
keys, stored key, client proof, server signature), a delegation token's HMAC and the
``delegation.token.secret.key``, and the password in a PostgreSQL URL. Outputs: every log
record of every logger at DEBUG, with its traceback; the JSON-lines audit log; the CLI's stdout
and stderr; ``kafkasec serve``'s stderr; exception messages and reprs. Each is searched for the
secret itself and for its base64 and hex spellings.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import subprocess
import sys

import pytest

import kafkasec_audit_jsonl
from kafkasec import KafkaSecurity, RequestContext
from kafkasec.errors import KafkaError
from kafkasec.protocol import wire
from kafkasec.scram.client import ScramClient
from kafkasec.scram.credentials import ScramCredentialInfo, ScramFormatter, UserScramCredentialUpsertion
from kafkasec.server import KafkaConnection
from kafkasec.store import StateError, open_state_store

from cli_runner import Cli

PASSWORD = "pw-7c1e9f-secret"
SECRET_KEY = "master-4d2b-secret"
DB_PASSWORD = "dbpw-91aa-secret"
SALT = b"salt-for-the-sweep"
ITERATIONS = 4096
ADMIN = RequestContext.for_principal("User:admin", security_protocol="SASL_SSL")


def spellings(secret: bytes | str) -> set[str]:
    """A secret as it could show up in text: itself, base64 (standard and URL-safe), hex."""
    raw = secret.encode() if isinstance(secret, str) else secret
    found = {base64.b64encode(raw).decode().rstrip("="), base64.urlsafe_b64encode(raw).decode().rstrip("="), raw.hex()}
    if isinstance(secret, str):
        found.add(secret)
    return {text for text in found if len(text) >= 8}


def scram_secrets(mechanism: str = "SCRAM-SHA-256") -> set[str]:
    """Every value SCRAM derives from PASSWORD with SALT (RFC 5802's names)."""
    formatter = ScramFormatter(mechanism)
    digest = hashlib.sha256 if mechanism.endswith("256") else hashlib.sha512
    salted = formatter.salted_password(PASSWORD, SALT, ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    stored_key = digest(client_key).digest()
    return set().union(*(spellings(value) for value in (PASSWORD, salted, client_key, server_key, stored_key)))


class Outputs:
    """Everything a test run showed: log records, text it adds (CLI output, files, messages)."""

    def __init__(self, caplog):
        self._caplog = caplog
        self.texts: list[str] = []

    def add(self, *texts) -> None:
        self.texts.extend(str(text) for text in texts)

    def add_error(self, error: BaseException) -> None:
        self.add(error, repr(error), *(f"{name}={value!r}" for name, value in vars(error).items()))

    def shown(self) -> str:
        formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
        return "\n".join([*(formatter.format(record) for record in self._caplog.records), *self.texts])

    def assert_none_of(self, secrets: set[str]) -> None:
        shown = self.shown()
        leaked = sorted(secret for secret in secrets if secret in shown)
        assert not leaked, f"secrets shown: {leaked}"


@pytest.fixture
def outputs(caplog):
    caplog.set_level(logging.DEBUG)
    return Outputs(caplog)


@pytest.fixture
def security(tmp_path):
    config = {
        "super.users": "User:admin",
        "delegation.token.secret.key": SECRET_KEY,
        "kafkasec.state.path": str(tmp_path / "state.db"),
        kafkasec_audit_jsonl.PATH_SETTING: str(tmp_path / "audit.jsonl"),
        "connection.failed.authentication.delay.ms": "0",
    }
    with KafkaSecurity.from_config(config, plugins=[kafkasec_audit_jsonl]) as security:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            upsertion = UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, ITERATIONS), PASSWORD, salt=SALT)
            assert security.alter_user_scram_credentials([upsertion], context=ADMIN)[0].error is None
        yield security


def test_the_search_finds_a_planted_secret(outputs):
    """The control: a secret that is shown is found, in a log record and in added text."""
    logging.getLogger("kafkasec.test").debug("oops %s", base64.b64encode(PASSWORD.encode()).decode())
    with pytest.raises(AssertionError, match="secrets shown"):
        outputs.assert_none_of(spellings(PASSWORD))


def client_final_variants(first: bytes, proof: str) -> list[bytes]:
    """Malformed and wrong client-final messages around a real proof."""
    nonce = first.decode().split(",")[0][2:]
    return [
        f"c=biws,r={nonce},p={proof},junk".encode(),  # an extra attribute
        f"c=biws,r={nonce}x,p={proof}".encode(),  # a nonce that is not the server's
        f"c=eSws,r={nonce},p={proof}".encode(),  # channel binding that does not match
        f"c=biws,r={nonce},p={proof[:-3]}!!!".encode(),  # a proof that is not base64
        f"c=biws,r={nonce},p={proof}".encode() + b"\xff\xfe",  # not UTF-8
        f"c=biws,r={nonce},p={base64.b64encode(b'x' * 32).decode()}".encode(),  # a wrong proof
    ]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_failed_scram_logins_show_no_password_key_or_proof(security, outputs, mechanism):
    proofs: set[str] = set()
    for variant in range(-1, 6):  # -1: a wrong password; then each malformed final message
        client = ScramClient(mechanism, "alice", PASSWORD + "-not" if variant < 0 else PASSWORD)
        server = security.scram_server(mechanism)
        first = server.evaluate_response(client.first_message())
        final = client.final_message(first)
        proofs.add(final.decode().rsplit("p=", 1)[1])
        try:
            server.evaluate_response(final if variant < 0 else client_final_variants(first, final.decode().rsplit("p=", 1)[1])[variant])
        except KafkaError as error:
            outputs.add_error(error)
        outputs.add(repr(server), repr(client))
    outputs.assert_none_of(scram_secrets(mechanism) | set().union(*(spellings(proof) for proof in proofs)))


def test_malformed_client_first_messages_show_nothing_secret(security, outputs):
    for message in (b"n,,n=alice,r=abc,p=" + PASSWORD.encode(), b"y,,n=alice,x=" + PASSWORD.encode(), b"n,,n=alice\xff,r=" + PASSWORD.encode()):
        try:
            security.scram_server("SCRAM-SHA-256").evaluate_response(message)
        except KafkaError as error:
            outputs.add_error(error)
    outputs.assert_none_of(spellings(PASSWORD))


def test_token_paths_show_no_hmac_and_no_secret_key(security, outputs, tmp_path):
    token = security.create_delegation_token(ADMIN, owner=None)
    outputs.add(repr(token), repr(token.info), repr(security.delegation_tokens))
    for password in (base64.b64encode(b"wrong").decode(), token.hmac_as_base64 + "x"):
        client = ScramClient("SCRAM-SHA-256", token.token_id, password, token_auth=True)
        server = security.scram_server("SCRAM-SHA-256")
        try:
            server.evaluate_response(client.final_message(server.evaluate_response(client.first_message())))
        except KafkaError as error:
            outputs.add_error(error)
    for call in (
        lambda: security.renew_delegation_token(RequestContext.for_principal("User:bob", security_protocol="SASL_SSL"), token.hmac),
        lambda: security.expire_delegation_token(ADMIN, token.hmac + b"x"),
        lambda: security.renew_delegation_token(ADMIN, b"\x00" * 64),
    ):
        try:
            call()
        except KafkaError as error:
            outputs.add_error(error)
    assert security.describe_delegation_tokens(ADMIN)  # audited decisions, so the audit log has lines
    security.close()
    audit = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
    assert audit.count("\n") >= 1
    outputs.add(audit)
    outputs.assert_none_of(spellings(token.hmac) | spellings(token.hmac_as_base64) | spellings(SECRET_KEY))


def test_an_unreachable_postgresql_url_never_shows_its_password(outputs, tmp_path, capsys, monkeypatch):
    url = f"postgresql://kafkasec:{DB_PASSWORD}@127.0.0.1:1/kafkasec?connect_timeout=1"
    with pytest.raises(StateError) as refused:
        open_state_store(url)
    outputs.add_error(refused.value)
    status, out, err = Cli(url, capsys, monkeypatch)("acls", "--list")
    assert status == 1
    outputs.add(out, err)
    outputs.assert_none_of(spellings(DB_PASSWORD))


def test_cli_failures_show_no_password(tmp_path, outputs, capsys, monkeypatch):
    cli = Cli(str(tmp_path / "state.db"), capsys, monkeypatch)
    for argv, stdin in (
        (["scram", "--alter", "--entity-name", "alice", "--add-config", f"SCRAM-SHA-256=[iterations=1,password={PASSWORD}]"], None),
        (["scram", "--alter", "--entity-name", "", "--add-config", f"SCRAM-SHA-256=[password={PASSWORD}]"], None),
        (["scram", "--alter", "--entity-name", "alice", "--add-config", f"SCRAM-SHA-1=[password={PASSWORD}]"], None),
        (["scram", "--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=99999999]", "--password-stdin"], PASSWORD + "\n"),
        (["tokens", "--renew", "--hmac", base64.b64encode(PASSWORD.encode()).decode(), "--renew-time-period", "1"], None),
        (["tokens", "--expire", "--hmac", PASSWORD, "--expiry-time-period", "1"], None),
    ):
        status, out, err = cli(*argv, stdin=stdin)
        assert status != 0, (argv, out, err)
        outputs.add(out, err)
    outputs.assert_none_of(spellings(PASSWORD))


def test_serve_logs_no_secret_through_refused_logins(tmp_path):
    """``kafkasec serve`` at DEBUG, a wrong password, a mangled final message and a wrong token
    HMAC over the network: its stderr names the refusals and none of the secrets."""
    state = tmp_path / "state.db"
    properties = tmp_path / "server.properties"
    properties.write_text(f"super.users=User:admin\ndelegation.token.secret.key={SECRET_KEY}\n", encoding="utf-8")
    with KafkaSecurity.from_config({"kafkasec.state.path": str(state), "super.users": "User:admin",
                                    "delegation.token.secret.key": SECRET_KEY}) as security:
        upsertion = UserScramCredentialUpsertion("alice", ScramCredentialInfo("SCRAM-SHA-256", ITERATIONS), PASSWORD, salt=SALT)
        security.alter_user_scram_credentials([upsertion], context=ADMIN)
        token = security.create_delegation_token(ADMIN, owner=None)
    command = [sys.executable, "-m", "kafkasec.cli", "--state", str(state), "--config", str(properties),
               "serve", "--port", "0", "--log-level", "DEBUG"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    port = int(process.stdout.readline().rsplit(":", 1)[1])

    async def attempts():
        for user, password, token_auth, mangle in (
            ("alice", PASSWORD + "-not", False, False),
            ("alice", PASSWORD, False, True),
            (token.token_id, base64.b64encode(b"not-the-hmac").decode(), True, False),
        ):
            connection = await KafkaConnection.open("127.0.0.1", port)
            try:
                if mangle:
                    await connection.request(wire.build(wire.request_schema(17, 1), mechanism="SCRAM-SHA-256"))
                    client = ScramClient("SCRAM-SHA-256", user, password)
                    first = await connection._authenticate(client.first_message())
                    await connection._authenticate(client.final_message(first) + b",junk")
                else:
                    await connection.login("SCRAM-SHA-256", user, password, token_auth=token_auth)
            except KafkaError:
                pass
            finally:
                await connection.close()

    try:
        asyncio.run(attempts())
    finally:
        process.terminate()
        process.wait(10)
    log = process.stderr.read()
    assert log.count("login failed") == 3
    leaked = sorted(s for s in scram_secrets() | spellings(token.hmac) | spellings(SECRET_KEY) if s in log)
    assert not leaked, leaked
