"""Hypothesis strategies for ACL sets and authorization questions.

Small alphabets make names, prefixes, hosts and principals collide often, which is where
Kafka's rules interact. GROUP names may start with characters below '*' (Kafka's
StandardAuthorizer can hang or throw on those; an authorizer must simply answer). A question
is ``(principal, host, operation, resource type, resource name)``. :func:`acls_and_questions_of`
adds a plugin's own names and principals (:class:`~kafkasec.testing.vocabulary.Vocabulary`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from kafkasec import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from kafkasec.testing.vocabulary import OTHER_TYPE_PRINCIPAL, UNDER_A_PREFIX, Vocabulary

NAME_ALPHABET = "ab!*"
names = st.text(NAME_ALPHABET, min_size=1, max_size=3)
ACL_PRINCIPALS = ("User:alice", "User:bob", "User:*", "Group:*", "Group:eng", "User:admin", OTHER_TYPE_PRINCIPAL)
QUERY_PRINCIPALS = ("User:alice", "User:bob", "User:carol", "User:*", "Group:eng", "User:admin", OTHER_TYPE_PRINCIPAL)
acl_principals = st.sampled_from(ACL_PRINCIPALS)
query_principals = st.sampled_from(QUERY_PRINCIPALS)
hosts = st.sampled_from(["*", "10.0.0.1", "10.0.0.2"])
query_hosts = st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
resource_types = st.sampled_from([ResourceType.TOPIC, ResourceType.GROUP])
concrete_operations = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
operations = st.sampled_from(concrete_operations)



def bindings_of(names, principals):
    """ACLs on ``names`` (literal or prefixed) for ``principals``, from the strategies' hosts,
    of every operation, allowed or denied."""
    return st.builds(
        AclBinding.of,
        resource_types,
        names,
        st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
        principals,
        hosts,
        operations,
        st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]),
    )


bindings = bindings_of(names, acl_principals)
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


def acls_and_questions_of(vocabulary: Vocabulary):
    """:func:`acls_and_questions` whose names and principals are the strategies' and the
    vocabulary's: its names in ACLs (literal or prefixed), its names and names under them in
    questions, its principals in both."""
    if not vocabulary:
        return acls_and_questions()
    own_names = list(vocabulary.resource_names)
    asked_names = [name + suffix for name in own_names for suffix in ("", UNDER_A_PREFIX)]
    acl_names = st.one_of(names, st.sampled_from(own_names)) if own_names else names
    question_names = st.one_of(names, st.sampled_from(asked_names)) if asked_names else names
    return acls_and_questions(
        bindings=bindings_of(acl_names, st.sampled_from([*ACL_PRINCIPALS, *vocabulary.principals])),
        questions=st.tuples(st.sampled_from([*QUERY_PRINCIPALS, *vocabulary.principals]), query_hosts, operations,
                            resource_types, question_names),
    )


__all__ = [
    "ACL_PRINCIPALS", "QUERY_PRINCIPALS", "acl_principals", "acls_and_questions", "acls_and_questions_of", "bindings",
    "bindings_of", "concrete_operations", "hosts", "implied_operations", "names", "operations", "query_hosts",
    "query_principals", "questions", "resource_types",
]
