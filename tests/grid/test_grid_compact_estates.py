"""The compact grid of team-shaped estates with many principal classes and exceptions (issue 31's
hard estate, scaled down) answers as StandardAuthorizer.authorized_operations on sampled cells,
through bits(), row(), class_row() and dense(), and keeps its exceptions sorted by (pc, rc) with
``exception_ptr`` their offsets per principal class."""

import random

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import operations_to_bitfield
from spark_udfs.compact import CompactGrid
from spark_udfs.evaluator import CompiledAcls

TOPIC_OPERATIONS = ["READ", "WRITE", "DESCRIBE", "ALL", "ALTER", "DELETE", "DESCRIBE_CONFIGS"]
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00:0:0:0:0:0:0:d77"]
SAMPLED_CELLS = 300


def team_estate(rng: random.Random, teams: int, apps: int, topics: int):
    """Each team's apps on the team's prefix (some from one host, some DENY), on literal topics
    and groups; User:* on some literal topics and prefixes, from a host or any; principals that
    are named, unnamed, super or User:* itself, on several hosts (IPv6 written otherwise too)."""
    bindings = []
    for team in range(teams):
        for app in range(apps):
            principal = f"User:t{team}-app{app}"
            bindings.append(AclBinding.of(
                "TOPIC", f"t{team}-", "PREFIXED", principal, rng.choice(["*", *HOSTS]),
                rng.choice(TOPIC_OPERATIONS), "DENY" if rng.random() < 0.1 else "ALLOW"))
            for _ in range(rng.randrange(4)):
                bindings.append(AclBinding.of(
                    "TOPIC", f"t{team}-topic{rng.randrange(topics)}", rng.choice(["LITERAL", "LITERAL", "PREFIXED"]),
                    principal, rng.choice(["*", "*", *HOSTS]), rng.choice(TOPIC_OPERATIONS),
                    "DENY" if rng.random() < 0.1 else "ALLOW"))
            bindings.append(AclBinding.of("GROUP", f"t{team}-group{rng.randrange(4)}", "LITERAL", principal, "*",
                                          rng.choice(["READ", "DESCRIBE", "ALL"]), "ALLOW"))
        bindings.append(AclBinding.of("TOPIC", f"t{team}-topic{rng.randrange(topics)}", rng.choice(["LITERAL", "PREFIXED"]),
                                      "User:*", rng.choice(["*", *HOSTS]), rng.choice(TOPIC_OPERATIONS),
                                      "DENY" if rng.random() < 0.2 else "ALLOW"))
    principals = [(f"User:t{team}-app{app}", host) for team in range(teams) for app in range(apps)
                  for host in rng.sample(["10.0.0.1", "10.0.0.2", "10.0.0.9", "fd00::d77"], 2)]
    principals += [("User:guest", "10.0.0.1"), ("User:guest", "10.0.0.9"), ("User:admin", "10.0.0.2"),
                   ("User:*", "10.0.0.2"), ("User:*", "fd00::d77")]
    resources = [("TOPIC", f"t{team}-topic{n}") for team in range(teams + 1) for n in range(topics)]
    resources += [("GROUP", f"t{team}-group{n}") for team in range(teams) for n in range(5)]
    resources += [("TOPIC", f"t{team}-") for team in range(teams)] + [("TRANSACTIONAL_ID", "t0-topic1")]
    return bindings, principals, resources


def authorized(authorizer, principal, resource) -> int:
    context = RequestContext(KafkaPrincipal.parse(principal[0]), principal[1])
    return operations_to_bitfield(authorizer.authorized_operations(context, ResourcePattern(*resource)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), teams=st.integers(1, 5), apps=st.integers(1, 12), topics=st.integers(1, 30),
       allow_everyone=st.booleans())
def test_sampled_cells_are_the_authorizers(seed, teams, apps, topics, allow_everyone):
    rng = random.Random(seed)
    bindings, principals, resources = team_estate(rng, teams, apps, topics)
    authorizer = StandardAuthorizer("User:admin", allow_everyone)
    authorizer.create_acls(list(dict.fromkeys(bindings)))
    compact = CompactGrid.build(CompiledAcls.from_authorizer(authorizer), principals, resources)

    order = np.lexsort((compact.exception_rc, compact.exception_pc))
    assert (order == np.arange(len(order))).all(), "exceptions are sorted by (pc, rc)"
    keys = compact.exception_pc * len(compact.base) + compact.exception_rc
    assert (np.diff(keys) > 0).all(), "each (pc, rc) at most once"
    assert compact.exception_ptr.tolist() == np.searchsorted(
        compact.exception_pc, np.arange(len(compact.class_is_super) + 1)).tolist()

    dense = compact.dense()
    cells = [(rng.randrange(len(principals)), rng.randrange(len(resources))) for _ in range(SAMPLED_CELLS)]
    for i, j in cells:
        want = authorized(authorizer, principals[i], resources[j])
        assert compact.bits(i, j) == dense[i, j] == want, (principals[i], resources[j])
    for i in rng.sample(range(len(principals)), min(5, len(principals))):
        row = [authorized(authorizer, principals[i], resource) for resource in resources]
        assert compact.row(i).tolist() == dense[i].tolist() == row, principals[i]
