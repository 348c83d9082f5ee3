"""Every client API kafkasec has a rule for, at every version kio has, as a principal allowed
everything a request needs, nothing, and part of it: the decision (what goes on, what is refused
with which Kafka error) and the client's response made from a kio answer to the forwarded part,
which must encode and decode again at that version.

This is where the APIs Tansu does not offer (OffsetForLeaderEpoch, AlterConfigs,
CreatePartitions, DescribeProducers, DescribeTransactions, ElectLeaders ...) are tested; the
gateway's table over sockets is tests/server/test_gateway_versions.py. Expectations are Kafka's
(KafkaApis.scala, AuthorizerIntegrationTest.scala's requestKeyToError).
"""

from __future__ import annotations

import pytest

from kafkasec import KafkaSecurity, RequestContext
from kafkasec.acl import AclBindingFilter
from kafkasec.protocol import wire
from kafkasec.protocol.request_rules import authorize_request

from request_rules_support import (
    CASES,
    ROLES,
    SECRET_TOPIC_ID,
    SECRETS,
    TOPIC,
    TOPIC_ID,
    as_role,
    check_answer,
    echo,
    item_names,
    request_items,
)

ALICE = RequestContext.for_principal("User:alice")
NAMES = frozenset(SECRETS) | frozenset(SECRETS.values())
TOPIC_NAMES = {TOPIC_ID: TOPIC, SECRET_TOPIC_ID: SECRETS[TOPIC]}

PARAMS = [
    pytest.param(row, role, version, id=case.id_at(version, role))
    for case in CASES for version in case.described_versions for role in ROLES
    if (row := as_role(case, role, version)) is not None
]


@pytest.fixture(scope="module")
def security():
    with KafkaSecurity.from_config({"kafkasec.state.path": ":memory:", "super.users": "User:admin"}) as security:
        yield security


@pytest.mark.parametrize("case, role, version", PARAMS)
def test_every_version_decided_and_answered_in_kafkas_shape(security, case, role, version):
    security.delete_acls([AclBindingFilter.ANY])
    security.create_acls(case.grants)
    request = case.request(version)
    authorization = authorize_request(security, ALICE, request, version, topic_names=TOPIC_NAMES)
    forward = authorization.forward
    answer = None if forward is None else echo(forward, wire.response_schema(case.api, version), NAMES)
    response = authorization.response(answer)
    encoded = wire.encode_response(response, correlation_id=7)
    _, decoded = wire.decode_response(encoded, case.api, version)
    assert wire.encode_response(decoded, correlation_id=7) == encoded
    check_answer(case, role, version, request, response)
    if answer is not None:  # what the broker answered is kept
        assert item_names(answer, NAMES) <= item_names(response, NAMES), response
    if role == "all" or not case.error:
        assert authorization.refusals == () and forward is not None
        return
    assert {refusal.error for refusal in authorization.refusals} == {case.error}, authorization.refusals
    asked = set(request_items(request, NAMES))
    if asked & set(SECRETS.values()):  # the items granted go on, without the other
        assert set(request_items(forward, NAMES)) == asked - set(SECRETS.values())
