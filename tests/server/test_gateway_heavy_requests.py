"""The gateway keeps its event loop for every connection: a request, or an upstream answer it
must read, larger than INLINE_FRAME_BYTES (work that grows with the names and partitions in
it) is read and authorized, or read and filtered, on the endpoint's threads in its principal's
turn; smaller ones, and a Produce whatever its records weigh, on the loop. What is answered,
and in what order, is the same either way."""

from __future__ import annotations

import pytest

from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection
from kafkasec.server.gateway import INLINE_FRAME_BYTES, _weight

from gateway_support import gateway_running, gateway_security
from record_batches import record_batch
from request_rules_support import acl, make
from server_support import heavy_then_light, logged_in, pipelined_answers, run


@pytest.mark.parametrize("api", ["DescribeGroups", "Metadata"])
def test_one_users_heavy_requests_leave_the_loop_to_other_users(server_state, tansu, api):
    """Four requests naming 40,000 groups or topics from a user with no ACLs, on four
    connections (the better part of a second of work each: a DescribeGroups refused whole, a
    Metadata forwarded for its brokers and merged with 40,000 refusals), and then a small one
    from another user: the small one is answered first. On the loop, it waited for at least
    one of them."""
    names = [f"n{index}" for index in range(40_000)]
    if api == "DescribeGroups":
        heavy_request = make(wire.request_schema(ApiKey.DESCRIBE_GROUPS, 5), {"groups": names})
    else:
        heavy_request = _metadata([{"name": name} for name in names])
    small = make(wire.request_schema(ApiKey.DESCRIBE_GROUPS, 5), {"groups": ["n1"]})
    with gateway_security(server_state, tansu.bootstrap, **{"num.io.threads": "2"}) as security, \
            gateway_running(security) as gateway:
        answered, light_answer, answers = run(heavy_then_light(gateway, heavy_request, small))
    assert answered[0] == "alice", answered
    assert [int(group.error_code) for group in light_answer.groups] == [30]  # GROUP_AUTHORIZATION_FAILED
    for answer in answers:
        items = answer.groups if api == "DescribeGroups" else answer.topics
        assert [item.group_id if api == "DescribeGroups" else item.name for item in items] == names
        assert {int(item.error_code) for item in items} == ({30} if api == "DescribeGroups" else {29})


def _metadata(topics=None):
    return make(wire.request_schema(ApiKey.METADATA, 12), {"topics": topics, "allow_auto_topic_creation": False})


def test_large_requests_and_answers_are_judged_and_filtered_as_small_ones_and_answered_in_order(gateway, tansu):
    """300 topics with long names, alice may describe every other one. A Metadata answer about
    all of them, and a Metadata request naming all of them, are each larger than
    INLINE_FRAME_BYTES: made on a thread, pipelined between small requests on one connection,
    they are answered in order, with only what alice may see and the gateway's own address."""
    names = [f"wide-{index:03d}-{'x' * 60}" for index in range(300)]
    allowed = names[::2]
    create = make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1} for name in names]})

    async def create_and_measure():
        connection = await logged_in(gateway, "admin")
        try:
            await connection.request(create)
        finally:
            await connection.close()
        direct = await KafkaConnection.open(tansu.host, tansu.port)
        async with direct:
            everything = await direct.request(_metadata())
        return len(wire.encode_response(everything, correlation_id=0))

    assert run(create_and_measure()) > INLINE_FRAME_BYTES  # the upstream's answer to the first Metadata below
    gateway.security.create_acls([acl("TOPIC", name, "DESCRIBE") for name in allowed])
    named = _metadata([{"name": name} for name in names])
    assert len(wire.encode_request(named, correlation_id=0, client_id="pipe")) > INLINE_FRAME_BYTES
    small = make(wire.request_schema(ApiKey.DESCRIBE_GROUPS, 5), {"groups": ["g"]})
    bodies = [small, _metadata(), small, named, small, _metadata(), named, small]

    answered = run(pipelined_answers(gateway, "alice", bodies, 3000))
    assert [answer_id for answer_id, _ in answered] == list(range(3000, 3000 + len(bodies)))
    [listener] = gateway.broker_listeners.values()
    for body, (_, answer) in zip(bodies, answered):
        if body is small:
            assert [int(group.error_code) for group in answer.groups] == [30]
            continue
        assert [(broker.host, broker.port) for broker in answer.brokers] == [(listener.host, listener.port)]
        codes = {topic.name: int(topic.error_code) for topic in answer.topics}
        if body is named:  # the refused names answered TOPIC_AUTHORIZATION_FAILED, the rest by the upstream
            assert codes == {name: 0 if name in allowed else 29 for name in names}
        else:
            assert sorted(name for name in codes if name.startswith("wide-")) == allowed
            assert {code for name, code in codes.items() if name.startswith("wide-")} == {0}


def test_a_produce_is_weighed_without_its_records():
    """A Produce of one partition and a megabyte of records is light (its records are passed
    on, not parsed); one of 5,000 partitions is heavy; any other request weighs its frame."""
    schema = wire.request_schema(ApiKey.PRODUCE, 9)

    def produce(partitions: int, value_bytes: int) -> bytes:
        return wire.encode_request(make(schema, {"acks": 1, "timeout": 30_000, "topic_data": [
            {"name": "t", "partition_data": [{"index": index, "records": record_batch([(None, bytes(value_bytes))])}
                                             for index in range(partitions)]}]}), correlation_id=1, client_id="c")

    one_large = produce(1, 1 << 20)
    assert len(one_large) > 1 << 20 and _weight(one_large, wire.decode_request(one_large)) < 200
    many_small = produce(5_000, 1)
    assert INLINE_FRAME_BYTES < _weight(many_small, wire.decode_request(many_small)) < len(many_small)
    metadata = wire.encode_request(_metadata([{"name": "t"}]), correlation_id=1, client_id="c")
    assert _weight(metadata, wire.decode_request(metadata)) == _weight(metadata, None) == len(metadata)
