"""ClusterAdmin against in-process endpoints: per-item refusals come back in the results, whole
refusals raise Kafka's errors, versions are negotiated, and groups are gathered from every broker."""

import pytest

from kafkasec import AclBinding, hookimpl
from kafkasec.acl import AclBindingFilter
from kafkasec.client import ClientSettings, ClusterAdmin
from kafkasec.errors import ClusterAuthorizationFailedError, InvalidRequestError, UnsupportedVersionError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import Catalogue

from server_support import PASSWORDS, add_users, open_security, serving

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def login_as(endpoint, user="admin", **extra) -> ClientSettings:
    return ClientSettings.from_properties({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": f'{SCRAM} required username="{user}" password="{PASSWORDS[user]}";', **extra,
    }, endpoint.bootstrap)


@pytest.fixture
def endpoint(tmp_path):
    with open_security(tmp_path / "state.db") as security:
        add_users(security)
        with serving(security) as endpoint:
            yield endpoint


def test_each_acl_is_answered_on_its_own(endpoint):
    good = AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    bad = AclBinding.of("CLUSTER", "not-the-cluster", "LITERAL", "User:alice", "*", "ALTER", "ALLOW")
    with ClusterAdmin.connect(login_as(endpoint)) as admin:
        assert admin.create_acls([]) == [] and admin.delete_acls([]) == []
        created = admin.create_acls([good, bad])
        assert created[0].error is None and isinstance(created[1].error, InvalidRequestError)
        assert admin.acls() == [good]
        [deleted] = admin.delete_acls([AclBindingFilter.ANY])
        assert deleted.bindings == (good,) and deleted.error is None


def test_a_whole_refusal_raises_kafkas_error(endpoint):
    with ClusterAdmin.connect(login_as(endpoint, "alice")) as admin:
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.acls()
        described = admin.describe_user_scram_credentials(["alice"])
        assert isinstance(described.error, ClusterAuthorizationFailedError)
        [created] = admin.create_acls([AclBinding.of("TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
        assert isinstance(created.error, ClusterAuthorizationFailedError)


def test_versions_are_the_highest_both_sides_speak(endpoint):
    with ClusterAdmin.connect(login_as(endpoint)) as admin:
        connection = admin._connection
        low, high = connection.server_versions[ApiKey.METADATA]
        assert connection.version_for(ApiKey.METADATA) == high
        connection.server_versions[ApiKey.DESCRIBE_ACLS] = (0, 1)
        assert connection.version_for(ApiKey.DESCRIBE_ACLS) == 1
        assert admin.acls() == []  # an older version, still read
        connection.server_versions[ApiKey.DESCRIBE_ACLS] = (0, 0)
        with pytest.raises(UnsupportedVersionError, match="speaks DESCRIBE_ACLS v0-v0; kafkasec v1-v3"):
            admin.acls()
        del connection.server_versions[ApiKey.DELETE_ACLS]
        with pytest.raises(UnsupportedVersionError, match="does not speak DELETE_ACLS"):
            admin.delete_acls([AclBindingFilter.ANY])


class TwoBrokerMetadata:
    """A plugin answering Metadata as a two-broker cluster: this endpoint and ``other``."""

    def __init__(self, brokers):
        self.brokers = brokers

    @hookimpl
    def kafkasec_api_handlers(self, security):
        def metadata(security, context, body, version):
            response_type = wire.response_schema(ApiKey.METADATA, version)
            broker_type = wire.item_type(response_type, "brokers")
            brokers = tuple(wire.build(broker_type, node_id=node_id, host=host, port=port)
                            for node_id, (host, port) in enumerate(self.brokers, start=1))
            return wire.build(response_type, brokers=brokers, cluster_id="two", controller_id=1, topics=())

        return {ApiKey.METADATA: metadata}


def test_groups_come_from_every_broker(tmp_path):
    brokers = []
    plugin = TwoBrokerMetadata(brokers)
    with open_security(tmp_path / "a.db", plugins=[plugin]) as first, open_security(tmp_path / "b.db") as second:
        add_users(first)
        add_users(second)
        with serving(first, Catalogue.of(groups=[{"group_id": "billing"}])) as one, \
                serving(second, Catalogue.of(groups=[{"group_id": "reports"}, {"group_id": "billing-2"}])) as two:
            brokers += [(one.host, one.port), (two.host, two.port)]
            with ClusterAdmin.connect(login_as(one)) as admin:
                assert admin.groups() == ["billing", "billing-2", "reports"]


def test_list_groups_shows_a_user_only_the_groups_it_may_describe(tmp_path):
    with open_security(tmp_path / "state.db") as security:
        add_users(security)
        security.create_acls([AclBinding.of("GROUP", "billing", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")])
        with serving(security) as endpoint:
            with ClusterAdmin.connect(login_as(endpoint, "alice")) as admin:
                assert admin.groups() == ["billing"]
            with ClusterAdmin.connect(login_as(endpoint, "admin")) as admin:
                assert admin.groups() == ["billing", "reports"]
