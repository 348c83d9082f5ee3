"""Every version of every API the gateway forwards to Tansu, over real sockets, as a principal
allowed everything a request needs, nothing, and part of it: the answer decodes at the version
sent, answers the request's items, and carries Kafka's error codes for that principal.

The rows are tests/request_rules_support.py's; the same table at the library level, with the
APIs Tansu does not offer, is tests/protocol/test_request_rules_all_versions.py. One gateway
serves the module, and each principal keeps one logged-in connection (opened again when the
gateway closes it), so the few hundred requests take seconds.
"""

from __future__ import annotations

import asyncio
import dataclasses

import attrs
import pytest

from kafkasec.acl import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey

from gateway_support import gateway_running, gateway_security
from request_rules_support import (
    CASES,
    GROUP,
    ROLES,
    SECRET_TOPIC_ID,
    SECRETS,
    TOPIC,
    TOPIC_ID,
    as_role,
    check_answer,
    make,
    renamed,
)
from server_support import PASSWORDS, add_users, logged_in, open_security

TANSU_OFFERS = {
    ApiKey.PRODUCE: (3, 11), ApiKey.FETCH: (4, 17), ApiKey.LIST_OFFSETS: (1, 9), ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (2, 9), ApiKey.OFFSET_FETCH: (1, 9), ApiKey.FIND_COORDINATOR: (0, 6), ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4), ApiKey.LEAVE_GROUP: (0, 5), ApiKey.SYNC_GROUP: (0, 5), ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 5), ApiKey.CREATE_TOPICS: (2, 7), ApiKey.DELETE_TOPICS: (1, 6), ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5), ApiKey.ADD_OFFSETS_TO_TXN: (0, 4), ApiKey.END_TXN: (0, 4),
    ApiKey.TXN_OFFSET_COMMIT: (0, 4), ApiKey.DESCRIBE_CONFIGS: (1, 4), ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1), ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0), ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0), ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: (0, 0),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
}
"""What the gateway forwards to the Tansu of tests/tansu_support.py (the versions kio, Tansu and
a rule share; DeleteRecords is unadvertised): the table's versions, checked by the first test."""

TANSU_CLOSES = {ApiKey.END_TXN: range(0, 5), ApiKey.ADD_PARTITIONS_TO_TXN: range(4, 6)}
"""Versions Tansu answers by closing the connection (a stub behind an advertised API): a request
it is sent must close the client's connection too, for the gateway answers nothing the upstream
did not answer."""

JOINED = {GROUP: "group-joined"}
"""The group of the JoinGroup rows: Tansu keeps the rebalance a JoinGroup starts, and holds every
SyncGroup of that group 5 s on it after (Kafka answers UNKNOWN_MEMBER_ID at once)."""

USERS = {"all": "alice", "none": "bob", "part": "carol"}
PASSWORD = {**PASSWORDS, "carol": "carol-secret"}
REQUEST_TIMEOUT = 10.0
"""Seconds an answer may take before the connection is given up: Tansu holds a SyncGroup up to 5 s."""

PARAMS = [
    pytest.param(row, role, version, id=case.id_at(version, role))
    for case in CASES if case.api in TANSU_OFFERS
    for version in case.described_versions if TANSU_OFFERS[case.api][0] <= version <= TANSU_OFFERS[case.api][1]
    for role in ROLES if (row := as_role(case, role, version)) is not None
]


class Principals:
    """One logged-in connection per user on one event loop, opened again after the gateway
    closes it; and, as admin, the topics the rows name, kept in existence."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.loop = asyncio.new_event_loop()
        self.connections: dict = {}

    def ask(self, user: str, request):
        """The answer to ``request`` from ``user``, or None when the gateway closed the connection."""
        return self.loop.run_until_complete(self._ask(user, request))

    async def _ask(self, user: str, request):
        if user not in self.connections:
            self.connections[user] = await logged_in(self.endpoint, user, password=PASSWORD[user])
        connection = self.connections[user]
        try:
            return await asyncio.wait_for(connection.request(request), REQUEST_TIMEOUT)
        except (ConnectionError, asyncio.TimeoutError):
            del self.connections[user]
            await connection.close()
            return None

    def grant(self, user: str, grants) -> None:
        """``user``'s ACLs become ``grants`` (written for any principal)."""
        principal = f"User:{user}"
        security = self.endpoint.security
        security.delete_acls([AclBindingFilter(ResourcePatternFilter(), AccessControlEntryFilter(principal=principal))])
        security.create_acls([attrs.evolve(grant, entry=attrs.evolve(grant.entry, principal=principal)) for grant in grants])

    def topic_ids(self) -> dict:
        """Tansu's ids of the rows' topics, by the ids that stand for them in the rows
        (TOPIC_ID, SECRET_TOPIC_ID); a topic a DeleteTopics row deleted is made again, as admin."""
        names = [TOPIC, SECRETS[TOPIC]]
        create = make(wire.request_schema(ApiKey.CREATE_TOPICS, 7), {"topics": [
            {"name": name, "num_partitions": 1, "replication_factor": 1} for name in names]})
        self.ask("admin", create)
        metadata = make(wire.request_schema(ApiKey.METADATA, 12), {"topics": [{"name": name} for name in names]})
        ids = {topic.name: topic.topic_id for topic in self.ask("admin", metadata).topics}
        return {TOPIC_ID: ids[TOPIC], SECRET_TOPIC_ID: ids[SECRETS[TOPIC]]}

    def close(self) -> None:
        for connection in self.connections.values():
            self.loop.run_until_complete(connection.close())
        self.loop.close()


def _about(case, names):
    """``case`` about other resources: its names, in its values and its grants, replaced by ``names``."""
    grants = tuple(
        attrs.evolve(grant, pattern=attrs.evolve(grant.pattern, name=names.get(grant.pattern.name, grant.pattern.name)))
        for grant in case.grants
    )
    return dataclasses.replace(case, values=renamed(case.values, names), grants=grants)


@pytest.fixture(scope="module")
def principals(tmp_path_factory, tansu):
    state = tmp_path_factory.mktemp("gateway-versions") / "state.db"
    with open_security(state) as security:
        add_users(security, PASSWORD)
    with gateway_security(state, tansu.bootstrap) as security, gateway_running(security) as gateway:
        principals = Principals(gateway)
        yield principals
        principals.close()


def test_the_table_has_the_versions_the_gateway_forwards(principals):
    assert principals.endpoint.gateway.forwarded_ranges == TANSU_OFFERS
    covered = {(case.api, version) for case, _, version in (param.values for param in PARAMS)}
    assert covered == {(api, version) for api, (low, high) in TANSU_OFFERS.items() for version in range(low, high + 1)}


@pytest.mark.parametrize("case, role, version", PARAMS)
def test_every_forwarded_version_answered_as_kafka_answers(principals, case, role, version):
    ids = principals.topic_ids()
    if case.api == ApiKey.JOIN_GROUP:
        case = _about(case, JOINED)
    principals.grant(USERS[role], case.grants)
    request = case.request(version, ids)
    response = principals.ask(USERS[role], request)
    if role == "all" and version in TANSU_CLOSES.get(case.api, ()):
        assert response is None, response
        return
    assert response is not None, f"the gateway closed the connection instead of answering {case.api.title} v{version}"
    assert response.__version__ == version
    check_answer(case, role, version, request, response, ids)

