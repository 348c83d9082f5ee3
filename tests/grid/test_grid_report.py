"""The audit report: its summaries come from the compact grid and agree with the authorizer."""

import numpy as np

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import operations_to_bitfield
from spark_udfs.report import audit_summaries, html_report

ACLS = [
    AclBinding.of("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:*", "*", "ALL", "DENY"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:bob", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "public", "LITERAL", "User:*", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "unused-", "PREFIXED", "User:carol", "*", "WRITE", "ALLOW"),
]
PRINCIPALS = [("User:alice", "10.0.0.1"), ("User:bob", "10.0.0.1"), ("User:admin", "10.0.0.1"), ("User:x", "10.0.0.2")]
RESOURCES = [("TOPIC", "orders-eu"), ("TOPIC", "orders-secret"), ("TOPIC", "public"), ("GROUP", "g")]


def authorizer():
    authorizer = StandardAuthorizer("User:admin")
    authorizer.create_acls(ACLS)
    return authorizer


def test_summaries_agree_with_the_authorizer():
    reference = authorizer()
    summaries = audit_summaries(reference, PRINCIPALS, RESOURCES)
    dense = np.array([
        [operations_to_bitfield(reference.authorized_operations(RequestContext(KafkaPrincipal.parse(p), h), ResourcePattern(t, n)))
         for t, n in RESOURCES]
        for p, h in PRINCIPALS
    ])
    grants = {(p, h): n for p, h, n in summaries["most_privileged"]}
    assert grants == {(p, h): int(np.bitwise_count(dense[i]).sum()) for i, (p, h) in enumerate(PRINCIPALS)}
    assert summaries["most_privileged"][0][0] == "User:admin"            # a super user tops the list
    assert summaries["readable_by_everyone"] == ["public"]
    # bob's READ on orders-secret is shadowed by the DENY ALL for User:*; carol's grant matches
    # no resource of the grid, so it is unused, not shadowed; alice's works.
    assert summaries["shadowed"] == ["User:bob READ on TOPIC LITERAL 'orders-secret' from *"]


def test_html_report_is_written_with_its_sections(tmp_path):
    path = tmp_path / "report.html"
    html_report(authorizer(), PRINCIPALS, RESOURCES, str(path))
    text = path.read_text(encoding="utf-8")
    for part in ("Most-privileged principals", "Topics every principal may read", "shadowed by DENY", "Heatmap",
                 "User:admin @ 10.0.0.1", "orders-secret", "DESCRIBE, READ"):
        assert part in text, part
    assert text.count("<tr>") == 1 + len(PRINCIPALS)
