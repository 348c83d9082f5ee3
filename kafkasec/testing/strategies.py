"""Hypothesis strategies for ACL sets and authorization questions.

Small alphabets make names, prefixes, hosts and principals collide often, which is where
Kafka's rules interact. GROUP names may start with characters below '*' (Kafka's
StandardAuthorizer can hang or throw on those; an authorizer must simply answer). A question
is ``(principal, host, operation, resource type, resource name)``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from kafkasec import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

NAME_ALPHABET = "ab!*"
names = st.text(NAME_ALPHABET, min_size=1, max_size=3)
acl_principals = st.sampled_from(["User:alice", "User:bob", "User:*", "Group:*", "Group:eng", "User:admin"])
query_principals = st.sampled_from(["User:alice", "User:bob", "User:carol", "User:*", "Group:eng", "User:admin"])
hosts = st.sampled_from(["*", "10.0.0.1", "10.0.0.2"])
query_hosts = st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
resource_types = st.sampled_from([ResourceType.TOPIC, ResourceType.GROUP])
concrete_operations = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
operations = st.sampled_from(concrete_operations)

bindings = st.builds(
    AclBinding.of,
    resource_types,
    names,
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    acl_principals,
    hosts,
    operations,
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]),
)

questions = st.tuples(query_principals, query_hosts, operations, resource_types, names)
implied_operations = st.sampled_from([AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALL])


@st.composite
def acls_and_questions(draw, max_acls=25, bindings=bindings, questions=questions, query_hosts=query_hosts):
    """ACLs plus questions aimed at them (their names, principals, hosts and implied operations)
    as well as random ones, so that the interesting rules fire in most examples. A plugin's
    contract passes its own ``bindings`` and ``questions`` (its principals, its names)."""
    acls = draw(st.lists(bindings, max_size=max_acls))
    asked = draw(st.lists(questions, min_size=1, max_size=5))
    for binding in draw(st.lists(st.sampled_from(acls), max_size=6)) if acls else ():
        principal = binding.entry.principal if binding.entry.principal != "Group:*" else "User:alice"
        host = binding.entry.host if binding.entry.host != "*" else draw(query_hosts)
        op = draw(st.one_of(st.just(binding.entry.operation), implied_operations, operations))
        name = binding.pattern.name + draw(st.sampled_from(["", "a", "b!"]))
        asked.append((principal, host, op, binding.pattern.resource_type, name))
    return acls, asked


__all__ = [
    "acl_principals", "acls_and_questions", "bindings", "concrete_operations", "hosts", "implied_operations",
    "names", "operations", "query_hosts", "query_principals", "questions", "resource_types",
]
