"""spark_udfs.rules: bindings are judged with the settings of what they are compared with."""

import pytest

from kafkasec import AclBinding, KafkaSecurity, StandardAuthorizer
from spark_udfs.evaluator import CompiledAcls
from spark_udfs.rules import compile_acls, standard_authorizer

BINDINGS = [AclBinding.of("TOPIC", "orders", "LITERAL", "User:bob", "*", "WRITE", "ALLOW")]


def configured():
    return StandardAuthorizer("User:admin", allow_everyone_if_no_acl_found=True)


@pytest.mark.parametrize("like", [configured, lambda: CompiledAcls.from_authorizer(configured())], ids=["authorizer", "compiled"])
def test_bindings_take_the_super_users_and_allow_everyone_of_like(like):
    judged = standard_authorizer(BINDINGS, like=like())
    assert judged.super_users == {"User:admin"} and judged.allow_everyone_if_no_acl_found
    assert [stored.binding for stored in judged.stored_acls()] == BINDINGS
    compiled = compile_acls(BINDINGS, like=like())
    assert compiled.super_users == {"User:admin"} and compiled.allow_everyone_if_no_acl_found


def test_a_kafka_security_lends_its_settings(tmp_path):
    with KafkaSecurity(state_path=str(tmp_path / "state.db"), super_users="User:admin",
                       allow_everyone_if_no_acl_found=True) as security:
        judged = standard_authorizer(BINDINGS, like=security)
        assert judged.super_users == {"User:admin"} and judged.allow_everyone_if_no_acl_found
        assert standard_authorizer(security) is security.authorizer


def test_bindings_or_nothing_as_like_mean_kafkas_defaults():
    for like in (None, BINDINGS):
        judged = standard_authorizer(BINDINGS, like=like)
        assert judged.super_users == frozenset() and not judged.allow_everyone_if_no_acl_found


def test_what_cannot_be_judged_is_refused_in_one_line():
    with pytest.raises(TypeError, match="CompiledAcls hold no ACL bindings"):
        standard_authorizer(CompiledAcls.from_authorizer(configured()))
    with pytest.raises(TypeError, match="acls must be"):
        standard_authorizer(["not an ACL"])
    with pytest.raises(ValueError, match="cannot be stored"):
        standard_authorizer([AclBinding.of("CLUSTER", "not-the-cluster", "LITERAL", "User:x", "*", "ALTER", "ALLOW")])
