"""What the grid tests share about effective access: random estates whose ACLs reach users through
groups (the groupfile plugin loaded in a KafkaSecurity), and the reference every grid cell is held
to, ``KafkaSecurity.authorize`` asked about each operation of the cell."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import strategies as st

import kafkasec_groupfile
from kafkasec import AclBinding, Action, AuthorizationResult, RequestContext, ResourcePattern
from kafkasec.acl import supported_operations
from kafkasec.testing import open_security

MEMBERS = ("alice", "bob", "carol", "dave")
GROUPS = ("eng", "ops", "sre")
# Members, one in no group (erin), a super user, and a group asked about as a principal itself.
PRINCIPALS = [(f"User:{name}", host) for name in (*MEMBERS, "erin", "admin") for host in ("10.0.0.1", "10.0.0.2")]
PRINCIPALS += [("Group:eng", "10.0.0.1")]
RESOURCES = [("TOPIC", "orders-eu"), ("TOPIC", "orders-secret"), ("TOPIC", "payments"), ("TOPIC", "o"),
             ("GROUP", "billing"), ("GROUP", "orders-eu"), ("CLUSTER", "kafka-cluster")]

acls = st.lists(
    st.builds(
        lambda rt, name, pt, principal, host, op, perm: AclBinding.of(
            rt, "kafka-cluster" if rt == "CLUSTER" else name, "LITERAL" if rt == "CLUSTER" else pt, principal, host, op, perm),
        st.sampled_from(["TOPIC", "GROUP", "CLUSTER"]), st.sampled_from(["orders-", "orders-eu", "*", "o", "billing", "payments"]),
        st.sampled_from(["LITERAL", "PREFIXED"]),
        st.sampled_from(["User:alice", "User:bob", "User:erin", "Group:eng", "Group:ops", "Group:sre", "User:*"]),
        st.sampled_from(["*", "10.0.0.1"]),
        st.sampled_from(["READ", "WRITE", "ALL", "DESCRIBE", "CREATE", "ALTER_CONFIGS"]), st.sampled_from(["ALLOW", "DENY"]),
    ),
    max_size=14,
)
memberships = st.dictionaries(st.sampled_from(GROUPS), st.lists(st.sampled_from(MEMBERS), unique=True), max_size=3)


@contextlib.contextmanager
def group_security(bindings, membership: dict[str, list[str]], allow_everyone: bool = False):
    """A KafkaSecurity (in memory, super user User:admin) with the groupfile plugin reading
    ``membership`` (group -> member names) and ``bindings`` stored (Kafka refuses none of them)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "groups.txt"
        path.write_text("".join(f"{group}: {', '.join(names)}\n" for group, names in membership.items()), encoding="utf-8")
        settings = {kafkasec_groupfile.PATH_SETTING: str(path), "super.users": "User:admin",
                    "allow.everyone.if.no.acl.found": str(allow_everyone).lower()}
        with open_security(plugins=[kafkasec_groupfile], **settings) as security:
            results = security.create_acls(list(bindings))
            assert all(result.error is None for result in results), results
            yield security


def authorized_bits(security, principal: str, host: str, resource_type, name: str) -> int:
    """The KIP-430 bitfield of one cell, as ``security.authorize`` answers each supported
    operation of it (with its plugins: the principal expanded)."""
    context = RequestContext.for_principal(principal, host)
    pattern = ResourcePattern(resource_type, name)
    operations = sorted(supported_operations(pattern.resource_type))
    results = security.authorize(context, [Action(op, pattern) for op in operations])
    return sum(1 << op for op, result in zip(operations, results) if result is AuthorizationResult.ALLOWED)
