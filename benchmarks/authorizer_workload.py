"""The ACL workload of Kafka's jmh ``AuthorizerBenchmark``, ported to kafkasec.

Kafka (jmh-benchmarks, ``org.apache.kafka.jmh.acl.AuthorizerBenchmark``) parameterises the
workload with ``resourceCount`` {10000, 50000, 200000}, ``aclCount`` {10, 50} and
``denyPercentage`` {0, 20, 50, 90, 99, 99.9, 99.99, 100}; this module builds the same ACLs:

* for every ``resourceId`` in ``range(resourceCount)``: the resource
  ``GROUP`` if ``resourceId % 10 == 0`` else ``TOPIC``, named ``"foo-bar35_resource-" + id``,
  ``PREFIXED`` if ``resourceId % 5 == 0`` else ``LITERAL``; on it, for every ``aclId`` in
  ``range(aclCount)``, principal ``"User:test-user" + ("" if aclId == 0 else str(aclId))``,
  host ``*``, ``READ ALLOW``, plus ``READ DENY`` with probability ``denyPercentage / 100``;
* ``TOPIC "foo-bar35_resource-" PREFIXED``: for ``hostId`` 0..9, ``User:test-user`` from
  ``"127.0.0." + hostId`` ``READ ALLOW`` (+ ``DENY`` by chance);
* ``TOPIC "*" LITERAL``: for ``hostId`` in ``range(resourceCount // 10)``, ``User:test-user``
  from ``"127.0.0" + hostId`` -- no dot, Kafka's own typo, kept so that the per-host map of the
  wildcard pattern is as big as in Kafka -- ``READ ALLOW`` (+ ``DENY`` by chance).

The deny coin is a seeded :class:`random.Random` (Kafka uses an unseeded ``java.util.Random``),
so a run is reproducible. Only ``aclId == 0`` is the benchmark's own principal: with
``aclCount`` 50 every resource carries 49 ACLs of other principals.
"""

from __future__ import annotations

import random
from typing import Iterator

from attrs import frozen

from kafkasec.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkasec.context import Action, RequestContext
from kafkasec.principals.principal import KafkaPrincipal

RESOURCE_NAME_PREFIX = "foo-bar35_resource-"
PRINCIPAL = "User:test-user"
KAFKA_RESOURCE_COUNTS = (10_000, 50_000, 200_000)
KAFKA_ACL_COUNTS = (10, 50)
KAFKA_DENY_PERCENTAGES = (0, 20, 50, 90, 99, 99.9, 99.99, 100)

READ, WRITE = AclOperation.READ, AclOperation.WRITE
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


@frozen
class Workload:
    """One point of the parameter grid and its ACLs, keyed by id as a metadata stream has them."""

    resource_count: int
    acl_count: int
    deny_percentage: float
    seed: int
    acls: dict  # acl id -> AclBinding

    @property
    def deny_count(self) -> int:
        return sum(1 for b in self.acls.values() if b.entry.permission_type is DENY)


def iter_bindings(resource_count: int, acl_count: int, deny_percentage: float, seed: int = 42) -> Iterator[AclBinding]:
    """Kafka's ``prepareAclCache``, in its order, as AclBindings."""
    rand = random.Random(seed)

    def should_deny() -> bool:
        # Kafka: rand.nextDouble() * 100.0 - eps < denyPercentage, i.e. never at 0, always at 100.
        return rand.random() * 100.0 - 1e-9 < deny_percentage

    # Equal entries are shared between resources (they are immutable values); this only saves
    # memory and time in the generator, the authorizer sees one AclBinding per ACL either way.
    entries: dict[tuple, AccessControlEntry] = {}

    def entry(principal: str, host: str, permission: AclPermissionType) -> AccessControlEntry:
        key = (principal, host, permission)
        value = entries.get(key)
        if value is None:
            value = entries[key] = AccessControlEntry(principal, host, READ, permission)
        return value

    principals = [PRINCIPAL + ("" if acl_id == 0 else str(acl_id)) for acl_id in range(acl_count)]
    for resource_id in range(resource_count):
        pattern = ResourcePattern(
            ResourceType.GROUP if resource_id % 10 == 0 else ResourceType.TOPIC,
            RESOURCE_NAME_PREFIX + str(resource_id),
            PatternType.PREFIXED if resource_id % 5 == 0 else PatternType.LITERAL,
        )
        for principal in principals:
            yield AclBinding(pattern, entry(principal, "*", ALLOW))
            if should_deny():
                yield AclBinding(pattern, entry(principal, "*", DENY))

    prefix = ResourcePattern(ResourceType.TOPIC, RESOURCE_NAME_PREFIX, PatternType.PREFIXED)
    for host_id in range(10):
        host = "127.0.0." + str(host_id)
        yield AclBinding(prefix, AccessControlEntry(PRINCIPAL, host, READ, ALLOW))
        if should_deny():
            yield AclBinding(prefix, AccessControlEntry(PRINCIPAL, host, READ, DENY))

    wildcard = ResourcePattern(ResourceType.TOPIC, "*", PatternType.LITERAL)
    for host_id in range(resource_count // 10):
        host = "127.0.0" + str(host_id)  # sic: no dot, as in Kafka's benchmark
        yield AclBinding(wildcard, AccessControlEntry(PRINCIPAL, host, READ, ALLOW))
        if should_deny():
            yield AclBinding(wildcard, AccessControlEntry(PRINCIPAL, host, READ, DENY))


def build_workload(resource_count: int, acl_count: int, deny_percentage: float, seed: int = 42) -> Workload:
    acls = {
        f"acl-{n}": binding
        for n, binding in enumerate(iter_bindings(resource_count, acl_count, deny_percentage, seed))
    }
    return Workload(resource_count, acl_count, deny_percentage, seed, acls)


def expected_acl_count(resource_count: int, acl_count: int) -> int:
    """ALLOW ACLs only (the count at deny 0%); each may be joined by one DENY."""
    return resource_count * acl_count + 10 + resource_count // 10


# ----------------------------------------------------------------------- requests

def context() -> RequestContext:
    """Kafka's benchmark context: User:test-user from 127.0.0.1."""
    return RequestContext(KafkaPrincipal("User", "test-user"), "127.0.0.1")


def by_resource_type_context() -> RequestContext:
    """Kafka's ``authorizeByResourceTypeContext``: the same user from 127.0.0.2."""
    return RequestContext(KafkaPrincipal("User", "test-user"), "127.0.0.2")


BENCH_RESOURCE = ResourcePattern(ResourceType.TOPIC, RESOURCE_NAME_PREFIX + "95", PatternType.LITERAL)
"""Kafka's ``testAclsIterator``/``testAuthorizer`` resource: ``TOPIC foo-bar35_resource-95``.

Its name is matched by the PREFIXED pattern ``foo-bar35_resource-95`` (95 % 5 == 0), the
PREFIXED ``foo-bar35_resource-`` (with its per-host ACLs) and the LITERAL ``*``.
"""

WRITE_ACTION = Action(WRITE, BENCH_RESOURCE)
"""Kafka's benchmark action: no ACL grants WRITE, so the answer is DENIED after every lookup."""

READ_ACTION = Action(READ, BENCH_RESOURCE)
"""The allow path: ALLOWED unless the coin put a READ DENY on a pattern that applies."""


def sanity_actions() -> list[Action]:
    """Extra actions whose answers must agree between kafkasec and the naive scan."""
    names = ["95", "96", "10", "11", "0", "199995", "no-such-id"]
    actions = [WRITE_ACTION, READ_ACTION]
    for suffix in names:
        for resource_type in (ResourceType.TOPIC, ResourceType.GROUP):
            pattern = ResourcePattern(resource_type, RESOURCE_NAME_PREFIX + suffix)
            for op in (READ, WRITE, AclOperation.DESCRIBE):
                actions.append(Action(op, pattern))
    actions.append(Action(READ, ResourcePattern(ResourceType.TOPIC, "unrelated-topic")))
    actions.append(Action(READ, ResourcePattern(ResourceType.TOPIC, "*")))
    return actions
