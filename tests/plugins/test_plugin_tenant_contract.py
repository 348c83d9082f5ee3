"""The tenant plugin held to Kafka's authorizer contract by the plugin author's kit, on
tenant principals: ACLs for ``Tenant:acme`` apply to ``User:acme/alice``."""

import pytest
from hypothesis import strategies as st

import kafkasec_tenant
from kafkasec import AclBinding, AclPermissionType, PatternType
from kafkasec.testing import strategies
from kafkasec.testing.contract import AuthorizerContract
from kafkasec.testing.vocabulary import Vocabulary

acl_principals = st.sampled_from(["User:acme/alice", "User:globex/alice", "Tenant:acme", "Tenant:globex", "User:*"])
query_principals = st.sampled_from(["User:acme/alice", "User:acme/bob", "User:globex/alice", "User:admin"])
bindings = st.builds(
    AclBinding.of,
    strategies.resource_types,
    strategies.names,
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    acl_principals,
    strategies.hosts,
    strategies.operations,
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]),
)
questions = st.tuples(query_principals, strategies.query_hosts, strategies.operations, strategies.resource_types, strategies.names)


@pytest.fixture
def kafkasec_plugin():
    return kafkasec_tenant


@pytest.fixture
def kafkasec_config():
    return {"super.users": "User:admin", kafkasec_tenant.ENABLED_SETTING: "true"}


class TestTenantContract(AuthorizerContract):
    # A tenant and users of it and of another: the fixed cases grant the tenant and ask as each.
    vocabulary = Vocabulary(principals=("Tenant:acme", "User:acme/alice", "User:globex/alice"))
    acls_and_questions = strategies.acls_and_questions(bindings=bindings, questions=questions)
