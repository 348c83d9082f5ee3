"""The audit_jsonl plugin, writing its audit file, held to Kafka's authorizer contract by the
plugin author's kit: an auditor must leave every answer as it was."""

import pytest

import kafkasec_audit_jsonl
from kafkasec.testing.contract import AuthorizerContract


@pytest.fixture
def kafkasec_plugin():
    return kafkasec_audit_jsonl


@pytest.fixture
def kafkasec_config(tmp_path):
    return {"super.users": "User:admin", kafkasec_audit_jsonl.PATH_SETTING: str(tmp_path / "audit.jsonl")}


class TestAuditJsonlContract(AuthorizerContract):
    pass
