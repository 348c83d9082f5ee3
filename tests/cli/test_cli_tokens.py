"""``kafkasec tokens``: kafka-delegation-tokens.sh's flags and text on a state file, with the
broker's checks; bad input refused with nothing written."""

import json

import pytest

from kafkasec import KafkaPrincipal, KafkaSecurity
from kafkasec.cli import main
from kafkasec.scram.client import ScramClient

SECRET = "cli-secret"


@pytest.fixture
def cli(tmp_path, capsys):
    properties = tmp_path / "client.properties"
    state = tmp_path / "state.db"
    properties.write_text(f"delegation.token.secret.key={SECRET}\nkafkasec.state.path={state}\n", encoding="utf-8")

    def run(*argv, config=True):
        status = main((["--command-config", str(properties)] if config else ["--state", str(state)]) + ["tokens", *argv])
        out, err = capsys.readouterr()
        return status, out, err

    run.config = {"delegation.token.secret.key": SECRET, "kafkasec.state.path": str(state)}
    return run


def table_rows(out):
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("TOKENID"))
    return [line.split() for line in lines[header + 1:] if line.strip()]


def test_create_prints_kafkas_table_and_the_token_logs_in(cli):
    status, out, _ = cli("create", "--owner-principal", "User:alice", "--renewer-principal", "User:bob",
                         "--max-life-time-period", "3600000")
    assert status == 0
    assert "Calling create token operation with renewers :[User:bob] , max-life-time-period :3600000" in out
    [[token_id, hmac, owner, requester, renewers, *dates]] = table_rows(out)
    assert f"Created delegation token with tokenId : {token_id}" in out
    assert (owner, requester, renewers, len(dates)) == ("User:alice", "User:alice", "[User:bob]", 3)
    with KafkaSecurity.from_config(cli.config) as security:
        client = ScramClient("SCRAM-SHA-512", token_id, hmac, token_auth=True)
        server = security.scram_server("SCRAM-SHA-512")
        client.verify_server_final(server.evaluate_response(client.final_message(server.evaluate_response(client.first_message()))))
        assert security.build_principal(server.authentication_context("10.0.0.1")) == KafkaPrincipal.user("alice")


def test_flags_and_words_name_the_same_actions(cli):
    assert cli("--create", "--owner-principal", "User:alice")[0] == 0
    status, out, _ = cli("--describe")
    assert status == 0 and "Total number of tokens : 1" in out
    status, out, _ = cli("describe", "--owner-principal", "User:nobody")
    assert "Total number of tokens : 0" in out


def test_renew_and_expire_as_kafka_checks_them(cli):
    _, out, _ = cli("create", "--owner-principal", "User:alice", "--renewer-principal", "User:bob")
    [[_token_id, hmac, *_]] = table_rows(out)
    status, out, _ = cli("renew", "--hmac", hmac, "--renew-time-period", "60000", "--principal", "User:bob")
    assert status == 0 and "Completed renew operation. New expiry date : " in out
    status, _, err = cli("renew", "--hmac", hmac, "--principal", "User:carol")
    assert status == 1 and "DELEGATION_TOKEN_OWNER_MISMATCH (63)" in err
    status, out, _ = cli("expire", "--hmac", hmac, "--expiry-time-period", "-1")
    assert status == 0 and "Completed expire operation" in out
    status, _, err = cli("renew", "--hmac", hmac)
    assert status == 1 and "DELEGATION_TOKEN_NOT_FOUND (62)" in err


def test_describe_as_a_principal_shows_what_kafka_would(cli):
    cli("create", "--owner-principal", "User:alice", "--renewer-principal", "User:bob")
    cli("create", "--owner-principal", "User:carol")
    assert "Total number of tokens : 1" in cli("describe", "--principal", "User:bob")[1]
    assert "Total number of tokens : 0" in cli("describe", "--principal", "User:dave")[1]
    assert "Total number of tokens : 2" in cli("describe")[1]


def test_another_owner_needs_create_tokens(cli):
    status, _, err = cli("create", "--owner-principal", "User:alice", "--principal", "User:bob")
    assert status == 1 and "DELEGATION_TOKEN_AUTHORIZATION_FAILED (65)" in err
    assert "Total number of tokens : 0" in cli("describe")[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "exactly one action"),
        (["create", "--renew"], "exactly one action"),
        (["renew"], "--renew needs --hmac"),
        (["create", "--hmac", "abc"], "can't be used with option \"--hmac\""),
        (["describe", "--renewer-principal", "User:a"], "can't be used"),
        (["create", "--owner-principal", "alice"], "no ':'"),
        (["create"], "--owner-principal or --principal"),
        (["renew", "--hmac", "not base64!"], "not base64"),
    ],
)
def test_bad_command_lines_are_refused_and_write_nothing(cli, tmp_path, argv, message):
    status, _, err = cli(*argv)
    assert status in (1, 2) and message in err and err.startswith("kafkasec: error:")
    assert not (tmp_path / "state.db").exists()  # not even a state file was made


def test_without_a_secret_tokens_are_disabled(cli):
    status, _, err = cli("create", "--owner-principal", "User:alice", config=False)
    assert status == 1 and "DELEGATION_TOKEN_AUTH_DISABLED (61)" in err


def test_describe_as_json_and_csv(cli):
    assert cli("create", "--owner-principal", "User:alice", "--renewer-principal", "User:bob")[0] == 0
    status, out, _ = cli("describe", "-o", "json")
    [token] = json.loads(out)
    assert status == 0 and token["owner"] == "User:alice" and token["renewers"] == ["User:bob"]
    assert token["expiry_date"].endswith("+00:00") and len(token["hmac"]) > 40
    status, out, _ = cli("describe", "--output", "csv")
    assert out.splitlines()[0] == "token_id,hmac,owner,requester,renewers,issue_date,expiry_date,max_date"
    assert "Calling describe" not in out  # the records only


def test_tokens_off_names_the_setting_that_enables_them(cli):
    """Without delegation.token.secret.key tokens are off (61); the error says what turns them on."""
    status, _, err = cli("--create", "--owner-principal", "User:alice", config=False)
    assert status == 1 and err.count("\n") == 1
    assert "DELEGATION_TOKEN_AUTH_DISABLED (61)" in err
    assert "set delegation.token.secret.key in the --command-config file (the same on every node)" in err
