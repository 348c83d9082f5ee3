"""``kafkasec principal``: text and KIP-590 bytes (hex), through the serde hooks."""

import json
import os
import subprocess
import sys

import pytest

from kafkasec.cli import main

ALICE_HEX = "0000055573657206616c6963650000"


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_parse_splits_at_the_first_colon(capsys):
    status, out, _ = run(capsys, "principal", "parse", "User:a:b", "-o", "json")
    assert status == 0
    assert json.loads(out) == [{"principal": "User:a:b", "principal_type": "User", "name": "a:b", "token_authenticated": False}]


def test_serialize_gives_kafkas_bytes(capsys):
    assert run(capsys, "principal", "serialize", "User:alice")[1].strip() == ALICE_HEX
    token = run(capsys, "principal", "serialize", "User:alice", "--token-authenticated")[1].strip()
    assert token == ALICE_HEX[:-4] + "0100"


def test_deserialize_reads_hex_with_spaces(capsys):
    status, out, _ = run(capsys, "principal", "deserialize", "0000 05 55736572 06 616c696365 01 00", "-o", "csv")
    assert status == 0
    assert out.splitlines()[1] == "User:alice,User,alice,True"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["principal", "deserialize", "0001"], "PRINCIPAL_DESERIALIZATION_FAILURE (97): Invalid principal data version 1"),
        (["principal", "deserialize", "zz"], "not hexadecimal bytes"),
        (["principal", "parse", "alice"], "no ':' separates"),
        (["principal", "serialize", "alice"], "no ':' separates"),
    ],
)
def test_bad_input_is_one_line(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("kafkasec: error: ") and message in err


def test_no_state_file_is_created(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KAFKASEC_STATE", raising=False)
    run(capsys, "principal", "serialize", "User:alice")
    assert list(tmp_path.iterdir()) == []


def test_installed_command_round_trips(tmp_path):
    env = dict(os.environ, KAFKASEC_LOAD_PLUGINS="")
    command = [sys.executable, "-m", "kafkasec.cli", "principal"]
    serialized = subprocess.run(command + ["serialize", "Group:é"], env=env, capture_output=True, text=True, check=True)
    read = subprocess.run(
        command + ["deserialize", serialized.stdout.strip(), "-o", "json"], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(read.stdout)[0]["principal"] == "Group:é"
