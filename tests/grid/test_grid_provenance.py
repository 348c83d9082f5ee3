"""A grid's provenance: what was audited and how, read from what the grid evaluates; a digest of
the ACL set that two reports of the same state share and any change alters."""

import argparse
import random

import pytest

from kafkasec import AclBinding, StandardAuthorizer
from spark_udfs.compact import CompactGrid
from spark_udfs.provenance import Provenance, acl_digest
from spark_udfs.rules import compile_acls

BINDINGS = [AclBinding.of("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
            AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:*", "*", "ALL", "DENY"),
            AclBinding.of("GROUP", "bill\"ing\n", "LITERAL", "Group:eng", "10.0.0.1", "READ", "ALLOW")]


def test_the_digest_is_of_the_acl_set_whatever_its_order_and_ids():
    stored = []
    for order in (BINDINGS, list(reversed(BINDINGS)), random.Random(3).sample(BINDINGS, 3)):
        authorizer = StandardAuthorizer()
        authorizer.create_acls(order)  # new ids each time
        stored.append(acl_digest(item.binding for item in authorizer.stored_acls()))
    assert stored[0] == stored[1] == stored[2] == acl_digest(BINDINGS)
    assert stored[0].startswith("sha256:") and len(stored[0]) == len("sha256:") + 64
    changed = [BINDINGS[0], BINDINGS[1], AclBinding.of("GROUP", "bill\"ing\n", "LITERAL", "Group:eng", "10.0.0.1", "READ", "DENY")]
    assert acl_digest(changed) != stored[0] and acl_digest(BINDINGS[:2]) != stored[0]
    assert acl_digest([]) == "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"  # sha256 of "[]"


def test_a_state_file_its_log_position_and_its_settings(tmp_path):
    import kafkasec_groupfile

    from security_support import open_security

    (tmp_path / "groups.txt").write_text("eng: alice\n", encoding="utf-8")
    with open_security(tmp_path / "state.db", plugins=[kafkasec_groupfile], acls=BINDINGS,
                       **{kafkasec_groupfile.PATH_SETTING: str(tmp_path / "groups.txt"), "super.users": "User:zed;User:admin",
                          "allow.everyone.if.no.acl.found": "true"}) as security:
        provenance = Provenance.of(security, principals=4, resources=5)
        offset = security.applied_offset
    assert provenance.source == f"state file {tmp_path / 'state.db'}" and provenance.log_position == offset > 0
    assert provenance.super_users == ("User:admin", "User:zed") and provenance.allow_everyone_if_no_acl_found
    assert provenance.principal_expansion == ("kafkasec_groupfile",)
    assert (provenance.acl_count, provenance.acl_digest) == (3, acl_digest(BINDINGS))
    assert (provenance.principals, provenance.resources) == (4, 5)
    authorizer = StandardAuthorizer("User:admin")
    bare = Provenance.of(authorizer, principals=0, resources=0)
    assert (bare.source, bare.log_position, bare.principal_expansion, bare.acl_count) == ("memory", None, (), 0)


def test_a_postgresql_source_is_named_without_its_password(postgres_url):
    from security_support import open_security

    with_password = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:hunter2@")
    with open_security(**{"kafkasec.state.url": with_password}) as security:
        provenance = Provenance.of(security, principals=0, resources=0)
    assert provenance.source == "PostgreSQL " + postgres_url.replace("postgres@", "postgres:***@")
    assert "hunter2" not in repr(provenance)


def test_a_grid_read_from_a_cluster_names_the_cluster():
    """kafkasec grid --bootstrap-server: the ACLs came by DescribeAcls, outside any log of ours."""
    from kafkasec.cli.grid import _provenance

    authorizer = StandardAuthorizer()
    authorizer.create_acls(BINDINGS)
    compact = CompactGrid.build(compile_acls(authorizer), [("User:alice", "10.0.0.1")], [("TOPIC", "orders-eu")])
    provenance = _provenance(argparse.Namespace(bootstrap_server="broker:9092", state=None), authorizer, compact)
    assert (provenance.source, provenance.log_position, provenance.principals) == ("cluster broker:9092", None, 1)


@pytest.mark.parametrize("location, source", [
    (":memory:", "memory"), ("/var/lib/kafkasec/state.db", "state file /var/lib/kafkasec/state.db"),
    ("postgresql://kafkasec:***@db:5432/acls", "PostgreSQL postgresql://kafkasec:***@db:5432/acls"),
])
def test_a_store_location_as_a_source(location, source):
    from spark_udfs.provenance import describe_location

    assert describe_location(location) == source
