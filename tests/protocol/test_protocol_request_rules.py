"""Kafka's per-request authorization as a library (kafkasec.protocol.request_rules), without a
network: the table of every client API, Kafka's corner cases, a property, and misuse."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import AclBinding, RequestContext
from kafkasec.acl import ResourcePattern
from kafkasec.context import Action, AuthorizationResult
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules import INTER_BROKER_APIS, RULES, SECURITY_APIS, authorize_request

from record_batches import record_batch
from request_rules_support import AUTHORIZATION_ERRORS, CASES, TOPIC, TOPIC_ID, TOPIC_IDS, acl, error_codes, make
from security_support import open_security

ALICE = RequestContext.for_principal("User:alice")


def decide(security, case, version=None, topic_names=TOPIC_IDS):
    request = case.request(version)
    return authorize_request(security, ALICE, request, int(request.__version__), topic_names=topic_names)


def client_response(authorization):
    """The response as a broker that found nothing to add would leave it (an empty answer)."""
    if authorization.forward is None:
        return authorization.response()
    schema = wire.response_schema(authorization.api_key, authorization.version)
    return authorization.response(wire.build(schema))


def test_every_rule_has_a_row_and_every_client_api_a_rule():
    assert {case.api for case in CASES} == set(RULES)
    everything = set(RULES) | SECURITY_APIS | INTER_BROKER_APIS | {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
    assert everything == set(ApiKey)
    assert ApiKey.LEADER_AND_ISR in INTER_BROKER_APIS and ApiKey.ENVELOPE in INTER_BROKER_APIS
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT in RULES and ApiKey.SHARE_FETCH in RULES


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_without_the_acls_kafkas_error(case):
    with open_security() as security:
        authorization = decide(security, case)
        response = client_response(authorization)
        wire.encode(response)  # a response the wire can carry
        if case.error:
            assert case.error in error_codes(response), (case.id, response)
            assert authorization.refusals
            assert not authorization.unchanged
        else:
            assert not authorization.refusals and not (error_codes(response) & AUTHORIZATION_ERRORS)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_with_exactly_the_listed_acls_no_authorization_error(case):
    with open_security(acls=case.grants) as security:
        authorization = decide(security, case)
        assert authorization.refusals == (), (case.id, authorization.refusals)
        assert authorization.forward is not None
        assert not (error_codes(client_response(authorization)) & AUTHORIZATION_ERRORS)


@pytest.mark.parametrize("case", [c for c in CASES if c.version is None], ids=lambda case: case.id)
def test_every_version_kio_has_is_answered(case):
    """Each version of each API is read and answered in its own shape, refused and allowed."""
    from kafkasec.protocol.api_versions import kio_versions

    low, high = kio_versions(case.api)
    with open_security() as refusing, open_security(acls=case.grants) as allowing:
        for version in range(low, high + 1):
            try:
                case.request(version)
            except TypeError:
                continue  # a field this row sets is required otherwise at that version
            for security in (refusing, allowing):
                wire.encode(client_response(decide(security, case, version)))


def _batch(transactional: bool) -> bytes:
    """A record batch, transactional (with a producer id, as a transactional producer sends it) or not."""
    return record_batch(transactional=transactional, producer_id=7 if transactional else -1,
                        producer_epoch=0 if transactional else -1, base_sequence=0 if transactional else -1)


def _produce(transactional_id, records):
    return make(wire.request_schema(ApiKey.PRODUCE, 9), {
        "transactional_id": transactional_id, "acks": -1,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}, {"index": 1, "records": records}]}],
    })


def test_a_transactional_produce_needs_write_on_its_transactional_id_on_every_partition():
    grants = [acl("TOPIC", TOPIC, "WRITE")]
    with open_security(acls=grants) as security:
        idempotent = authorize_request(security, ALICE, _produce(None, _batch(False)), 9)
        assert idempotent.unchanged and idempotent.passes_response
        refused = authorize_request(security, ALICE, _produce("txn-x", _batch(True)), 9)
        assert refused.forward is None
        partitions = refused.response().responses[0].partition_responses
        assert [int(p.error_code) for p in partitions] == [53, 53] and all(p.base_offset == -1 for p in partitions)
        nameless = authorize_request(security, ALICE, _produce(None, _batch(True)), 9)
        assert {53} == error_codes(nameless.response())
        security.create_acls([acl("TRANSACTIONAL_ID", "txn-x", "WRITE")])
        assert authorize_request(security, ALICE, _produce("txn-x", _batch(True)), 9).unchanged


def test_partial_produce_forwards_the_allowed_topics_bytes_untouched_and_merges_the_refusals():
    records = record_batch([(b"key", b"payload")])
    request = make(wire.request_schema(ApiKey.PRODUCE, 9), {"acks": 1, "topic_data": [
        {"name": "allowed", "partition_data": [{"index": 0, "records": records}]},
        {"name": "secret", "partition_data": [{"index": 0, "records": records}, {"index": 3, "records": records}]},
    ]})
    with open_security(acls=[acl("TOPIC", "allowed", "WRITE")]) as security:
        authorization = authorize_request(security, ALICE, request, 9)
    assert [t.name for t in authorization.forward.topic_data] == ["allowed"]
    assert authorization.forward.topic_data[0].partition_data[0].records == records
    schema = wire.response_schema(ApiKey.PRODUCE, 9)
    answer = make(schema, {"responses": [{"name": "allowed", "partition_responses": [{"index": 0, "base_offset": 7}]}]})
    merged = authorization.response(answer)
    by_topic = {t.name: [(p.index, int(p.error_code)) for p in t.partition_responses] for t in merged.responses}
    assert by_topic == {"allowed": [(0, 0)], "secret": [(0, 29), (3, 29)]}
    assert [r.item for r in authorization.refusals] == ["secret"]


def test_fetch_by_topic_id_unknown_ids_are_unknown_topic_id_and_reported():
    fetch = make(wire.request_schema(ApiKey.FETCH, 17), {"max_wait": 0, "min_bytes": 0, "topics": [
        {"topic_id": TOPIC_ID, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}]},
        {"topic_id": uuid.UUID(int=7), "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}]},
    ]})
    with open_security(acls=[acl("TOPIC", TOPIC, "READ")]) as security:
        authorization = authorize_request(security, ALICE, fetch, 17, topic_names=TOPIC_IDS)
    assert authorization.unknown_topic_ids == {uuid.UUID(int=7)}
    assert [t.topic_id for t in authorization.forward.topics] == [TOPIC_ID]
    refused = client_response(authorization).responses[0].partitions[0]
    assert (int(refused.error_code), refused.high_watermark, refused.records) == (100, -1, b"")


def test_a_follower_fetch_needs_cluster_action_and_is_refused_topic_authorization_failed():
    follower = make(wire.request_schema(ApiKey.FETCH, 12), {"replica_id": 2, "max_wait": 0, "min_bytes": 0, "topics": [
        {"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}]}]})
    with open_security(acls=[acl("TOPIC", TOPIC, "READ")]) as security:
        assert error_codes(client_response(authorize_request(security, ALICE, follower, 12))) == {29}
        security.create_acls([acl("CLUSTER", "kafka-cluster", "CLUSTER_ACTION")])
        assert authorize_request(security, ALICE, follower, 12).unchanged


@pytest.mark.parametrize("grant, exists, expected", [
    (None, True, 29), (None, False, 29),           # no DESCRIBE: the same answer whether it exists or not
    ("DESCRIBE", True, 29), ("DESCRIBE", False, 3),
    ("DELETE", False, None),                       # allowed: the broker answers
])
def test_delete_topics_hides_existence_from_a_caller_without_describe(grant, exists, expected):
    request = make(wire.request_schema(ApiKey.DELETE_TOPICS, 6), {"topics": [{"name": TOPIC, "topic_id": uuid.UUID(int=0)}], "timeout": 1})
    names = TOPIC_IDS if exists else {}
    with open_security(acls=[acl("TOPIC", TOPIC, grant)] if grant else []) as security:
        authorization = authorize_request(security, ALICE, request, 6, topic_names=names)
    if expected is None:
        assert authorization.unchanged
    else:
        assert error_codes(client_response(authorization)) == {expected}


def test_delete_topics_by_unknown_id_is_unknown_topic_id_and_a_refused_id_keeps_its_name_hidden():
    request = make(wire.request_schema(ApiKey.DELETE_TOPICS, 6), {"topics": [
        {"name": None, "topic_id": uuid.UUID(int=5)}, {"name": None, "topic_id": TOPIC_ID}], "timeout": 1})
    with open_security() as security:
        answer = client_response(authorize_request(security, ALICE, request, 6, topic_names=TOPIC_IDS))
    assert {(r.name, r.topic_id, int(r.error_code)) for r in answer.responses} == {(None, uuid.UUID(int=5), 100), (None, TOPIC_ID, 29)}


def test_metadata_for_all_topics_lists_only_what_the_caller_may_describe():
    request = make(wire.request_schema(ApiKey.METADATA, 12), {"topics": None})
    schema = wire.response_schema(ApiKey.METADATA, 12)
    answer = make(schema, {"topics": [{"name": name, "topic_id": uuid.uuid4()} for name in ("a", "b", "c")]})
    with open_security(acls=[acl("TOPIC", "b", "READ")]) as security:
        authorization = authorize_request(security, ALICE, request, 12)
        assert authorization.forward is request and authorization.refusals == ()
        assert [t.name for t in authorization.response(answer).topics] == ["b"]


def test_metadata_does_not_let_a_caller_without_create_auto_create_a_topic():
    request = make(wire.request_schema(ApiKey.METADATA, 12), {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})
    schema = wire.response_schema(ApiKey.METADATA, 12)
    missing = make(schema, {"topics": [{"name": TOPIC, "error_code": 3}]})
    with open_security(acls=[acl("TOPIC", TOPIC, "DESCRIBE")]) as security:
        authorization = authorize_request(security, ALICE, request, 12)
        assert authorization.forward.allow_auto_topic_creation is False
        assert error_codes(authorization.response(missing)) == {29}
        security.create_acls([acl("TOPIC", TOPIC, "CREATE")])
        assert authorize_request(security, ALICE, request, 12).unchanged


def test_add_partitions_to_txn_refused_topic_leaves_the_others_not_attempted():
    request = make(wire.request_schema(ApiKey.ADD_PARTITIONS_TO_TXN, 3), {
        "v3_and_below_transactional_id": "txn-x", "v3_and_below_producer_id": 1, "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "ok", "partitions": [0]}, {"name": "secret", "partitions": [0, 1]}]})
    with open_security(acls=[acl("TRANSACTIONAL_ID", "txn-x", "WRITE"), acl("TOPIC", "ok", "WRITE")]) as security:
        authorization = authorize_request(security, ALICE, request, 3)
    answer = authorization.response()
    codes = {t.name: {int(p.partition_error_code) for p in t.results_by_partition} for t in answer.results_by_topic_v3_and_below}
    assert authorization.forward is None and codes == {"ok": {55}, "secret": {29}}


def test_kip430_operations_in_describe_groups_are_ours():
    request = make(wire.request_schema(ApiKey.DESCRIBE_GROUPS, 5), {"groups": ["group-g"], "include_authorized_operations": True})
    schema = wire.response_schema(ApiKey.DESCRIBE_GROUPS, 5)
    answer = make(schema, {"groups": [{"group_id": "group-g", "authorized_operations": -1}]})
    with open_security(acls=[acl("GROUP", "group-g", "READ")]) as security:
        operations = authorize_request(security, ALICE, request, 5).response(answer).groups[0].authorized_operations
    assert operations == (1 << 3) | (1 << 8)  # READ, and DESCRIBE which READ implies


def test_consumer_group_describe_hides_a_group_that_uses_a_topic_the_caller_may_not_describe():
    request = make(wire.request_schema(ApiKey.CONSUMER_GROUP_DESCRIBE, 1), {"group_ids": ["group-g"]})
    schema = wire.response_schema(ApiKey.CONSUMER_GROUP_DESCRIBE, 1)
    answer = make(schema, {"groups": [{"group_id": "group-g", "members": [{"member_id": "m", "assignment": {
        "topic_partitions": [{"topic_id": TOPIC_ID, "topic_name": "secret", "partitions": [0]}]}}]}]})
    with open_security(acls=[acl("GROUP", "group-g", "DESCRIBE")]) as security:
        group = authorize_request(security, ALICE, request, 1).response(answer).groups[0]
        assert (int(group.error_code), group.members) == (29, ())
        security.create_acls([acl("TOPIC", "secret", "DESCRIBE")])
        assert authorize_request(security, ALICE, request, 1).response(answer).groups[0].error_code == 0


def test_every_decision_goes_through_the_audit_hook_in_one_batch():
    from kafkasec import hookimpl

    seen = []

    class Audit:
        @hookimpl
        def kafkasec_audit(self, context, decisions):
            seen.append([d.action.resource_pattern.name for d in decisions])

    request = make(wire.request_schema(ApiKey.PRODUCE, 9), {"acks": 1, "topic_data": [
        {"name": name, "partition_data": [{"index": i, "records": record_batch()} for i in range(3)]} for name in ("a", "b")]})
    with open_security(plugins=[Audit()]) as security:
        authorize_request(security, ALICE, request, 9)
    assert seen == [["a", "b"]]


def test_misuse_is_a_type_or_value_error():
    with open_security() as security:
        with pytest.raises(TypeError, match="what wire.decode_request gives"):
            authorize_request(security, ALICE, b"\x00\x00", 0)
        produce = CASES[0].request()
        with pytest.raises(TypeError, match="needs its version"):
            authorize_request(security, ALICE, produce)
        frame = wire.encode_request(produce, correlation_id=1, client_id="c")
        decoded = authorize_request(security, ALICE, wire.decode_request(frame))  # the version from the header
        assert (decoded.api_key, decoded.version) == (ApiKey.PRODUCE, produce.__version__)
        with pytest.raises(ValueError, match="not v3"):
            authorize_request(security, ALICE, produce, 3)
        with pytest.raises(ValueError, match="security API"):
            authorize_request(security, ALICE, wire.build(wire.request_schema(ApiKey.CREATE_ACLS, 3)), 3)
        with pytest.raises(ValueError, match="inter-broker"):
            authorize_request(security, ALICE, wire.build(wire.request_schema(ApiKey.VOTE, 0)), 0)
        with pytest.raises(ValueError, match="nothing was forwarded"):
            authorize_request(security, ALICE, produce, 9).response(wire.build(wire.response_schema(ApiKey.PRODUCE, 9)))
        security.create_acls(CASES[0].grants)
        with pytest.raises(ValueError, match="needs its answer"):
            authorize_request(security, ALICE, produce, 9).response(None)


_NAMES = ("t0", "t1", "t2", "t3")
_acls = st.lists(st.builds(
    lambda name, pattern, principal, operation, permission: AclBinding.of(
        "TOPIC", name, pattern, principal, "*", operation, permission),
    st.sampled_from(("t", "t1", "t2", "*", "t3")), st.sampled_from(("LITERAL", "PREFIXED")),
    st.sampled_from(("User:alice", "User:*", "User:bob")), st.sampled_from(("READ", "WRITE", "DESCRIBE", "ALL")),
    st.sampled_from(("ALLOW", "DENY")),
), max_size=6)
_topics = st.lists(st.tuples(st.sampled_from(_NAMES), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)),
                   min_size=1, max_size=4, unique_by=lambda t: t[0])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=_acls, topics=_topics, api=st.sampled_from(("produce", "fetch")))
def test_per_partition_answers_equal_security_decisions(acls, topics, api):
    """For random ACLs and requests, each partition is refused exactly when KafkaSecurity
    denies its topic, and with Kafka's code; the rest go on untouched."""
    if api == "produce":
        operation, request = "WRITE", make(wire.request_schema(ApiKey.PRODUCE, 9), {"acks": 1, "topic_data": [
            {"name": name, "partition_data": [{"index": p, "records": record_batch()} for p in parts]} for name, parts in topics]})
    else:
        operation, request = "READ", make(wire.request_schema(ApiKey.FETCH, 12), {"max_wait": 0, "min_bytes": 0, "topics": [
            {"topic": name, "partitions": [{"partition": p, "fetch_offset": 0, "partition_max_bytes": 1} for p in parts]}
            for name, parts in topics]})
    with open_security(acls=acls) as security:
        authorization = authorize_request(security, ALICE, request, int(request.__version__))
        decisions = security.authorize(ALICE, [Action(operation, ResourcePattern("TOPIC", name)) for name, _ in topics])
    denied = {name for (name, _), d in zip(topics, decisions) if d is AuthorizationResult.DENIED}
    response = client_response(authorization)
    entries = response.responses
    answered = {}
    for entry in entries:
        name = getattr(entry, "name", None) or getattr(entry, "topic", None)
        for p in getattr(entry, "partition_responses", None) or entry.partitions:
            answered[(name, getattr(p, "index", getattr(p, "partition_index", None)))] = int(p.error_code)
    assert answered == {(name, p): 29 for name, parts in topics if name in denied for p in parts}
    forwarded = [] if authorization.forward is None else [
        getattr(t, "name", None) or t.topic for t in getattr(authorization.forward, "topic_data", None) or authorization.forward.topics]
    assert forwarded == [name for name, _ in topics if name not in denied]
    assert authorization.unchanged == (not denied)
