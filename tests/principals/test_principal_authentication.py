"""KafkaPrincipal (SecurityUtils.parseKafkaPrincipal, KafkaPrincipal.equals), RequestContext's
client address as Java's InetAddress.getHostAddress() prints it, Action and AuthorizationResult.
"""

from __future__ import annotations

import ipaddress
import pickle

import attrs
import pytest
from hypothesis import given, strategies as st

from kafkasec import (
    AclOperation,
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    PatternType,
    RequestContext,
    ResourcePattern,
    ResourceType,
)
from kafkasec.context import java_host_address
from kafkasec.principals.principal import ANONYMOUS, USER_TYPE

# --------------------------------------------------------------------------------------------
# KafkaPrincipal
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,principal_type,name",
    [
        ("User:alice", "User", "alice"),
        ("User:a:b", "User", "a:b"),
        ("User:", "User", ""),
        (":alice", "", "alice"),
        (":", "", ""),
        ("Group:eng", "Group", "eng"),
        ("User:*", "User", "*"),
        ("User:CN=alice,OU=eng,O=acme", "User", "CN=alice,OU=eng,O=acme"),
        ("User:alice@EXAMPLE.COM", "User", "alice@EXAMPLE.COM"),
        ("User: alice ", "User", " alice "),  # no trimming: Kafka splits, nothing else
        ("user:alice", "user", "alice"),  # type is case-sensitive and kept as given
        ("User::", "User", ":"),
        ("User:ünïcödé", "User", "ünïcödé"),
    ],
)
def test_parse(text, principal_type, name):
    p = KafkaPrincipal.parse(text)
    assert (p.principal_type, p.name) == (principal_type, name)
    assert p.token_authenticated is False
    assert str(p) == text


@pytest.mark.parametrize("text", ["", "alice", "User", "User alice", "User;alice"])
def test_parse_without_colon_is_a_value_error(text):
    with pytest.raises(ValueError) as info:
        KafkaPrincipal.parse(text)
    assert repr(text) in str(info.value)
    assert "':'" in str(info.value)


@pytest.mark.parametrize("value", [None, 1, b"User:alice", ["User", "alice"], KafkaPrincipal("User", "a")], ids=repr)
def test_parse_of_non_str_is_a_type_error(value):
    with pytest.raises(TypeError):
        KafkaPrincipal.parse(value)


def test_user_and_anonymous():
    assert USER_TYPE == "User"
    assert KafkaPrincipal.user("alice") == KafkaPrincipal("User", "alice")
    assert str(KafkaPrincipal.user("alice")) == "User:alice"
    assert ANONYMOUS == KafkaPrincipal("User", "ANONYMOUS")
    assert str(ANONYMOUS) == "User:ANONYMOUS"


def test_fields_are_type_checked():
    with pytest.raises(TypeError):
        KafkaPrincipal(None, "alice")
    with pytest.raises(TypeError):
        KafkaPrincipal("User", None)
    with pytest.raises(TypeError):
        KafkaPrincipal("User", 1)
    with pytest.raises(TypeError):
        KafkaPrincipal("User", "alice", token_authenticated=1)
    with pytest.raises(TypeError):
        KafkaPrincipal("User", "alice", token_authenticated="yes")


def test_equality_and_hash_ignore_token_authenticated():
    plain = KafkaPrincipal("User", "alice")
    token = KafkaPrincipal("User", "alice", token_authenticated=True)
    assert token.token_authenticated is True
    assert plain == token
    assert hash(plain) == hash(token)
    assert len({plain, token}) == 1
    assert {plain: "x"}[token] == "x"
    assert plain != KafkaPrincipal("User", "bob")
    assert plain != KafkaPrincipal("Group", "alice")
    assert plain != KafkaPrincipal("User", "Alice")
    assert plain != "User:alice"  # a principal is not its string


def test_principal_is_frozen_and_picklable():
    p = KafkaPrincipal("User", "alice", token_authenticated=True)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.name = "bob"
    q = pickle.loads(pickle.dumps(p))
    assert q == p
    assert q.token_authenticated is True


principal_types = st.text(max_size=10).filter(lambda t: ":" not in t)
principal_names = st.text(max_size=20)


@given(principal_types, principal_names, st.booleans())
def test_str_parse_round_trip(principal_type, name, token):
    p = KafkaPrincipal(principal_type, name, token_authenticated=token)
    assert str(p) == f"{principal_type}:{name}"
    assert KafkaPrincipal.parse(str(p)) == p


@given(st.text(max_size=30))
def test_parse_splits_at_the_first_colon(text):
    if ":" in text:
        p = KafkaPrincipal.parse(text)
        expected_type, expected_name = text.split(":", 1)
        assert (p.principal_type, p.name) == (expected_type, expected_name)
        assert str(p) == text
    else:
        with pytest.raises(ValueError):
            KafkaPrincipal.parse(text)


# --------------------------------------------------------------------------------------------
# Client address: Java's InetAddress.getHostAddress()
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address,expected",
    [
        ("127.0.0.1", "127.0.0.1"),
        ("10.0.0.1", "10.0.0.1"),
        ("0.0.0.0", "0.0.0.0"),
        ("255.255.255.255", "255.255.255.255"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("::", "0:0:0:0:0:0:0:0"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("::FFFF:10.0.0.1", "10.0.0.1"),
        ("::ffff:a00:1", "10.0.0.1"),
        ("0:0:0:0:0:ffff:7f00:1", "127.0.0.1"),
        ("2001:db8::1", "2001:db8:0:0:0:0:0:1"),
        ("2001:DB8::ABCD", "2001:db8:0:0:0:0:0:abcd"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8:0:0:0:0:0:1"),
        ("fe80::1", "fe80:0:0:0:0:0:0:1"),
        ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"),
        ("fe80::1%2", "fe80:0:0:0:0:0:0:1%2"),
        ("FE80::ABC%eth0", "fe80:0:0:0:0:0:0:abc%eth0"),
        ("1::", "1:0:0:0:0:0:0:0"),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
        # IPv4-compatible (not mapped) stays IPv6, as Java's Inet6Address prints it
        ("::10.0.0.1", "0:0:0:0:0:0:a00:1"),
        ("64:ff9b::10.0.0.1", "64:ff9b:0:0:0:0:a00:1"),
    ],
)
def test_client_address_is_javas_host_address(address, expected):
    assert java_host_address(address) == expected
    assert RequestContext(KafkaPrincipal.user("alice"), address).client_address == expected


@pytest.mark.parametrize(
    "address,expected",
    [
        (ipaddress.IPv4Address("10.0.0.1"), "10.0.0.1"),
        (ipaddress.IPv6Address("::1"), "0:0:0:0:0:0:0:1"),
        (ipaddress.IPv6Address("::ffff:10.0.0.1"), "10.0.0.1"),
        (ipaddress.IPv6Address("2001:db8::1"), "2001:db8:0:0:0:0:0:1"),
        (ipaddress.ip_address("192.168.1.20"), "192.168.1.20"),
    ],
    ids=str,
)
def test_ipaddress_objects_are_accepted(address, expected):
    assert java_host_address(address) == expected
    assert RequestContext(KafkaPrincipal.user("alice"), address).client_address == expected


def test_ipv6_address_object_keeps_its_scope():
    assert java_host_address(ipaddress.IPv6Address("fe80::1%eth0")) == "fe80:0:0:0:0:0:0:1%eth0"


def test_ipv4_with_a_zone_is_rejected():
    with pytest.raises(ValueError):
        java_host_address("10.0.0.1%eth0")


def test_ipv4_mapped_with_a_zone_is_rejected():
    with pytest.raises(ValueError):
        java_host_address("::ffff:10.0.0.1%eth0")


@pytest.mark.parametrize(
    "address",
    ["localhost", "kafka.example.com", "", " ", "10.0.0.256", "10.0.0", "1.2.3.4.5", "::g", "1:2:3:4:5:6:7:8:9", "%eth0"],
    ids=repr,
)
def test_non_addresses_are_value_errors(address):
    with pytest.raises(ValueError) as info:
        java_host_address(address)
    assert repr(address) in str(info.value)
    with pytest.raises(ValueError):
        RequestContext(KafkaPrincipal.user("alice"), address)


@pytest.mark.parametrize("address", [None, 167772161, b"10.0.0.1", ("10.0.0.1", 9092), 1.0], ids=repr)
def test_non_str_addresses_are_type_errors(address):
    with pytest.raises(TypeError):
        java_host_address(address)
    with pytest.raises(TypeError):
        RequestContext(KafkaPrincipal.user("alice"), address)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_prints_dotted_decimal(value):
    ip = ipaddress.IPv4Address(value)
    expected = ".".join(str(b) for b in ip.packed)
    assert java_host_address(str(ip)) == expected
    assert java_host_address(ip) == expected
    # and the IPv4-mapped IPv6 form of it prints the same
    mapped = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed)
    assert java_host_address(str(mapped)) == expected
    assert java_host_address(mapped) == expected


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_ipv6_prints_eight_unpadded_lowercase_hex_groups(value):
    ip = ipaddress.IPv6Address(value)
    if ip.ipv4_mapped is not None:
        return
    expected = ":".join(format(int.from_bytes(ip.packed[i : i + 2], "big"), "x") for i in range(0, 16, 2))
    for form in (ip.compressed, ip.exploded, ip.exploded.upper(), ip):
        out = java_host_address(form)
        assert out == expected
        assert len(out.split(":")) == 8
        assert out == out.lower()
        assert all(g == "0" or not g.startswith("0") for g in out.split(":"))


@given(st.integers(min_value=0, max_value=2**128 - 1), st.from_regex(r"\A[a-z0-9]{1,8}\Z"))
def test_ipv6_scope_is_kept(value, scope):
    ip = ipaddress.IPv6Address(value)
    if ip.ipv4_mapped is not None:
        return
    assert java_host_address(f"{ip.compressed}%{scope}") == java_host_address(ip) + "%" + scope


# --------------------------------------------------------------------------------------------
# RequestContext
# --------------------------------------------------------------------------------------------


def test_request_context_defaults():
    alice = KafkaPrincipal.user("alice")
    ctx = RequestContext(alice, "::1")
    assert ctx.principal == alice
    assert ctx.client_address == "0:0:0:0:0:0:0:1"
    assert ctx.listener_name == "PLAINTEXT"
    assert ctx.security_protocol == "PLAINTEXT"
    assert ctx.request_type == -1
    assert ctx.request_version == 0
    assert ctx.client_id == ""
    assert ctx.correlation_id == 0
    assert ctx.forwarding_principal is None


def test_request_context_all_fields():
    ctx = RequestContext(
        KafkaPrincipal.user("alice"),
        "10.0.0.1",
        listener_name="SASL_SSL",
        security_protocol="SASL_SSL",
        request_type=0,
        request_version=9,
        client_id="producer-1",
        correlation_id=42,
        forwarding_principal=KafkaPrincipal.user("broker"),
    )
    assert ctx.listener_name == "SASL_SSL"
    assert ctx.security_protocol == "SASL_SSL"
    assert (ctx.request_type, ctx.request_version, ctx.correlation_id) == (0, 9, 42)
    assert ctx.client_id == "producer-1"
    assert ctx.forwarding_principal == KafkaPrincipal("User", "broker")


def test_request_context_for_principal():
    ctx = RequestContext.for_principal("User:a:b")
    assert ctx.principal == KafkaPrincipal("User", "a:b")
    assert ctx.client_address == "127.0.0.1"
    ctx2 = RequestContext.for_principal(KafkaPrincipal("Group", "eng"), "::1", client_id="c")
    assert ctx2.principal == KafkaPrincipal("Group", "eng")
    assert ctx2.client_address == "0:0:0:0:0:0:0:1"
    assert ctx2.client_id == "c"
    with pytest.raises(ValueError):
        RequestContext.for_principal("alice")


def test_request_context_type_checks():
    with pytest.raises(TypeError):
        RequestContext("User:alice", "10.0.0.1")  # the constructor wants a KafkaPrincipal
    with pytest.raises(TypeError):
        RequestContext(KafkaPrincipal.user("a"), "10.0.0.1", listener_name=None)
    with pytest.raises(TypeError):
        RequestContext(KafkaPrincipal.user("a"), "10.0.0.1", request_type="0")
    with pytest.raises(TypeError):
        RequestContext(KafkaPrincipal.user("a"), "10.0.0.1", forwarding_principal="User:b")


def test_request_context_is_frozen():
    ctx = RequestContext(KafkaPrincipal.user("alice"), "10.0.0.1")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        ctx.client_address = "10.0.0.2"
    assert ctx == RequestContext(KafkaPrincipal.user("alice"), "::ffff:10.0.0.1")


# --------------------------------------------------------------------------------------------
# Action and AuthorizationResult
# --------------------------------------------------------------------------------------------


def test_action_defaults_and_operation_by_name():
    topic = ResourcePattern(ResourceType.TOPIC, "orders")
    a = Action("read", topic)
    assert a.operation is AclOperation.READ
    assert a.resource_pattern == topic
    assert a.resource_reference_count == 1
    assert a.log_if_allowed is True
    assert a.log_if_denied is True
    assert Action("DescribeConfigs", topic).operation is AclOperation.DESCRIBE_CONFIGS
    assert Action(10, topic).operation is AclOperation.DESCRIBE_CONFIGS
    assert Action(AclOperation.WRITE, topic, 3, False, False) == Action(
        "WRITE", topic, resource_reference_count=3, log_if_allowed=False, log_if_denied=False
    )


def test_action_is_frozen_and_hashable():
    a = Action("read", ResourcePattern.cluster())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.operation = AclOperation.WRITE
    assert hash(a) == hash(Action(AclOperation.READ, ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")))
    assert len({a, Action("read", ResourcePattern.cluster())}) == 1


@pytest.mark.parametrize("pattern_type", [PatternType.PREFIXED, PatternType.UNKNOWN])
def test_action_needs_a_literal_pattern(pattern_type):
    with pytest.raises(ValueError) as info:
        Action(AclOperation.READ, ResourcePattern(ResourceType.TOPIC, "orders", pattern_type))
    assert "LITERAL" in str(info.value)
    assert pattern_type.name in str(info.value)


def test_action_type_checks():
    with pytest.raises(ValueError):
        Action("reads", ResourcePattern.cluster())
    with pytest.raises(TypeError):
        Action("read", ResourcePattern(ResourceType.TOPIC, "x").to_filter())
    with pytest.raises(TypeError):
        Action("read", "Topic:orders")
    with pytest.raises(TypeError):
        Action("read", ResourcePattern.cluster(), resource_reference_count="1")
    with pytest.raises(TypeError):
        Action("read", ResourcePattern.cluster(), log_if_allowed=1)


def test_authorization_result_members():
    assert [m.name for m in AuthorizationResult] == ["ALLOWED", "DENIED"]
    assert AuthorizationResult.ALLOWED.value == "ALLOWED"
    assert AuthorizationResult.DENIED.value == "DENIED"
    assert AuthorizationResult("ALLOWED") is AuthorizationResult.ALLOWED
    assert AuthorizationResult.ALLOWED != AuthorizationResult.DENIED


@given(
    principal=st.builds(KafkaPrincipal, st.sampled_from(["User", "Group", "ServiceAccount"]), st.text(max_size=8)),
    forwarded=st.booleans(),
    request_type=st.integers(-1, 80),
    request_version=st.integers(0, 20),
    client_id=st.text(max_size=8),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
)
def test_a_context_for_a_request_equals_one_built_anew(principal, forwarded, request_type, request_version, client_id, correlation_id):
    # for_request copies what the connection fixed instead of checking it again (a server makes
    # one context per request): nothing may differ from the context made with every check.
    extra = {"forwarding_principal": KafkaPrincipal.user("broker"), "forwarding_address": "::1"} if forwarded else {}
    connection = RequestContext(principal, "10.0.0.7", listener_name="CLIENTS", security_protocol="SASL_SSL", **extra)
    made = connection.for_request(request_type, request_version, client_id, correlation_id)
    built = RequestContext(principal, "10.0.0.7", listener_name="CLIENTS", security_protocol="SASL_SSL",
                           request_type=request_type, request_version=request_version, client_id=client_id,
                           correlation_id=correlation_id, **extra)
    assert made == built
    assert attrs.asdict(made, recurse=False) == attrs.asdict(built, recurse=False)
    assert (made.principal_text, made.acl_principal) == (built.principal_text, built.acl_principal)


@pytest.mark.parametrize("fields", [("3", 0, "", 0), (3, None, "", 0), (3, 0, None, 0), (3, 0, "", 1.5)])
def test_a_context_for_a_request_checks_the_request_fields(fields):
    connection = RequestContext(KafkaPrincipal.user("alice"), "127.0.0.1")
    with pytest.raises(TypeError, match="request_type, request_version and correlation_id are ints|client_id is a str"):
        connection.for_request(*fields)
