"""KIP-590 forwarding between in-process nodes: screening, envelopes, retries and every error path."""

import dataclasses
import typing

import pytest
from kio.schema.alter_configs.v2.request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.create_delegation_token.v3.request import CreateDelegationTokenRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.metadata.v12.request import MetadataRequest

from kafkasec import AclBinding, KafkaPrincipal, KafkaSecurity, RequestContext, hookimpl
from kafkasec.protocol import wire
from kafkasec.protocol.acl_apis import HANDLERS
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.forwardable import FORWARDABLE_APIS, allow_token_requests
from kafkasec.protocol.forwarding import (
    EnvelopeAction,
    ForwardingExchange,
    ForwardingState,
    ForwardingStateError,
    open_envelope,
    privileged_listeners,
)

BROKER = "User:broker"


def acl(resource_type, name, principal, operation, pattern="LITERAL", permission="ALLOW"):
    return AclBinding.of(resource_type, name, pattern, principal, "*", operation, permission)


class Node:
    """An in-process node: its KafkaSecurity and whether it is the active controller."""

    def __init__(self, name, *, controller=False, config=None, plugins=()):
        self.name = name
        self.security = KafkaSecurity.from_config({"super.users": BROKER, **(config or {})}, plugins=plugins)
        self.controller = controller
        self.handled = []

    def receive(self, envelope_frame, *, listener="PLAINTEXT", broker=BROKER, broker_address="10.0.0.2"):
        """Answer an envelope as a Kafka node would: None means the connection was closed."""
        broker_context = RequestContext.for_principal(broker, broker_address, listener_name=listener)
        opened = open_envelope(self.security, broker_context, envelope_frame, is_active_controller=self.controller)
        if opened.action is EnvelopeAction.CLOSE_CONNECTION:
            return None
        if opened.action is EnvelopeAction.RESPOND:
            return opened.response
        self.handled.append(opened)
        request = opened.request
        handler = HANDLERS.get(request.api_key, answer_every_item_ok)
        body = handler(self.security, opened.context, request.body, request.api_version)
        return opened.respond(wire.encode_response(body, correlation_id=opened.context.correlation_id))


def answer_every_item_ok(security, context, body, version):
    """A controller's answer for item APIs whose work (topics, configs) is not ours to do."""
    api = FORWARDABLE_APIS[body.__api_key__]
    response_type = wire.response_schema(body.__api_key__, version)
    items = getattr(body, api.request_field(body))
    entry_type = wire.item_type(response_type, api.response_field)
    ok = {"error_code": wire.error_code(0), "error_message": None}
    return wire.build(response_type, **{api.response_field: tuple(api.make_error(entry_type, item, ok) for item in items)})


def forward(broker, controllers, context, frame, *, now=0, timeout_ms=30_000, between=None):
    """Run one exchange to completion, sending each envelope to whichever node is controller."""
    exchange = ForwardingExchange(broker.security, context, frame, now_ms=now, timeout_ms=timeout_ms)
    while exchange.state is not ForwardingState.DONE:
        envelope = exchange.send_envelope(now_ms=now, correlation_id=exchange.attempts)
        if envelope is None:
            break
        target = next((node for node in controllers if node.controller), controllers[0])
        if between is not None:
            between(exchange.attempts)
        answer = target.receive(envelope)
        now += 100
        if answer is None:
            exchange.connection_lost(now_ms=now)
        else:
            exchange.receive_envelope_response(answer, now_ms=now)
    return exchange


def create_acls_frame(*bindings, correlation_id=9, client_id="admin-cli"):
    creations = tuple(
        AclCreation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
            operation=int(b.entry.operation), permission_type=int(b.entry.permission_type),
        )
        for b in bindings
    )
    return wire.encode_request(CreateAclsRequest(creations=creations), correlation_id=correlation_id, client_id=client_id)


def create_topics_frame(*names):
    topics = tuple(wire.build(CreatableTopic, name=name, num_partitions=1, replication_factor=1) for name in names)
    request = CreateTopicsRequest(topics=topics, timeout=__import__("datetime").timedelta(seconds=5), validate_only=False)
    return wire.encode_request(request, correlation_id=4, client_id="app")


def client(principal="User:admin", address="192.168.1.20", **kwargs):
    return RequestContext.for_principal(principal, address, client_id=kwargs.pop("client_id", "admin-cli"), **kwargs)


@pytest.fixture
def cluster():
    broker = Node("broker")
    controller = Node("controller", controller=True)
    for node in (broker, controller):
        node.security.create_acls([acl("CLUSTER", "kafka-cluster", "User:admin", "ALTER")])
    yield broker, controller
    for node in (broker, controller):
        node.security.close()


READ_T = acl("TOPIC", "t", "User:app", "READ")


# ------------------------------------------------------------------------- the whole path


def test_a_forwarded_acl_change_lands_on_the_controller(cluster):
    broker, controller = cluster
    exchange = forward(broker, [controller], client(), create_acls_frame(READ_T))
    correlation_id, response = wire.decode_response(exchange.client_response, 30, 3)
    assert correlation_id == 9
    assert [int(result.error_code) for result in response.results] == [0]
    assert READ_T in controller.security.acls()
    assert READ_T not in broker.security.acls()  # the broker learns it from the metadata log, not here
    assert broker.security.forwarded_requests() == {"admin-cli": 1}


def test_the_inner_context_is_the_clients_with_the_forwarding_broker(cluster):
    broker, controller = cluster
    forward(broker, [controller], client(address="::1", client_id="tool"), create_acls_frame(READ_T, client_id="tool"))
    context = controller.handled[0].context
    assert context.principal == KafkaPrincipal("User", "admin")
    assert context.client_address == "0:0:0:0:0:0:0:1"
    assert context.forwarding_principal == KafkaPrincipal.parse(BROKER)
    assert context.forwarding_address == "10.0.0.2"
    assert (context.request_type, context.request_version, context.client_id, context.correlation_id) == (30, 3, "tool", 9)


def test_forwarding_principal_reaches_authorization_hooks():
    seen = []

    class Recorder:
        @hookimpl
        def kafkasec_audit(self, context, decisions):
            seen.append((context.principal, context.forwarding_principal))

    broker = Node("broker")
    controller = Node("controller", controller=True, plugins=[Recorder()])
    for node in (broker, controller):
        node.security.create_acls([acl("CLUSTER", "kafka-cluster", "User:admin", "ALTER")])
    seen.clear()
    forward(broker, [controller], client(), create_acls_frame(READ_T))
    assert (KafkaPrincipal("User", "admin"), KafkaPrincipal.parse(BROKER)) in seen


def test_a_request_refused_as_a_whole_never_leaves_the_broker(cluster):
    broker, controller = cluster
    exchange = ForwardingExchange(broker.security, client("User:eve"), create_acls_frame(READ_T), now_ms=0)
    assert exchange.state is ForwardingState.DONE
    _, response = wire.decode_response(exchange.client_response, 30, 3)
    assert [int(result.error_code) for result in response.results] == [31]
    assert broker.security.forwarded_requests() == {}
    with pytest.raises(ForwardingStateError):
        exchange.send_envelope(now_ms=0)


def test_refused_items_stay_out_of_the_envelope_and_are_merged_back(cluster):
    broker, controller = cluster
    broker.security.create_acls([acl("TOPIC", "app.", "User:app", "CREATE", pattern="PREFIXED")])
    exchange = forward(broker, [controller], client("User:app"), create_topics_frame("app.a", "other", "app.b"))
    forwarded = controller.handled[0].request.body
    assert [topic.name for topic in forwarded.topics] == ["app.a", "app.b"]
    _, response = wire.decode_response(exchange.client_response, 19, 7)
    assert [(t.name, int(t.error_code)) for t in response.topics] == [("app.a", 0), ("other", 29), ("app.b", 0)]


def test_create_on_the_cluster_allows_every_topic(cluster):
    broker, controller = cluster
    broker.security.create_acls([acl("CLUSTER", "kafka-cluster", "User:app", "CREATE")])
    forward(broker, [controller], client("User:app"), create_topics_frame("x", "y"))
    assert [t.name for t in controller.handled[0].request.body.topics] == ["x", "y"]


def test_all_items_refused_is_answered_locally(cluster):
    broker, _ = cluster
    exchange = ForwardingExchange(broker.security, client("User:app"), create_topics_frame("x"), now_ms=0)
    assert exchange.state is ForwardingState.DONE
    _, response = wire.decode_response(exchange.client_response, 19, 7)
    assert [(t.name, int(t.error_code)) for t in response.topics] == [("x", 29)]


def test_an_unscreened_answer_passes_through_byte_for_byte(cluster):
    broker, controller = cluster
    answers = []
    original = controller.receive

    def spy(frame, **kwargs):
        answers.append(original(frame, **kwargs))
        return answers[-1]

    controller.receive = spy
    exchange = forward(broker, [controller], client(), create_acls_frame(READ_T))
    _, envelope = wire.decode_response(answers[-1], 58, 0)
    assert exchange.client_response == envelope.response_data


def test_alter_configs_is_screened_per_resource_type(cluster):
    broker, controller = cluster
    broker.security.create_acls([acl("TOPIC", "t", "User:ops", "ALTER_CONFIGS")])
    resources = tuple(
        AlterConfigsResource(resource_type=rtype, resource_name=name, configs=(AlterableConfig(name="k", value="v"),))
        for rtype, name in ((2, "t"), (2, "u"), (4, "1"), (32, "g"))
    )
    frame = wire.encode_request(AlterConfigsRequest(resources=resources, validate_only=False), correlation_id=1, client_id="c")
    exchange = forward(broker, [controller], client("User:ops"), frame)
    _, response = wire.decode_response(exchange.client_response, 33, 2)
    assert [(int(r.resource_type), r.resource_name, int(r.error_code)) for r in response.responses] == [
        (2, "t", 0), (2, "u", 29), (4, "1", 31), (32, "g", 30),
    ]


def test_delete_topics_by_id_is_left_to_the_controller(cluster):
    import uuid

    broker, controller = cluster
    topics = (DeleteTopicState(name=None, topic_id=uuid.uuid4()), DeleteTopicState(name="t", topic_id=uuid.UUID(int=0)))
    frame = wire.encode_request(
        DeleteTopicsRequest(topics=topics, timeout=__import__("datetime").timedelta(seconds=1)), correlation_id=1, client_id="c"
    )
    exchange = forward(broker, [controller], client("User:app"), frame)
    assert [t.topic_id for t in controller.handled[0].request.body.topics] == [topics[0].topic_id]
    _, response = wire.decode_response(exchange.client_response, 20, 6)
    assert [int(r.error_code) for r in response.responses] == [0, 29]


# ------------------------------------------------------------------------- delegation tokens


def token_frame(owner=None):
    request = wire.build(
        CreateDelegationTokenRequest,
        owner_principal_type="User" if owner else None,
        owner_principal_name=owner,
        max_lifetime=__import__("datetime").timedelta(milliseconds=-1),
    )
    return wire.encode_request(request, correlation_id=3, client_id="c")


@pytest.mark.parametrize(
    "protocol, principal, allowed",
    [
        ("PLAINTEXT", "User:alice", False),
        ("SSL", "User:ANONYMOUS", False),
        ("SSL", "User:alice", True),
        ("SASL_SSL", "User:alice", True),
        ("SASL_PLAINTEXT", "User:alice", True),
    ],
)
def test_token_requests_only_over_suitable_connections(protocol, principal, allowed):
    assert allow_token_requests(client(principal, security_protocol=protocol)) is allowed


def test_token_authenticated_sessions_cannot_ask_for_tokens():
    context = RequestContext(KafkaPrincipal("User", "alice", token_authenticated=True), "10.0.0.1", security_protocol="SASL_SSL")
    assert allow_token_requests(context) is False


def test_token_creation_is_screened_as_kafka_does(cluster):
    broker, _ = cluster
    plaintext = ForwardingExchange(broker.security, client("User:alice"), token_frame(), now_ms=0)
    _, response = wire.decode_response(plaintext.client_response, 38, 3)
    assert int(response.error_code) == 64
    assert (response.principal_name, response.token_requester_principal_name) == ("alice", "alice")

    for_bob = ForwardingExchange(broker.security, client("User:alice", security_protocol="SASL_SSL"), token_frame("bob"), now_ms=0)
    _, response = wire.decode_response(for_bob.client_response, 38, 3)
    assert int(response.error_code) == 65

    broker.security.create_acls([acl("USER", "User:bob", "User:alice", "CREATE_TOKENS")])
    allowed = ForwardingExchange(broker.security, client("User:alice", security_protocol="SASL_SSL"), token_frame("bob"), now_ms=0)
    assert allowed.state is ForwardingState.READY_TO_SEND


# ------------------------------------------------------------------------- controller changes and errors


def test_controller_change_mid_flight_is_retried_on_the_new_controller():
    broker = Node("broker")
    old, new = Node("old", controller=True), Node("new")
    for node in (broker, old, new):
        node.security.create_acls([acl("CLUSTER", "kafka-cluster", "User:admin", "ALTER")])

    def move_controller(attempt):
        if attempt == 1:  # the envelope is on its way to the old controller when leadership moves
            old.controller, new.controller = False, True

    targets = [old, new]
    exchange = ForwardingExchange(broker.security, client(), create_acls_frame(READ_T), now_ms=0)
    envelope = exchange.send_envelope(now_ms=0)
    move_controller(exchange.attempts)
    exchange.receive_envelope_response(old.receive(envelope), now_ms=10)
    assert exchange.state is ForwardingState.READY_TO_SEND
    envelope = exchange.send_envelope(now_ms=20)
    exchange.receive_envelope_response(next(n for n in targets if n.controller).receive(envelope), now_ms=30)
    assert exchange.state is ForwardingState.DONE and exchange.attempts == 2
    assert READ_T in new.security.acls() and READ_T not in old.security.acls()
    assert broker.security.forwarded_requests() == {"admin-cli": 1}  # one client request, however many tries


def test_not_controller_until_the_deadline_times_out(cluster):
    broker, controller = cluster
    controller.controller = False
    exchange = forward(broker, [controller], client(), create_acls_frame(READ_T), timeout_ms=1_000)
    assert exchange.attempts == 10
    _, response = wire.decode_response(exchange.client_response, 30, 3)
    assert [int(result.error_code) for result in response.results] == [7]  # REQUEST_TIMED_OUT
    assert READ_T not in controller.security.acls()


def test_a_lost_connection_is_retried(cluster):
    broker, controller = cluster
    exchange = ForwardingExchange(broker.security, client(), create_acls_frame(READ_T), now_ms=0)
    exchange.send_envelope(now_ms=0)
    exchange.connection_lost(now_ms=5)
    assert exchange.state is ForwardingState.READY_TO_SEND
    exchange.receive_envelope_response(controller.receive(exchange.send_envelope(now_ms=6)), now_ms=7)
    assert exchange.state is ForwardingState.DONE


@pytest.mark.parametrize("code", [31, 97, 42, -1, 87])
def test_any_other_envelope_error_is_unknown_server_error_to_the_client(cluster, code):
    broker, _ = cluster
    exchange = ForwardingExchange(broker.security, client(), create_acls_frame(READ_T, READ_T), now_ms=0)
    exchange.send_envelope(now_ms=0)
    from kio.schema.envelope.v0.response import EnvelopeResponse

    answer = wire.encode_response(EnvelopeResponse(response_data=None, error_code=wire.error_code(code)), correlation_id=0)
    exchange.receive_envelope_response(answer, now_ms=1)
    _, response = wire.decode_response(exchange.client_response, 30, 3)
    assert [int(result.error_code) for result in response.results] == [-1, -1]


def test_unsupported_version_closes_the_client_connection(cluster):
    broker, _ = cluster
    exchange = ForwardingExchange(broker.security, client(), create_acls_frame(READ_T), now_ms=0)
    exchange.send_envelope(now_ms=0)
    from kio.schema.envelope.v0.response import EnvelopeResponse

    exchange.receive_envelope_response(
        wire.encode_response(EnvelopeResponse(response_data=None, error_code=wire.error_code(35)), correlation_id=0), now_ms=1
    )
    assert exchange.state is ForwardingState.DONE and exchange.client_response is None


def test_an_unreadable_envelope_answer_is_unknown_server_error(cluster):
    broker, _ = cluster
    exchange = ForwardingExchange(broker.security, client(), create_acls_frame(READ_T), now_ms=0)
    exchange.send_envelope(now_ms=0)
    exchange.receive_envelope_response(b"\x00\x01", now_ms=1)
    _, response = wire.decode_response(exchange.client_response, 30, 3)
    assert int(response.results[0].error_code) == -1


def test_calls_out_of_order_are_state_errors(cluster):
    broker, _ = cluster
    exchange = ForwardingExchange(broker.security, client(), create_acls_frame(READ_T), now_ms=0)
    with pytest.raises(ForwardingStateError, match="receive_envelope_response.*READY_TO_SEND"):
        exchange.receive_envelope_response(b"", now_ms=0)
    with pytest.raises(ForwardingStateError):
        exchange.connection_lost(now_ms=0)
    exchange.send_envelope(now_ms=0)
    with pytest.raises(ForwardingStateError, match="send_envelope.*AWAITING_RESPONSE"):
        exchange.send_envelope(now_ms=0)


def test_only_forwardable_apis_are_forwarded(cluster):
    broker, _ = cluster
    frame = wire.encode_request(wire.build(MetadataRequest), correlation_id=1, client_id="c")
    with pytest.raises(ValueError, match="not forwardable"):
        ForwardingExchange(broker.security, client(), frame, now_ms=0)
    with pytest.raises(ValueError, match="timeout_ms"):
        ForwardingExchange(broker.security, client(), create_acls_frame(READ_T), now_ms=0, timeout_ms=-1)


# ------------------------------------------------------------------------- the receiving side


def envelope_frame(inner=None, principal=None, address=bytes([10, 0, 0, 9])):
    security = KafkaSecurity()
    principal = security.serialize_principal(KafkaPrincipal("User", "admin")) if principal is None else principal
    inner = create_acls_frame(READ_T) if inner is None else inner
    envelope = EnvelopeRequest(request_data=inner, request_principal=principal, client_host_address=address)
    return wire.encode_request(envelope, correlation_id=21, client_id="broker")


def envelope_error(answer):
    correlation_id, response = wire.decode_response(answer, 58, 0)
    assert correlation_id == 21 and response.response_data is None
    return int(response.error_code)


def test_envelopes_only_on_privileged_listeners(cluster):
    _, controller = cluster
    assert controller.receive(envelope_frame(), listener="CLIENTS") is None
    assert privileged_listeners({"inter.broker.listener.name": "INTERNAL", "controller.listener.names": "C1, C2"}) == {
        "INTERNAL", "C1", "C2",
    }
    internal = Node("internal", controller=True, config={"inter.broker.listener.name": "INTERNAL"})
    assert internal.receive(envelope_frame(), listener="PLAINTEXT") is None
    assert internal.receive(envelope_frame(), listener="INTERNAL") is not None


def test_the_forwarding_broker_needs_cluster_action(cluster):
    _, controller = cluster
    assert envelope_error(controller.receive(envelope_frame(), broker="User:intruder")) == 31
    controller.security.create_acls([acl("CLUSTER", "kafka-cluster", "User:b2", "CLUSTER_ACTION")])
    assert wire.decode_response(controller.receive(envelope_frame(), broker="User:b2"), 58, 0)[1].error_code == 0


def test_a_node_that_is_not_the_controller_says_so_before_reading_the_principal(cluster):
    _, controller = cluster
    controller.controller = False
    assert envelope_error(controller.receive(envelope_frame(principal=b"\xff"))) == 41


@pytest.mark.parametrize("principal", [b"", b"\x00\x01", b"\x00\x00\x05User"])
def test_an_unreadable_principal_is_97(cluster, principal):
    _, controller = cluster
    assert envelope_error(controller.receive(envelope_frame(principal=principal))) == 97


def test_a_null_principal_is_97(cluster):
    _, controller = cluster
    envelope = EnvelopeRequest(request_data=create_acls_frame(READ_T), request_principal=None, client_host_address=b"\x0a\x00\x00\x01")
    assert envelope_error(controller.receive(wire.encode_request(envelope, correlation_id=21, client_id="b"))) == 97


@pytest.mark.parametrize("address", [b"", b"\x01\x02\x03", b"\x00" * 5, b"\x00" * 17])
def test_a_bad_client_address_is_invalid_request(cluster, address):
    _, controller = cluster
    assert envelope_error(controller.receive(envelope_frame(address=address))) == 42


def test_a_non_forwardable_inner_request_is_invalid_request(cluster):
    _, controller = cluster
    inner = wire.encode_request(wire.build(MetadataRequest), correlation_id=1, client_id="c")
    assert envelope_error(controller.receive(envelope_frame(inner=inner))) == 42
    assert envelope_error(controller.receive(envelope_frame(inner=b"\x00\x1e\x00"))) == 42


def test_inner_requests_are_authorized_as_the_client(cluster):
    _, controller = cluster
    serde_bytes = controller.security.serialize_principal(KafkaPrincipal("User", "eve"))
    answer = controller.receive(envelope_frame(principal=serde_bytes))
    _, envelope = wire.decode_response(answer, 58, 0)
    _, inner = wire.decode_response(envelope.response_data, 30, 3)
    assert int(inner.results[0].error_code) == 31  # the broker may, eve may not
    assert READ_T not in controller.security.acls()


def test_respond_only_for_handled_envelopes(cluster):
    _, controller = cluster
    opened = open_envelope(
        controller.security, RequestContext.for_principal(BROKER), envelope_frame(), is_active_controller=False
    )
    with pytest.raises(ValueError, match="HANDLE"):
        opened.respond(b"")


# ------------------------------------------------------------------------- error responses of every API


def _sample(entity_type):
    """An instance with one item in every array of entities, so error responses have items."""
    values = {}
    for field in dataclasses.fields(entity_type):
        if typing.get_origin(field.type) is tuple and "kafka_type" not in field.metadata:
            values[field.name] = (_sample(typing.get_args(field.type)[0]),)
        elif typing.get_origin(field.type) is tuple and field.metadata["kafka_type"] == "string":
            values[field.name] = ("t",)
    return wire.build(entity_type, **values)


@pytest.mark.parametrize("api_key", sorted(FORWARDABLE_APIS))
def test_every_forwardable_api_answers_an_error_in_every_version(api_key):
    from kio.schema.index import api_key_map, schema_name_map

    api = FORWARDABLE_APIS[api_key]
    for version in schema_name_map[api_key_map[api_key]]:
        body = _sample(wire.request_schema(api_key, version))
        response = api.error_response(body, version, ApiError.of(-1, "boom"))
        frame = wire.encode_response(response, correlation_id=1)
        _, decoded = wire.decode_response(frame, api_key, version)
        codes = _error_codes(decoded)
        assert codes and set(codes) == {-1}, (api.name, version, decoded)


def _error_codes(entity):
    codes = []
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if field.metadata.get("kafka_type") == "error_code":
            codes.append(int(value))
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    codes.extend(_error_codes(item))
    return codes
