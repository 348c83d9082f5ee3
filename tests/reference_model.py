"""A deliberately simple model of Kafka's authorizer: scan every ACL, one rule at a time.

It is written straight from Kafka's StandardAuthorizerData.findResult and the default
Authorizer.authorizeByResourceType, with no index and no bitmasks, so that the compiled index
can be checked against it on random ACL sets.
"""

from kafkasec import AclOperation, AclPermissionType, PatternType, supported_operations

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
IMPLIES_DESCRIBE = {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
IMPLIES_DESCRIBE_CONFIGS = {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}


def pattern_applies(pattern, resource_type, name):
    if pattern.resource_type != resource_type:
        return False
    if pattern.pattern_type == PatternType.LITERAL:
        return pattern.name == name or pattern.name == "*"
    return name.startswith(pattern.name)


def acl_result(entry, principals, host, operation):
    """Kafka's findResult: ALLOW, DENY, or None when the ACL does not apply."""
    if entry.principal not in principals:
        return None
    if entry.host != "*" and entry.host != host:
        return None
    if entry.operation != AclOperation.ALL:
        if entry.permission_type == ALLOW:
            if operation == AclOperation.DESCRIBE:
                if entry.operation not in IMPLIES_DESCRIBE:
                    return None
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                if entry.operation not in IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != entry.operation:
                return None
        elif operation != entry.operation:
            return None
    return entry.permission_type


def authorize(bindings, super_users, allow_everyone, principal, host, operation, resource_type, name, groups=()):
    if principal in super_users:
        return True
    applicable = [b for b in bindings if pattern_applies(b.pattern, resource_type, name)]
    if not applicable:
        return allow_everyone
    principals = {principal, "User:*", *groups}
    results = [acl_result(b.entry, principals, host, operation) for b in applicable]
    return DENY not in results and ALLOW in results


def authorized_operations(bindings, super_users, allow_everyone, principal, host, resource_type, name):
    return frozenset(
        op
        for op in supported_operations(resource_type)
        if authorize(bindings, super_users, allow_everyone, principal, host, op, resource_type, name)
    )


def authorize_by_resource_type(bindings, super_users, allow_everyone, principal, host, operation, resource_type):
    if authorize(bindings, super_users, allow_everyone, principal, host, operation, resource_type, "hardcode"):
        return True
    deny_literal, deny_prefixed, allow_literal, allow_prefixed = set(), set(), set(), set()
    wildcard_allow = False
    for b in bindings:
        if b.pattern.resource_type != resource_type:
            continue
        if b.entry.host not in (host, "*"):
            continue
        if b.entry.principal not in (principal, "User:*"):
            continue
        if b.entry.operation not in (operation, AclOperation.ALL):
            continue
        literal = b.pattern.pattern_type == PatternType.LITERAL
        if b.entry.permission_type == DENY:
            if literal and b.pattern.name == "*":
                return False
            (deny_literal if literal else deny_prefixed).add(b.pattern.name)
        elif literal and b.pattern.name == "*":
            wildcard_allow = True
        else:
            (allow_literal if literal else allow_prefixed).add(b.pattern.name)
    if wildcard_allow:
        return True
    for literal, names in ((True, allow_literal), (False, allow_prefixed)):
        for name in names:
            if literal and name in deny_literal:
                continue
            if any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                continue
            return True
    return False
