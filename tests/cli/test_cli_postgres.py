"""The read commands on the state that ``kafkasec.state.url`` names in the --config file: a real
PostgreSQL (tests/postgres_support.py), written by the write commands, read back by each reader.

Each test runs in an empty directory, so a ./kafkasec.db fallback would find nothing: the reader
must go where the URL points, as the writer did.
"""

import json

import pytest

from kafkasec.cli import main

SECRET = "a-token-secret-shared-by-every-node"


@pytest.fixture
def run(postgres_url, tmp_path, monkeypatch, capsys):
    """``main`` with --config naming the test's PostgreSQL database; returns (status, out, err)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KAFKASEC_STATE", raising=False)
    config = tmp_path / "kafkasec.properties"
    config.write_text(f"kafkasec.state.url={postgres_url}\ndelegation.token.secret.key={SECRET}\n")

    def run(*argv):
        status = main(["--config", str(config), *argv])
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture
def with_acl(run):
    assert run("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")[0] == 0
    return run


def test_acls_list_reads_the_url(with_acl):
    status, out, err = with_acl("acls", "--list")
    assert (status, err) == (0, "")
    assert "principal=User:alice" in out and "name=orders" in out


def test_acls_check_reads_the_url(with_acl):
    status, out, err = with_acl("acls", "check", "--principal", "User:alice", "--operation", "Read", "--topic", "orders")
    assert (status, err) == (0, "")
    assert "ALLOWED" in out


def test_acls_export_reads_the_url(with_acl):
    status, out, err = with_acl("acls", "export")
    assert (status, err) == (0, "")
    assert "User:alice" in out and "orders" in out


def test_scram_describe_reads_the_url(run):
    assert run("scram", "--alter", "--entity-type", "users", "--entity-name", "alice",
               "--add-config", "SCRAM-SHA-256=[password=alice-secret]")[0] == 0
    status, out, err = run("scram", "--describe", "--entity-type", "users")
    assert (status, err) == (0, "")
    assert "alice" in out and "SCRAM-SHA-256" in out


def test_tokens_describe_reads_the_url(run):
    assert run("tokens", "--create", "--owner-principal", "User:alice")[0] == 0
    status, out, err = run("tokens", "--describe", "-o", "json")
    assert (status, err) == (0, "")
    assert [token["owner"] for token in json.loads(out)] == ["User:alice"]
