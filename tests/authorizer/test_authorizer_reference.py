"""The compiled index against the reference model, on random ACL sets and random questions
(the strategies of kafkasec.testing.strategies, which plugin authors' contracts use too)."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    PatternType,
    ResourcePattern,
    ResourceType,
    RuleKind,
    StandardAuthorizer,
)
from kafkasec.authorizer.reference import ReferenceAuthorizer, acl_verdict, pattern_matches
from kafkasec.context import RequestContext
from kafkasec.testing.strategies import (
    acls_and_questions,
    bindings,
    questions,
    resource_types,
)

WILDCARD = KafkaPrincipal.parse("User:*")

configs = st.tuples(st.sampled_from([(), ("User:admin",), ("User:*",)]), st.booleans())

reference_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_allows(acls, super_users, allow_everyone, principal, host, op, resource_type, name) -> bool:
    reference = ReferenceAuthorizer(acls, super_users, allow_everyone)
    action = Action(op, ResourcePattern(resource_type, name))
    return reference.authorize(RequestContext.for_principal(principal, host), [action]) == [AuthorizationResult.ALLOWED]


def reference_operations(acls, super_users, allow_everyone, principal, host, resource_type, name):
    reference = ReferenceAuthorizer(acls, super_users, allow_everyone)
    return reference.authorized_operations(RequestContext.for_principal(principal, host), ResourcePattern(resource_type, name))


def reference_allows_by_type(acls, super_users, allow_everyone, principal, host, op, resource_type) -> bool:
    reference = ReferenceAuthorizer(acls, super_users, allow_everyone)
    context = RequestContext.for_principal(principal, host)
    return reference.authorize_by_resource_type(context, op, resource_type) is AuthorizationResult.ALLOWED


def build(acls, super_users, allow_everyone):
    authorizer = StandardAuthorizer(super_users, allow_everyone)
    results = authorizer.create_acls(acls)
    assert all(r.error is None for r in results)
    return authorizer


@reference_settings
@given(acls_and_questions(), configs)
def test_authorize_matches_reference(acls_asked, config):
    acls, asked = acls_asked
    super_users, allow_everyone = config
    authorizer = build(acls, super_users, allow_everyone)
    for principal, host, op, resource_type, name in asked:
        expected = reference_allows(acls, super_users, allow_everyone, principal, host, op, resource_type, name)
        context = RequestContext.for_principal(principal, host)
        action = Action(op, ResourcePattern(resource_type, name))
        [result] = authorizer.authorize(context, [action])
        assert (result is AuthorizationResult.ALLOWED) == expected, (principal, host, op, resource_type, name)
        decision = authorizer.explain(context, action)
        assert decision.result is result
        if decision.rule.kind in (RuleKind.ALLOW_ACL, RuleKind.DENY_ACL):
            # The ACL named must itself give that answer for this request.
            verdict = acl_verdict(decision.rule.acl.binding, {KafkaPrincipal.parse(principal), WILDCARD}, host, op)
            assert verdict == (AclPermissionType.ALLOW if decision.allowed else AclPermissionType.DENY)
            assert pattern_matches(decision.rule.acl.binding.pattern, resource_type, name)


@reference_settings
@given(acls_and_questions(), configs)
def test_authorized_operations_matches_reference(acls_asked, config):
    acls, asked = acls_asked
    super_users, allow_everyone = config
    authorizer = build(acls, super_users, allow_everyone)
    for principal, host, _op, resource_type, name in asked:
        expected = reference_operations(acls, super_users, allow_everyone, principal, host, resource_type, name)
        got = authorizer.authorized_operations(RequestContext.for_principal(principal, host), ResourcePattern(resource_type, name))
        assert got == expected


@reference_settings
@given(acls_and_questions(), configs)
def test_authorized_operations_of_many_resources_in_one_batch_match_reference(acls_asked, config):
    # Through the facade, as a Metadata answer asks it: every resource of one caller at once.
    acls, asked = acls_asked
    super_users, allow_everyone = config
    with KafkaSecurity(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone) as security:
        security.create_acls(acls)
        for principal, host, _op, _resource_type, _name in asked:
            patterns = [ResourcePattern(resource_type, name) for _, _, _, resource_type, name in asked]
            expected = [
                reference_operations(acls, super_users, allow_everyone, principal, host, pattern.resource_type, pattern.name)
                for pattern in patterns
            ]
            assert security.authorized_operations_many(RequestContext.for_principal(principal, host), patterns) == expected


@reference_settings
@given(acls_and_questions(), configs)
def test_authorize_by_resource_type_matches_reference(acls_asked, config):
    acls, asked = acls_asked
    super_users, allow_everyone = config
    authorizer = build(acls, super_users, allow_everyone)
    for principal, host, op, resource_type, _name in asked:
        expected = reference_allows_by_type(acls, super_users, allow_everyone, principal, host, op, resource_type)
        got = authorizer.authorize_by_resource_type(RequestContext.for_principal(principal, host), op, resource_type)
        assert (got is AuthorizationResult.ALLOWED) == expected


@reference_settings
@given(st.lists(bindings, max_size=25), st.lists(questions, min_size=1, max_size=5))
def test_who_can_agrees_with_authorize(acls, asked):
    authorizer = build(acls, (), False)
    for _principal, host, op, resource_type, name in asked:
        pattern = ResourcePattern(resource_type, name)
        grantees = authorizer.who_can(op, pattern)
        for principal in ["User:alice", "User:bob", "User:carol", "Group:eng"]:
            allowed = authorizer.authorize(RequestContext.for_principal(principal, host), [Action(op, pattern)])[0]
            assert (allowed is AuthorizationResult.ALLOWED) == _who_can_allows(grantees, principal, host)


def _who_can_allows(grantees, principal, host):
    named = {g.principal for g in grantees} - {"User:*"}
    for grantee in grantees:
        if grantee.principal == principal or (grantee.principal == "User:*" and principal not in named):
            if principal in grantee.except_principals:
                continue
            if grantee.host == host or (grantee.host == "*" and host not in grantee.except_hosts):
                return True
    return False


# (add?, a new binding, which existing binding to remove): removals mostly hit ACLs that exist.
changes = st.lists(st.tuples(st.booleans(), bindings, st.integers(0, 10**6)), min_size=1, max_size=30)


@reference_settings
@given(changes, st.lists(questions, min_size=1, max_size=5))
def test_snapshots_after_each_change_match_reference(steps, asked):
    """Copy-on-write updates give the same index as building from scratch."""
    authorizer = StandardAuthorizer()
    current = set()
    for add, binding, pick in steps:
        if add:
            authorizer.create_acls([binding])
            current.add(binding)
        else:
            if current and pick % 4:
                binding = sorted(current, key=repr)[pick % len(current)]
            authorizer.delete_acls([binding.to_filter()])
            current.discard(binding)
        assert set(authorizer.acls()) == current
        assert len(authorizer.index) == len(current)
        # Asked after every change, including about the group the change touched: memoized
        # answers and summaries carried (or patched) across snapshots must stay true.
        entry = binding.entry
        own_host = entry.host if entry.host != "*" else "10.0.0.1"
        touched_question = (entry.principal, own_host, entry.operation, binding.pattern.resource_type, "")
        for principal, host, op, resource_type, _name in [*asked, touched_question]:
            expected = reference_allows_by_type(list(current), (), False, principal, host, op, resource_type)
            got = authorizer.authorize_by_resource_type(RequestContext.for_principal(principal, host), op, resource_type)
            assert (got is AuthorizationResult.ALLOWED) == expected
        # And the per-snapshot answers of authorize: a change must never leave one stale.
        for principal, host, op, resource_type, name in [*asked, (*touched_question[:4], binding.pattern.name)]:
            expected = reference_allows(list(current), (), False, principal, host, op, resource_type, name)
            context = RequestContext.for_principal(principal, host)
            [result] = authorizer.authorize(context, [Action(op, ResourcePattern(resource_type, name))])
            assert (result is AuthorizationResult.ALLOWED) == expected
    for principal, host, op, resource_type, name in asked:
        expected = reference_allows(list(current), (), False, principal, host, op, resource_type, name)
        [result] = authorizer.authorize(RequestContext.for_principal(principal, host), [Action(op, ResourcePattern(resource_type, name))])
        assert (result is AuthorizationResult.ALLOWED) == expected


# Principals whose type or name holds a ':'. Kafka reads an ACL's principal up to its first ':'
# and compares (type, name); a request's principal comes from a principal builder, whose type
# may hold one. Parts are drawn from a tiny alphabet, so that "Us:er" + "a" and "Us" + "er:a"
# (the same text, different principals) meet often.
principal_parts = st.text("Us:", max_size=3)
colon_principals = st.one_of(
    st.builds(KafkaPrincipal, principal_parts, principal_parts),
    st.just(WILDCARD),
)
colon_bindings = st.builds(
    AclBinding.of,
    resource_types,
    st.sampled_from(["a", "b", "*"]),
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    st.builds(lambda t, n: f"{t.replace(':', '')}:{n}", principal_parts, principal_parts) | st.just("User:*"),
    st.just("*"),
    st.sampled_from([AclOperation.READ, AclOperation.WRITE, AclOperation.ALL]),
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]),
)


@st.composite
def colon_acls_and_askers(draw):
    """ACLs named by text, and principals that each ACL's text could be taken for: the one
    Kafka reads (split at the first ':') and one split at another ':' (a different principal)."""
    acls = draw(st.lists(colon_bindings, max_size=12))
    askers = draw(st.lists(colon_principals, min_size=1, max_size=4))
    for binding in acls:
        text = binding.entry.principal
        askers.append(KafkaPrincipal.parse(text))
        at = [i for i, char in enumerate(text) if char == ":"]
        split = at[draw(st.integers(0, len(at) - 1))]
        askers.append(KafkaPrincipal(text[:split], text[split + 1:]))
    super_users = draw(st.sampled_from([(), ("Us:er:a",), ("Us:er:",)]))
    return acls, askers, super_users


@reference_settings
@given(colon_acls_and_askers(), st.booleans())
def test_principals_with_colons_are_compared_by_type_and_name(acls_askers, allow_everyone):
    acls, askers, super_users = acls_askers
    authorizer = build(acls, super_users, allow_everyone)
    reference = ReferenceAuthorizer(acls, super_users, allow_everyone)
    for principal in askers:
        context = RequestContext(principal, "10.0.0.1")
        for resource_type in (ResourceType.TOPIC, ResourceType.GROUP):
            for op in (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE):
                assert authorizer.authorize_by_resource_type(context, op, resource_type) is \
                    reference.authorize_by_resource_type(context, op, resource_type)
            for name in ("a", "ab", "b", "*", "c"):
                pattern = ResourcePattern(resource_type, name)
                assert authorizer.authorized_operations(context, pattern) == reference.authorized_operations(context, pattern)
                for op in (AclOperation.READ, AclOperation.WRITE):
                    action = Action(op, pattern)
                    decision = authorizer.explain(context, action)
                    assert [decision.result] == reference.authorize(context, [action])
                    if decision.rule.acl is not None:
                        # The ACL that decided names the asker by (type, name), read Kafka's way.
                        named = KafkaPrincipal.parse(decision.rule.acl.binding.entry.principal)
                        assert named in (principal, WILDCARD)


@pytest.mark.parametrize(
    "resource_type, operation",
    [("TOPIC", "READ"), ("GROUP", "READ"), ("TRANSACTIONAL_ID", "WRITE"), ("DELEGATION_TOKEN", "DESCRIBE"), ("USER", "CREATE_TOKENS")],
)
@pytest.mark.parametrize("name", ["!a", "!ab", " b", "(x", "#"])
def test_names_below_wildcard_are_answered(resource_type, operation, name):
    """Kafka's StandardAuthorizer hangs or throws here (ACL '!b' asked for '!a'), whatever the
    resource type, TOPIC included; we answer."""
    authorizer = StandardAuthorizer()
    authorizer.create_acls(
        [
            AclBinding.of(resource_type, "!b", "LITERAL", "User:alice", "*", operation, "ALLOW"),
            AclBinding.of(resource_type, "!ac", "PREFIXED", "User:alice", "*", operation, "ALLOW"),
            AclBinding.of(resource_type, "*", "LITERAL", "User:bob", "*", operation, "ALLOW"),
        ]
    )
    context = RequestContext.for_principal("User:bob")
    [result] = authorizer.authorize(context, [Action(operation, ResourcePattern(resource_type, name))])
    assert result is AuthorizationResult.ALLOWED
    [result] = authorizer.authorize(RequestContext.for_principal("User:alice"), [Action(operation, ResourcePattern(resource_type, name))])
    assert (result is AuthorizationResult.ALLOWED) == name.startswith("!ac")
