"""The forwarding_network reference plugin: forwarded requests only from allowed networks."""

import re
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest

import kafkasec_forwarding_network
from kafkasec import (
    AclBinding,
    AclOperation,
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    RequestContext,
    ResourcePattern,
    ResourceType,
    RuleKind,
)
from kafkasec.plugins import make_plugin_manager
from kafkasec.protocol import wire
from kafkasec.protocol.acl_apis import HANDLERS
from kafkasec.protocol.forwarding import EnvelopeAction, ForwardingExchange, open_envelope

import security_support

ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED
NAME = kafkasec_forwarding_network.NAME
NETWORKS = kafkasec_forwarding_network.NETWORKS_SETTING
OPERATIONS = kafkasec_forwarding_network.OPERATIONS_SETTING
RESOURCE_TYPES = kafkasec_forwarding_network.RESOURCE_TYPES_SETTING
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugin-forwarding-network.md"

CLUSTER = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
TOPIC = ResourcePattern(ResourceType.TOPIC, "orders")
ALTER_CLUSTER = Action(AclOperation.ALTER, CLUSTER)
CREATE_CLUSTER = Action(AclOperation.CREATE, CLUSTER)
ALTER_TOPIC = Action(AclOperation.ALTER, TOPIC)
READ_TOPIC = Action(AclOperation.READ, TOPIC)
EVERY_ACTION = [ALTER_CLUSTER, CREATE_CLUSTER, ALTER_TOPIC, READ_TOPIC]
POLICY = {NETWORKS: "10.0.0.0/8, fd00::/8", OPERATIONS: "ALTER"}
ADMIN_ACLS = [
    AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:admin", "*", "ALL", "ALLOW"),
    AclBinding.of("TOPIC", "*", "LITERAL", "User:admin", "*", "ALL", "ALLOW"),
]


@pytest.fixture
def open_security(monkeypatch):
    """Build KafkaSecurity instances with the plugin loaded through its entry point."""
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", NAME)
    opened = []

    def open_security(config, acls=ADMIN_ACLS):
        security = security_support.open_security(acls=acls, **config)
        opened.append(security)
        return security

    yield open_security
    for security in opened:
        security.close()


def forwarded(broker_address, principal="User:admin", client_address="192.168.1.20", broker="User:broker-1"):
    return RequestContext.for_principal(
        principal, client_address, forwarding_principal=KafkaPrincipal.parse(broker), forwarding_address=broker_address
    )


def authorize(security, context, actions=EVERY_ACTION):
    return security.authorize(context, actions)


def test_forwarded_from_inside_gets_the_acl_answer(open_security):
    security = open_security(POLICY)
    context = forwarded("10.1.2.3")
    assert authorize(security, context) == [ALLOWED] * 4
    assert security.decide(context, EVERY_ACTION) == security.authorizer.decide(context, EVERY_ACTION)
    stranger = forwarded("10.1.2.3", principal="User:mallory")
    assert authorize(security, stranger) == [DENIED] * 4
    assert security.explain(stranger, ALTER_CLUSTER).rule.kind is RuleKind.NO_MATCHING_ACL


def test_forwarded_from_outside_is_denied_with_the_plugins_provenance(open_security):
    security = open_security(POLICY)
    context = forwarded("192.0.2.7")
    assert authorize(security, context) == [DENIED, ALLOWED, DENIED, ALLOWED]
    decision = security.explain(context, ALTER_CLUSTER)
    assert decision.result is DENIED
    assert decision.authorizer == NAME
    assert decision.rule.kind is RuleKind.PLUGIN
    assert decision.rule.acl is None
    assert str(decision.rule) == (
        "forwarded by User:broker-1 from 192.0.2.7, outside the allowed networks 10.0.0.0/8, fd00::/8"
    )


def test_a_forwarded_request_without_an_address_is_outside(open_security):
    security = open_security(POLICY)
    context = forwarded(None)
    assert authorize(security, context) == [DENIED, ALLOWED, DENIED, ALLOWED]
    assert str(security.explain(context, ALTER_CLUSTER).rule) == (
        "forwarded by User:broker-1 with no forwarding address, outside the allowed networks 10.0.0.0/8, fd00::/8"
    )


@pytest.mark.parametrize("client_address", ["192.0.2.7", "10.0.0.1", "2001:db8::1"])
def test_a_request_that_was_not_forwarded_is_untouched(open_security, client_address):
    security = open_security(POLICY)
    context = RequestContext.for_principal("User:admin", client_address)
    assert security.decide(context, EVERY_ACTION) == security.authorizer.decide(context, EVERY_ACTION)
    assert authorize(security, context) == [ALLOWED] * 4


def test_unrestricted_actions_keep_the_acl_answer_even_from_outside(open_security):
    security = open_security(POLICY)
    outside = forwarded("192.0.2.7")
    for action in (CREATE_CLUSTER, READ_TOPIC):
        assert security.explain(outside, action) == security.authorizer.decide(outside, [action])[0]
    stranger = forwarded("192.0.2.7", principal="User:mallory")
    assert security.explain(stranger, READ_TOPIC).rule.kind is RuleKind.NO_MATCHING_ACL


def test_an_operation_or_a_resource_type_is_enough_to_restrict(open_security):
    security = open_security({NETWORKS: "10.0.0.0/8", OPERATIONS: "AlterConfigs", RESOURCE_TYPES: "BROKER"})
    outside = forwarded("192.0.2.7")
    alter_topic_configs = Action(AclOperation.ALTER_CONFIGS, TOPIC)
    actions = [ALTER_CLUSTER, CREATE_CLUSTER, alter_topic_configs, ALTER_TOPIC, READ_TOPIC]
    security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:admin", "*", "ALTER_CONFIGS", "ALLOW")])
    assert security.authorize(outside, actions) == [DENIED, DENIED, DENIED, ALLOWED, ALLOWED]
    assert security.authorize(forwarded("10.0.0.1"), actions) == [ALLOWED] * 5


def test_with_no_restriction_listed_every_forwarded_action_is_restricted(open_security):
    security = open_security({NETWORKS: "10.0.0.0/8"})
    assert authorize(security, forwarded("192.0.2.7")) == [DENIED] * 4
    assert authorize(security, forwarded("10.0.0.1")) == [ALLOWED] * 4


def test_super_users_are_restricted_too(open_security):
    security = open_security({"super.users": "User:root", **POLICY}, acls=[])
    assert security.explain(forwarded("10.0.0.1", principal="User:root"), ALTER_CLUSTER).rule.kind is RuleKind.SUPER_USER
    decision = security.explain(forwarded("192.0.2.7", principal="User:root"), ALTER_CLUSTER)
    assert (decision.result, decision.authorizer) == (DENIED, NAME)


def test_the_plugins_rule_is_reported_over_an_acl_deny(open_security):
    deny = AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:admin", "*", "ALTER", "DENY")
    security = open_security(POLICY, acls=[*ADMIN_ACLS, deny])
    assert security.explain(forwarded("10.0.0.1"), ALTER_CLUSTER).rule.kind is RuleKind.DENY_ACL
    assert security.explain(forwarded("192.0.2.7"), ALTER_CLUSTER).rule.kind is RuleKind.PLUGIN


def test_authorized_operations_leave_out_what_the_plugin_denies(open_security):
    security = open_security(POLICY)
    inside = security.authorized_operations(forwarded("10.0.0.1"), CLUSTER)
    outside = security.authorized_operations(forwarded("192.0.2.7"), CLUSTER)
    assert AclOperation.ALTER in inside
    assert outside == inside - {AclOperation.ALTER}


@pytest.mark.parametrize(
    "networks, broker_address, inside, shown_as",
    [
        ("fd00::/8", "fd12:3456::7", True, None),
        ("fd00::/8", "2001:db8::1", False, "2001:db8:0:0:0:0:0:1"),
        ("fd00::/8", "::1", False, "0:0:0:0:0:0:0:1"),
        ("fe80::/10", "fe80::1%2", True, None),
        ("2001:db8::7/128", "2001:db8::7", True, None),
        ("10.0.0.0/8", "::ffff:10.1.2.3", True, None),
        ("10.0.0.0/8", "::ffff:192.0.2.7", False, "192.0.2.7"),
        ("::ffff:10.0.0.0/104", "10.1.2.3", True, None),
        ("::ffff:10.0.0.0/104", "::ffff:10.1.2.3", True, None),
        ("::ffff:10.0.0.0/104", "192.0.2.7", False, "192.0.2.7"),
        ("::/0", "10.1.2.3", True, None),
        ("0.0.0.0/0", "2001:db8::1", False, "2001:db8:0:0:0:0:0:1"),
        ("10.0.0.7", "10.0.0.7", True, None),
        ("10.0.0.7", "10.0.0.8", False, "10.0.0.8"),
    ],
)
def test_ipv6_and_ipv4_mapped_addresses(open_security, networks, broker_address, inside, shown_as):
    security = open_security({NETWORKS: networks, OPERATIONS: "ALTER"})
    decision = security.explain(forwarded(broker_address), ALTER_CLUSTER)
    if inside:
        assert decision.rule.kind is RuleKind.ALLOW_ACL
    else:
        assert decision.result is DENIED
        assert f" from {shown_as}, " in str(decision.rule)


@pytest.mark.parametrize(
    "config, setting, message",
    [
        ({NETWORKS: "10.0.0.0/33"}, NETWORKS, "not a network in CIDR notation"),
        ({NETWORKS: "10.0.0.1/8"}, NETWORKS, "has host bits set"),
        ({NETWORKS: "private"}, NETWORKS, "'private'"),
        ({NETWORKS: "fe80::/10%eth0"}, NETWORKS, "CIDR"),
        ({NETWORKS: ""}, NETWORKS, "is empty"),
        ({NETWORKS: " , "}, NETWORKS, "is empty"),
        ({NETWORKS: "10.0.0.0/8,"}, NETWORKS, "empty item"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: "ALTER,,CREATE"}, OPERATIONS, "empty item"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: ""}, OPERATIONS, "is empty"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: "ALTER,FLY"}, OPERATIONS, "'FLY' is not a valid AclOperation"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: "7"}, OPERATIONS, "not a valid AclOperation"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: "ALL"}, OPERATIONS, "ALL is not an operation a request performs"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: "any"}, OPERATIONS, "ANY is not an operation"),
        ({NETWORKS: "10.0.0.0/8", OPERATIONS: "UNKNOWN"}, OPERATIONS, "UNKNOWN is not an operation"),
        ({NETWORKS: "10.0.0.0/8", RESOURCE_TYPES: "TABLE"}, RESOURCE_TYPES, "not a valid ResourceType"),
        ({NETWORKS: "10.0.0.0/8", RESOURCE_TYPES: "ANY"}, RESOURCE_TYPES, "ANY is not the type of a resource"),
        ({NETWORKS: "10.0.0.0/8", RESOURCE_TYPES: "Unknown"}, RESOURCE_TYPES, "UNKNOWN is not the type"),
        ({NETWORKS: "10.0.0.0/8", RESOURCE_TYPES: "CLUSTER,"}, RESOURCE_TYPES, "empty item"),
        ({OPERATIONS: "ALTER"}, OPERATIONS, f"{NETWORKS} is not"),
        ({RESOURCE_TYPES: "CLUSTER"}, RESOURCE_TYPES, f"{NETWORKS} is not"),
    ],
)
def test_a_bad_setting_fails_construction_naming_it(monkeypatch, config, setting, message):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", NAME)
    with pytest.raises(ValueError) as raised:
        KafkaSecurity.from_config(config)
    assert str(raised.value).startswith(setting)
    assert message in str(raised.value)


@pytest.mark.parametrize("setting", [NETWORKS, OPERATIONS, RESOURCE_TYPES])
def test_a_setting_that_is_not_a_string_is_a_type_error(monkeypatch, setting):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", NAME)
    with pytest.raises(TypeError, match=rf"^{re.escape(setting)} must be a comma-separated string"):
        KafkaSecurity.from_config({NETWORKS: "10.0.0.0/8", setting: ["ALTER"]})


def test_settings_are_read_as_documented(open_security):
    security = open_security({NETWORKS: " 10.0.0.0/8 ,fd00::/8,192.0.2.7", OPERATIONS: "alter, AlterConfigs", RESOURCE_TYPES: "broker"})
    policy = security.plugin_state[NAME]
    assert policy.describe_networks() == "10.0.0.0/8, fd00::/8, 192.0.2.7/32"
    assert policy.operations == {AclOperation.ALTER, AclOperation.ALTER_CONFIGS}
    assert policy.resource_types == {ResourceType.CLUSTER}


def registered_names(security):
    return [name for name, _ in security.plugin_manager.list_name_plugin()]


def test_unconfigured_the_plugin_registers_nothing(open_security):
    security = open_security({})
    assert NAME in registered_names(security), "loaded through its entry point"
    assert not [name for name in registered_names(security) if name.startswith(f"{NAME}:")]
    assert NAME not in security.plugin_state
    authorizers = [impl.plugin_name for impl in security.plugin_manager.hook.kafkasec_authorize.get_hookimpls()]
    assert authorizers == ["kafkasec.authorizer.plugin"]
    assert authorize(security, forwarded("192.0.2.7")) == [ALLOWED] * 4


def test_configured_it_wraps_authorize_until_close(open_security):
    security = open_security(POLICY)
    [guard] = [name for name in registered_names(security) if name.startswith(f"{NAME}:")]
    authorizers = [impl.plugin_name for impl in security.plugin_manager.hook.kafkasec_authorize.get_hookimpls()]
    assert guard in authorizers
    security.close()
    assert guard not in registered_names(security)


def test_a_shared_plugin_manager_applies_each_instances_own_policy(monkeypatch):
    monkeypatch.setenv("KAFKASEC_LOAD_PLUGINS", NAME)
    manager = make_plugin_manager()
    with (
        KafkaSecurity(config=POLICY, plugin_manager=manager) as guarded,
        KafkaSecurity(config={NETWORKS: "192.0.2.0/24"}, plugin_manager=manager) as other,
        KafkaSecurity(plugin_manager=manager) as open_node,
    ):
        for security in (guarded, other, open_node):
            security.create_acls(ADMIN_ACLS)
        context = forwarded("192.0.2.7")
        assert authorize(guarded, context) == [DENIED, ALLOWED, DENIED, ALLOWED]
        assert authorize(other, context) == [ALLOWED] * 4
        assert authorize(open_node, context) == [ALLOWED] * 4
        assert authorize(other, forwarded("10.0.0.1")) == [DENIED] * 4


def create_acls_frame(binding):
    pattern, entry = binding.pattern, binding.entry
    creation = AclCreation(
        resource_type=int(pattern.resource_type), resource_name=pattern.name,
        resource_pattern_type=int(pattern.pattern_type), principal=entry.principal, host=entry.host,
        operation=int(entry.operation), permission_type=int(entry.permission_type),
    )
    return wire.encode_request(CreateAclsRequest(creations=(creation,)), correlation_id=7, client_id="admin")


@pytest.mark.parametrize("broker_address, error_code", [("10.0.0.2", 0), ("192.0.2.7", 31)])
def test_an_acl_change_through_an_envelope(open_security, broker_address, error_code):
    """KIP-590's example end to end: the controller accepts CreateAcls forwarded from the private
    network and answers CLUSTER_AUTHORIZATION_FAILED (31) to the same request from outside."""
    settings = {"super.users": "User:broker-1", NETWORKS: "10.0.0.0/8", OPERATIONS: "ALTER"}
    broker, controller = open_security(settings), open_security(settings)
    admin = RequestContext.for_principal("User:admin", "192.168.1.20", client_id="admin")
    frame = create_acls_frame(AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"))
    envelope = ForwardingExchange(broker, admin, frame, now_ms=0).send_envelope(now_ms=0, correlation_id=1)
    opened = open_envelope(
        controller, RequestContext.for_principal("User:broker-1", broker_address), envelope, is_active_controller=True
    )
    assert opened.action is EnvelopeAction.HANDLE
    assert opened.context.forwarding_address == broker_address
    response = HANDLERS[opened.request.api_key](controller, opened.context, opened.request.body, opened.request.api_version)
    assert response.results[0].error_code == error_code


CONCRETE_OPERATIONS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL)]
RESOURCES = [
    CLUSTER,
    TOPIC,
    ResourcePattern(ResourceType.GROUP, "orders"),
    ResourcePattern(ResourceType.TRANSACTIONAL_ID, "orders"),
    ResourcePattern(ResourceType.DELEGATION_TOKEN, "orders"),
    ResourcePattern(ResourceType.USER, "User:alice"),
]
CONCRETE_TYPES = sorted({resource.resource_type for resource in RESOURCES})
ADDRESSES = [None, "10.1.2.3", "192.0.2.7", "::ffff:10.9.9.9", "::ffff:192.0.2.9", "fd00::5", "2001:db8::1", "fe80::1%2"]


def names(members):
    return st.lists(st.sampled_from(members), unique=True).map(lambda chosen: ",".join(m.name for m in chosen) or None)


policies = st.fixed_dictionaries(
    {
        NETWORKS: st.lists(
            st.sampled_from(["10.0.0.0/8", "fd00::/8", "::ffff:192.0.2.0/120", "fe80::/10", "2001:db8::1"]),
            min_size=1, unique=True,
        ).map(",".join),
        OPERATIONS: names(CONCRETE_OPERATIONS),
        RESOURCE_TYPES: names(CONCRETE_TYPES),
        "allow.everyone.if.no.acl.found": st.sampled_from(["true", "false"]),
        "super.users": st.just("User:root"),
    }
).map(lambda config: {key: value for key, value in config.items() if value is not None})
acls = st.lists(
    st.builds(
        lambda resource, literal, principal, operation, permission: AclBinding.of(
            resource.resource_type, resource.name if literal or resource is CLUSTER else "*", "LITERAL",
            principal, "*", operation, permission,
        ),
        st.sampled_from(RESOURCES),
        st.booleans(),
        st.sampled_from(["User:alice", "User:*"]),
        st.sampled_from([*CONCRETE_OPERATIONS, AclOperation.ALL]),
        st.sampled_from(["ALLOW", "DENY"]),
    ),
    max_size=6,
)
contexts = st.builds(
    lambda principal, client_address, forwarded_by, broker_address: RequestContext.for_principal(
        principal, client_address,
        forwarding_principal=None if forwarded_by is None else KafkaPrincipal.parse(forwarded_by),
        forwarding_address=broker_address,
    ),
    st.sampled_from(["User:alice", "User:bob", "User:root"]),
    st.sampled_from(["192.168.1.20", "10.0.0.1", "2001:db8::9"]),
    st.sampled_from([None, "User:broker-1"]),
    st.sampled_from(ADDRESSES),
)
actions = st.lists(st.builds(Action, st.sampled_from(CONCRETE_OPERATIONS), st.sampled_from(RESOURCES)), min_size=1, max_size=6)


@pytest.fixture(scope="module")
def shared_manager():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KAFKASEC_LOAD_PLUGINS", NAME)
        return make_plugin_manager()


@given(config=policies, bindings=acls, context=contexts, wanted=actions)
def test_the_plugin_never_turns_denied_into_allowed(shared_manager, config, bindings, context, wanted):
    with KafkaSecurity.from_config(config, plugin_manager=shared_manager) as security:
        security.create_acls(bindings)
        decisions = security.decide(context, wanted)
        without_plugin = security.authorizer.decide(context, wanted)
    if context.forwarding_principal is None:
        assert decisions == without_plugin
    for decision, unwrapped in zip(decisions, without_plugin, strict=True):
        assert decision.action == unwrapped.action
        if unwrapped.result is DENIED:
            assert decision.result is DENIED
        if decision != unwrapped:
            assert decision.result is DENIED
            assert (decision.authorizer, decision.rule.kind) == (NAME, RuleKind.PLUGIN)


def test_the_documented_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    for number, block in enumerate(blocks):
        exec(compile(block, f"{DOCS.name} block {number}", "exec"), {})


def test_the_documented_properties_are_the_settings():
    example = re.search(r"```properties\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S).group(1)
    settings = dict(line.split("=", 1) for line in example.splitlines())
    assert set(settings) <= {NETWORKS, OPERATIONS, RESOURCE_TYPES}
    policy = kafkasec_forwarding_network.ForwardingNetworkPolicy.from_config(settings)
    assert policy.describe_networks() == "10.0.0.0/8, fd00::/8"
    assert policy.operations == {AclOperation.ALTER}
