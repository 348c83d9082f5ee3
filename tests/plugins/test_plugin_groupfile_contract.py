"""The groupfile plugin held to Kafka's authorizer contract by the plugin author's kit."""

import pytest

import kafkasec_groupfile
from kafkasec.testing.contract import AuthorizerContract
from kafkasec.testing.vocabulary import Vocabulary


@pytest.fixture
def kafkasec_plugin():
    return kafkasec_groupfile


@pytest.fixture
def kafkasec_config(tmp_path):
    # Group:eng is one of the strategies' ACL principals: its members get its ACLs.
    groups = tmp_path / "groups.txt"
    groups.write_text("eng: alice, carol\n")
    return {"super.users": "User:admin", kafkasec_groupfile.PATH_SETTING: str(groups)}


class TestGroupfileContract(AuthorizerContract):
    # The group file's group and a member of it, which the contract cannot read from the file:
    # its fixed cases then grant the group, and ask as the member.
    vocabulary = Vocabulary(principals=("Group:eng", "User:carol"))
