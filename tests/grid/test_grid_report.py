"""The audit report: its summaries agree with the authorizer, and the page, driven in a real
headless browser (Debian's Chromium through Playwright), answers every question exactly from the
compact grid it carries: counts, rows page by page, who may do what on a resource, what a
principal may do and which ACL grants it, the what-if; on a grid whose allowed pairs outnumber
the 50,000 the page once carried as a sample."""

import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import AclOperation, operations_to_bitfield
from kafkasec.authorizer.decision import acl_text
from kafkasec.context import Action
from kafkasec.testing import strategies
from spark_udfs import report as report_module
from spark_udfs.provenance import acl_digest
from spark_udfs.report import audit_summaries, html_report, report_data

ACLS = [
    AclBinding.of("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:*", "*", "ALL", "DENY"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:bob", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "public", "LITERAL", "User:*", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "unused-", "PREFIXED", "User:carol", "*", "WRITE", "ALLOW"),
]
PRINCIPALS = [("User:alice", "10.0.0.1"), ("User:bob", "10.0.0.1"), ("User:admin", "10.0.0.1"), ("User:x", "10.0.0.2")]
RESOURCES = [("TOPIC", "orders-eu"), ("TOPIC", "orders-secret"), ("TOPIC", "public"), ("GROUP", "g")]
READ = int(AclOperation.READ)


def authorizer(acls=ACLS, **settings):
    authorizer = StandardAuthorizer(settings.get("super_users", "User:admin"), settings.get("allow_everyone", False))
    authorizer.create_acls(list(acls))
    return authorizer


def dense(reference, principals, resources) -> np.ndarray:
    """Every cell by the authorizer itself: the reference the report is held to."""
    patterns = [ResourcePattern(t, n) for t, n in resources]
    return np.array([
        [operations_to_bitfield(ops) for ops in reference.authorized_operations_many(RequestContext(KafkaPrincipal.parse(p), h), patterns)]
        for p, h in principals
    ], dtype=np.int64).reshape(len(principals), len(resources))


def test_summaries_agree_with_the_authorizer():
    reference = authorizer()
    summaries = audit_summaries(reference, PRINCIPALS, RESOURCES)
    cells = dense(reference, PRINCIPALS, RESOURCES)
    assert summaries["grant_counts"].tolist() == np.bitwise_count(cells).sum(axis=1).tolist()
    # The super user is listed apart, not at the head of the most privileged.
    assert summaries["super_users"] == [("User:admin", "10.0.0.1")]
    assert [p for p, _, _ in summaries["most_privileged"]] == ["User:alice", "User:bob", "User:x"]
    # Anyone from 10.0.0.x may READ (and so DESCRIBE) public: two grants everyone has.
    assert summaries["everyone_counts"].tolist() == [2, 2, 2, 2]
    assert summaries["beyond_everyone_counts"].tolist() == [2, 0, 27, 0]
    assert [names(bits) for bits in summaries["everyone_may"]] == [set(), set(), {"READ", "DESCRIBE"}, set()]  # public
    # bob's READ on orders-secret is shadowed by the DENY ALL for User:*, which is named; carol's
    # grant matches no resource of the grid, so it is unused, not shadowed; alice's works.
    [shadowed] = summaries["shadowed"]
    assert shadowed.allow == "ALLOW User:bob from host * READ on TOPIC LITERAL 'orders-secret'"
    assert shadowed.denies == ("DENY User:* from host * ALL on TOPIC LITERAL 'orders-secret'",)


def test_the_shadowed_list_is_the_same_whatever_the_order_acls_came_in_and_is_bounded(monkeypatch):
    acls = [AclBinding.of("TOPIC", f"t{n}", "LITERAL", f"User:u{n % 7}", "*", op, "ALLOW")
            for n in range(40) for op in ("READ", "WRITE")]
    acls += [AclBinding.of("TOPIC", f"t{n}", "LITERAL", "User:*", "*", "ALL", "DENY") for n in range(40)]
    acls += [AclBinding.of("TOPIC", "t", "PREFIXED", "User:u3", "*", "WRITE", "DENY")]
    resources = [("TOPIC", f"t{n}") for n in range(40)]
    principals = [(f"User:u{n}", "10.0.0.1") for n in range(7)]
    orders = [acls, list(reversed(acls)), random.Random(5).sample(acls, len(acls))]
    # Each authorizer gives its ACLs new ids: compare what the page shows besides.
    lists = [[(grant.allow, grant.denies, grant.more_denies) for grant in audit_summaries(authorizer(order), principals, resources)["shadowed"]]
             for order in orders]
    assert lists[0] == lists[1] == lists[2] and len(lists[0]) == 80
    assert lists[0][0][0].startswith("ALLOW User:u0 from host * READ on TOPIC LITERAL 't0'")
    u3 = next(denies for allow, denies, _ in lists[0] if "User:u3" in allow and "WRITE" in allow)
    assert set(u3) == {"DENY User:* from host * ALL on TOPIC LITERAL 't10'",
                              "DENY User:u3 from host * WRITE on TOPIC PREFIXED 't'"}
    monkeypatch.setattr(report_module, "MAX_SHADOWED", 5)
    data = report_data(authorizer(acls), principals, resources)
    assert data["summary"]["shadowed_count"] == 80 and len(data["summary"]["shadowed"]) == 5


# ---------------------------------------------------------------- a grid larger than any cap


def estate(seed=31):
    """Teams with prefixes, literal topics and groups, DENYs, a host-specific grant, User:*
    grants on a prefix and from one host, a LITERAL '*'; principals named and not, a super user,
    three hosts; resources some of which no ACL matches (allow.everyone decides them)."""
    rng = random.Random(seed)
    acls = [AclBinding.of("TOPIC", "shared-", "PREFIXED", "User:*", "*", "READ", "ALLOW"),
            AclBinding.of("TOPIC", "shared-secret", "LITERAL", "User:*", "*", "READ", "DENY"),
            AclBinding.of("GROUP", "*", "LITERAL", "User:auditor", "*", "DESCRIBE", "ALLOW"),
            AclBinding.of("GROUP", "ops-", "PREFIXED", "User:*", "10.0.0.3", "READ", "ALLOW")]
    for team in range(10):
        for member in range(8):
            principal = f"User:t{team}-m{member}"
            acls.append(AclBinding.of("TOPIC", f"t{team}-", "PREFIXED", principal, "*", rng.choice(["READ", "WRITE", "ALL"]), "ALLOW"))
            if member % 3 == 0:
                acls.append(AclBinding.of("TOPIC", f"t{team}-x{rng.randrange(40)}", "LITERAL", principal, "*", "ALTER", "ALLOW"))
            if member % 4 == 1:
                acls.append(AclBinding.of("GROUP", f"t{team}-g{rng.randrange(5)}", "LITERAL", principal, "10.0.0.2", "READ", "ALLOW"))
        acls.append(AclBinding.of("TOPIC", f"t{team}-x7", "LITERAL", f"User:t{team}-m1", "*", "ALL", "DENY"))
    principals = [(f"User:t{team}-m{member}", f"10.0.0.{1 + (team + member) % 3}") for team in range(10) for member in range(8)]
    principals += [(f"User:guest{n}", f"10.0.0.{1 + n % 3}") for n in range(217)]
    principals += [("User:admin", "10.0.0.1"), ("User:auditor", "10.0.0.1"), ("Group:ops", "10.0.0.3")]
    resources = [("TOPIC", f"t{team}-x{n}") for team in range(10) for n in range(40)]
    resources += [("TOPIC", f"shared-{n}") for n in range(200)] + [("TOPIC", "shared-secret")]
    resources += [("GROUP", f"t{team}-g{n}") for team in range(10) for n in range(5)]
    resources += [("GROUP", f"ops-{n}") for n in range(9)] + [("TOPIC", f"free-{n}") for n in range(30)]
    resources += [("CLUSTER", "kafka-cluster")]
    return acls, principals, resources


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    acls, principals, resources = estate()
    reference = authorizer(acls, allow_everyone=True)
    change = [AclBinding.of("TOPIC", "t3-", "PREFIXED", "User:guest5", "*", "WRITE", "ALLOW")]
    after = [stored.binding for stored in reference.stored_acls() if stored.binding != acls[0]] + change
    path = tmp_path_factory.mktemp("report") / "large.html"
    html_report(reference, principals, resources, str(path), after=after)
    after_reference = authorizer(after, allow_everyone=True)
    return {"path": path, "reference": reference, "principals": principals, "resources": resources,
            "cells": dense(reference, principals, resources), "after": dense(after_reference, principals, resources),
            "added": change, "removed": [acls[0]]}


BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright (.ci/install-debian-packages installs it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                              args=BROWSER_ARGS)
        yield launched
        launched.close()


class Page:
    """The report open in the browser, read as a person reads it: the title, the count line and
    the table's rows, for a view given by its address."""

    def __init__(self, browser, path):
        self.page = browser.new_page()
        self.errors = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.uri = path.as_uri()
        self.open("")
        self.data = self.page.evaluate("JSON.parse(document.getElementById('data').textContent)")

    def open(self, view: str):
        self.page.goto(f"{self.uri}#{view}")
        self.page.wait_for_selector("body[data-ready=true]")
        self.page.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")
        assert not self.errors, self.errors

    def count(self) -> int:
        return int(self.page.inner_text("#count").split(" ")[0].replace(",", ""))

    def rows(self) -> list[list[str]]:
        return self.page.eval_on_selector_all(
            "#rows tbody tr", "rows => rows.map(row => Array.from(row.cells, cell => cell.innerText))")

    def principal_index(self, principal, host) -> int:
        return next(i for i, (p, h) in enumerate(zip(self.data["principals"], self.data["hosts"])) if (p, h) == (principal, host))

    def resource_index(self, resource_type, name) -> int:
        return next(j for j, n in enumerate(self.data["resources"]) if n == name and self.type_of(j) == resource_type)

    def type_of(self, j) -> str:
        if not hasattr(self, "_types"):
            self._types = self.page.evaluate(
                "(() => { const d = JSON.parse(document.getElementById('data').textContent);"
                " return Array.from(atob(d.grid.resource_type), c => d.types[c.charCodeAt(0)]); })()")
        return self._types[j]


@pytest.fixture(scope="module")
def page(browser, large):
    return Page(browser, large["path"])


def plain(principal_cell: str) -> str:
    """A principal as the table shows it, without its "super user" label."""
    return principal_cell.removesuffix(" super user")


def names(bits):
    return {op.name for op in AclOperation if op.value > 1 and bits & (1 << op)}


def test_the_grid_is_larger_than_the_sample_the_page_once_carried(large):
    assert int((large["cells"] != 0).sum()) > 50_000


def test_every_count_is_exact(page, large):
    cells, principals, resources = large["cells"], large["principals"], large["resources"]
    page.open("view=grid")
    assert page.count() == int((cells != 0).sum())
    # A principal's search: every one of their allowed pairs, not a sample's.
    for needle in ("User:t3-m1", "guest1", "10.0.0.3", "User:admin"):
        page.open(f"p={needle}")
        chosen = [i for i, (p, h) in enumerate(principals) if needle.lower() in f"{p} {h}".lower()]
        assert page.count() == int((cells[chosen] != 0).sum()), needle
    # A resource's search with an operation: who may READ it, exactly.
    for needle in ("t4-x1", "shared-", "free-2"):
        page.open(f"r={needle}&op={READ}")
        chosen = [j for j, (_, n) in enumerate(resources) if needle in n]
        assert page.count() == int((cells[:, chosen] & (1 << READ) != 0).sum()), needle
    # Only grants beyond what anyone from the host may: against a principal no ACL names.
    anyone = {h: dense(large["reference"], [("User:nobody-named", h)], resources)[0] for h in {h for _, h in principals}}
    beyond = np.array([cells[i] & ~anyone[h] for i, (_, h) in enumerate(principals)])
    page.open("own=1")
    assert page.count() == int((beyond != 0).sum())
    supers = [i for i, (p, _) in enumerate(principals) if p == "User:admin"]
    page.open("kind=super")
    assert page.count() == int((cells[supers] != 0).sum())
    page.open("kind=ordinary&type=GROUP")
    groups = [j for j, (t, _) in enumerate(resources) if t == "GROUP"]
    others = [i for i in range(len(principals)) if i not in supers]
    assert page.count() == int((cells[np.ix_(others, groups)] != 0).sum())


def test_rows_page_by_page_in_either_order(page, large):
    cells, principals, resources = large["cells"], large["principals"], large["resources"]
    by_principal = sorted(range(len(principals)), key=principals.__getitem__)
    by_resource = sorted(range(len(resources)), key=lambda j: resources[j])
    expected = [(principals[i][0], resources[j][1]) for i in by_principal for j in by_resource if cells[i, j]]
    page.open("size=37&page=5")
    assert [(plain(row[0]), row[3]) for row in page.rows()] == expected[185:222]
    expected = [(principals[i][0], resources[j][1]) for j in by_resource for i in by_principal if cells[i, j]]
    page.open("by=resource&size=50&page=41")
    assert [(plain(row[0]), row[3]) for row in page.rows()] == expected[2050:2100]


def test_who_may_read_a_resource_and_what_a_principal_may_do_with_the_acl_behind_each(page, large):
    reference, cells = large["reference"], large["cells"]
    principals, resources = large["principals"], large["resources"]
    stored = {acl.acl_id for acl in reference.stored_acls()}
    texts = {acl.acl_id: acl_text(acl.binding) for acl in reference.stored_acls()}  # the page writes them itself
    rng = random.Random(3)
    for j in rng.sample(range(len(resources)), 12):
        index = page.resource_index(*resources[j])
        page.open(f"view=resource&resource={index}&op={READ}&size=5000")
        readers = {(plain(row[0]), row[1]) for row in page.rows()}
        assert readers == {principals[i] for i in range(len(principals)) if cells[i, j] & (1 << READ)}, resources[j]
    for i in rng.sample(range(len(principals)), 10) + [principals.index(("User:admin", "10.0.0.1"))]:
        principal, host = principals[i]
        page.open(f"view=principal&principal={page.principal_index(principal, host)}&size=5000")
        shown: dict[str, set] = {}
        for row in page.rows():
            resource, resource_type, operation, rule, ids = row[0], row[1], row[2].split(" ")[0], row[3], row[4]
            shown.setdefault((resource_type, resource), set()).add(operation)
            decision = reference.explain(RequestContext(KafkaPrincipal.parse(principal), host),
                                         Action(AclOperation[operation], ResourcePattern(resource_type, resource)))
            assert decision.allowed and rule == decision.rule.kind.value, (principal, resource, operation)
            if decision.rule.acl is not None:
                assert decision.rule.acl.acl_id in ids.split("\n") and set(ids.split("\n")) <= stored
                assert row[6].split("\n") == [texts[acl_id] for acl_id in ids.split("\n")]
        expected = {resources[j]: names(cells[i, j]) for j in range(len(resources)) if cells[i, j]}
        assert shown == expected, principal


def test_the_what_if_is_found_from_the_top_counted_listed_and_filtered(page, large):
    before, after, principals, resources = large["cells"], large["after"], large["principals"], large["resources"]
    page.open("")
    banner = page.page.inner_text("#whatif-banner")
    changed = before != after
    assert banner == f"What-if: 1 ACL added, 1 removed: {int(changed.sum()):,} pairs change"
    page.page.click("#whatif-banner a")
    page.page.wait_for_selector("#rows tbody tr")
    assert "view=whatif" in page.page.url and page.count() == int(changed.sum())
    notes = page.page.inner_text("#notes")
    assert "ALLOW User:guest5 from host * WRITE on TOPIC PREFIXED 't3-'" in notes
    assert "ALLOW User:* from host * READ on TOPIC PREFIXED 'shared-'" in notes
    page.open("view=whatif&change=gained")
    assert page.count() == int((after & ~before != 0).sum())
    page.open("view=whatif&change=lost&p=guest1&r=shared-19&size=5000")
    chosen = [i for i, (p, h) in enumerate(principals) if "guest1" in f"{p} {h}"]
    topics = [j for j, (_, n) in enumerate(resources) if "shared-19" in n]
    lost = before & ~after
    assert page.count() == int((lost[np.ix_(chosen, topics)] != 0).sum()) < 5000
    rows = {(row[0], row[2]) for row in page.rows()}
    assert rows == {(principals[i][0], f"{resources[j][0]} {resources[j][1]}") for i in chosen for j in topics if lost[i, j]}


def test_the_other_views_page_and_filter(page, large):
    principals = large["principals"]
    page.open("view=privilege&kind=ordinary&size=10")
    rows = page.rows()
    assert len(rows) == 10 and all("super user" not in row[0] for row in rows)
    beyond = [int(row[4].replace(",", "")) for row in rows]
    assert beyond == sorted(beyond, reverse=True)
    page.open("view=privilege&kind=super")
    assert [row[0] for row in page.rows()] == ["User:admin super user"]
    assert page.count() == 1
    page.open(f"view=everyone&type=TOPIC&op={READ}&size=5000")
    readable = {row[1]: row[3] for row in page.rows()}
    cells, resources = large["cells"], large["resources"]
    assert set(readable) == {name for j, (t, name) in enumerate(resources) if t == "TOPIC" and (cells[:, j] & (1 << READ)).all()}
    assert readable["free-0"].startswith("no ACL matches it") and readable["shared-0"].startswith("ACLs for User:*")
    # Every operation, not only READ on topics: what every principal may do is the AND of their cells.
    page.open("view=everyone&size=5000")
    everyone = np.bitwise_and.reduce(cells, axis=0)
    assert page.count() == int(np.count_nonzero(everyone))
    badges = page.page.eval_on_selector_all(
        "#rows tbody tr", "rows => rows.map(row => Array.from(row.cells[2].querySelectorAll('span'), span => span.textContent))")
    shown = {(row[0], row[1]): set(ops) for row, ops in zip(page.rows(), badges)}
    assert shown == {(t, name): names(everyone[j]) for j, (t, name) in enumerate(resources) if everyone[j]}
    page.open("view=shadowed&q=t1-m1")
    assert all("t1-m1" in " ".join(row) for row in page.rows())
    assert len(principals) == len(page.data["principals"])


def test_the_export_writes_what_the_view_shows(browser, large, tmp_path):
    page = Page(browser, large["path"])
    page.open("p=User:t2-m3")  # filters without a view: the grid's rows
    with page.page.expect_download() as download:
        page.page.click("#export")
    lines = Path(download.value.path()).read_text().splitlines()
    assert lines[0] == "principal,host,resource_type,resource_name,operations,bitfield"
    i = large["principals"].index(next(p for p in large["principals"] if p[0] == "User:t2-m3"))
    assert len(lines) - 1 == int((large["cells"][i] != 0).sum())
    assert {line.split(",")[0] for line in lines[1:]} == {"User:t2-m3"}


# ---------------------------------------------------------------- what an auditor files: provenance, findings, marks


AUDITED_PRINCIPALS = [("User:alice", "10.0.0.1"), ("User:bob", "10.0.0.1"), ("User:carol", "10.0.0.1"), ("User:dave", "10.0.0.1"),
                      ("User:admin", "10.0.0.1"), ("User:admin", "10.0.0.2"), ("User:root", "10.0.0.1")]
AUDITED_RESOURCES = [("TOPIC", "orders-eu"), ("TOPIC", "orders-secret"), ("TOPIC", "payments"), ("TOPIC", "ops-log"),
                     ("TOPIC", "free-1"), ("TOPIC", "free-2"), ("GROUP", "billing"), ("CLUSTER", "kafka-cluster")]
AUDITED_ACLS = [
    AclBinding.of("TOPIC", "orders-", "PREFIXED", "Group:eng", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:*", "*", "ALL", "DENY"),
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:bob", "*", "READ", "ALLOW"),  # shadowed
    AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:*", "*", "CREATE", "ALLOW"),
    AclBinding.of("CLUSTER", "kafka-cluster", "LITERAL", "User:*", "*", "ALTER_CONFIGS", "ALLOW"),
    AclBinding.of("TOPIC", "payments", "LITERAL", "User:svc-*", "*", "WRITE", "ALLOW"),  # no pattern: a principal's name
    AclBinding.of("TOPIC", "o", "PREFIXED", "User:carol", "*", "ALL", "ALLOW"),
    AclBinding.of("GROUP", "billing", "LITERAL", "User:*", "*", "READ", "ALLOW"),
    AclBinding.of("TOPIC", "payments", "LITERAL", "User:dave", "*", "WRITE", "ALLOW"),
]
AUDITED_CHANGE = [
    AclBinding.of("TOPIC", "payments", "LITERAL", "Group:eng", "*", "WRITE", "ALLOW"),  # alice and bob: 2 pairs
    AclBinding.of("TOPIC", "payments", "LITERAL", "User:dave", "*", "READ", "ALLOW"),  # 1 pair
    AclBinding.of("TOPIC", "orders-secret", "LITERAL", "User:alice", "*", "READ", "ALLOW"),  # shadowed by the DENY
    AclBinding.of("TOPIC", "orders-eu", "LITERAL", "User:alice", "*", "READ", "ALLOW"),  # allowed already, by her group
]


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """An estate with something for every finding, read from a state file by a KafkaSecurity
    whose groupfile plugin puts alice and bob in Group:eng; its report, with a what-if."""
    import kafkasec_groupfile

    from security_support import open_security

    directory = tmp_path_factory.mktemp("audited")
    (directory / "groups.txt").write_text("eng: alice, bob\n", encoding="utf-8")
    settings = {kafkasec_groupfile.PATH_SETTING: str(directory / "groups.txt"), "super.users": "User:admin;User:root;User:kafka",
                "allow.everyone.if.no.acl.found": "true"}
    with open_security(directory / "state.db", plugins=[kafkasec_groupfile], acls=AUDITED_ACLS, **settings) as security:
        today = [stored.binding for stored in security.authorizer.stored_acls()]
        after = [binding for binding in today if binding != AUDITED_ACLS[2]] + AUDITED_CHANGE
        summaries = html_report(security, AUDITED_PRINCIPALS, AUDITED_RESOURCES, str(directory / "audit.html"), after=after)
        yield {"path": directory / "audit.html", "state": directory / "state.db", "offset": security.applied_offset,
               "digest": acl_digest(today), "summaries": summaries}


def test_the_report_opens_on_its_provenance_and_findings(browser, audited):
    page = Page(browser, audited["path"])
    page.open("")
    header = dict(page.page.eval_on_selector_all("#audited dd", "items => items.map(dd => [dd.dataset.field, dd.innerText])"))
    assert header["Source"] == f"state file {audited['state']}"
    assert header["Security log"] == f"offset {audited['offset']:,}"
    assert header["super.users"] == "3 super users: User:admin, User:kafka, User:root"
    assert header["allow.everyone.if.no.acl.found"] == "true"
    assert header["Principal expansion"] == "kafkasec_groupfile"
    assert header["ACLs"] == f"9 ACLs, {audited['digest']}"
    assert header["Grid"].startswith("7 principals x 8 resources = 56 pairs")
    assert re.fullmatch(r"\S+ by kafkasec \S+", header["Written"])
    # The same, machine-readable, for comparing two reports or tracing one to its state.
    block = page.page.evaluate("JSON.parse(document.getElementById('provenance').textContent)")
    assert block == {**block, "source": f"state file {audited['state']}", "log_position": audited["offset"],
                     "super_users": ["User:admin", "User:kafka", "User:root"], "allow_everyone_if_no_acl_found": True,
                     "principal_expansion": ["kafkasec_groupfile"], "acl_count": 9, "acl_digest": audited["digest"],
                     "principals": 7, "resources": 8}
    # The first screen: the findings, each with its count.
    assert page.page.inner_text("#title") == "Findings: what an auditor checks first"
    counts = {row[0]: row[1] for row in page.rows()}
    assert counts == {
        "Wildcard principals allowed more than DESCRIBE and READ": "3 ACLs",
        "Cluster powers, by principal": "4 principals",
        "ALLOW ACLs of the operation ALL": "1 ACL",
        "PREFIXED patterns of at most one character": "1 ACL",
        "allow.everyone.if.no.acl.found is on": "2 open resources",
        "Resources with no ACL at all": "2 resources",
        "Super users": "3 super users",
        "ALLOW grants shadowed by a DENY": "1 ACL",
        "What every principal of the grid may do": "4 resources",
    }
    # A finding's link shows its items, each item's link its rows.
    page.page.click("text=Cluster powers, by principal")
    page.page.wait_for_selector("#rows tbody tr")
    powers = page.rows()
    assert [(row[0], row[2], row[3]) for row in powers] == [
        (name, "CREATE ALTER_CONFIGS", "anyone from its host may (User:* ACLs or allow.everyone.if.no.acl.found)")
        for name in ("User:alice", "User:bob", "User:carol", "User:dave")]
    page.page.click("#rows tbody tr:first-child a")
    assert page.page.evaluate("window.auditReport.state()")["view"] == "principal"
    assert [(row[0], row[2]) for row in page.rows()] == [("kafka-cluster", op) for op in
                                                          ("CREATE (anyone's)", "DESCRIBE_CONFIGS (anyone's)", "ALTER_CONFIGS (anyone's)")]
    page.open("view=privilege")
    assert page.page.inner_text("#count") == "7 principals; 3 super users in super.users, 2 of them among these principals"
    page.open("view=finding&finding=wildcard-principals")
    assert [row[0] for row in page.rows()] == ["ALLOW User:* from host * ALTER_CONFIGS on CLUSTER LITERAL 'kafka-cluster'",
                                               "ALLOW User:* from host * CREATE on CLUSTER LITERAL 'kafka-cluster'",
                                               "ALLOW User:svc-* from host * WRITE on TOPIC LITERAL 'payments'"]
    # An ACL's rows: the pairs it bears on (every principal, on the cluster).
    page.page.click("#rows tbody tr:nth-child(2) a")
    assert page.page.inner_text("#title").endswith("where ALLOW User:* from host * CREATE on CLUSTER LITERAL 'kafka-cluster' applies")
    assert {(plain(row[0]), row[3]) for row in page.rows()} == {(p, "kafka-cluster") for p, _ in AUDITED_PRINCIPALS}
    page.open("view=finding&finding=no-acls")
    assert [(row[0], row[1]) for row in page.rows()] == [("TOPIC", "free-1"), ("TOPIC", "free-2")]


def test_a_grant_through_a_group_says_so_in_the_drill_down(browser, audited):
    page = Page(browser, audited["path"])
    alice = page.principal_index("User:alice", "10.0.0.1")
    page.open(f"view=principal&principal={alice}&type=TOPIC&op={READ}")
    assert "User:alice is a member of Group:eng (principal expansion by kafkasec_groupfile)" in page.page.inner_text("#notes")
    rows = {row[0]: (row[3], row[6], row[7]) for row in page.rows()}
    assert rows["orders-eu"] == ("allow_acl", "ALLOW Group:eng from host * READ on TOPIC PREFIXED 'orders-'", "Group:eng")
    # carol's own ALL on the 'o' prefix: no group in between.
    carol = page.principal_index("User:carol", "10.0.0.1")
    page.open(f"view=principal&principal={carol}&op={READ}")
    assert {row[7] for row in page.rows()} == {""}


def test_the_what_if_marks_each_acl_with_what_it_changes_or_why_not(browser, audited):
    page = Page(browser, audited["path"])
    page.open("")
    assert page.page.inner_text("#whatif-banner") == "What-if: 4 ACLs added, 1 removed: 3 pairs change"
    page.open("view=whatif")
    marks = page.page.eval_on_selector_all("#notes .mark", "marks => marks.map(mark => mark.innerText)")
    assert marks == [
        "added ALLOW Group:eng from host * WRITE on TOPIC LITERAL 'payments': changes 2 pairs",
        "added ALLOW User:alice from host * READ on TOPIC LITERAL 'orders-eu': changes nothing: it is already allowed by "
        "ALLOW Group:eng from host * READ on TOPIC PREFIXED 'orders-'",
        "added ALLOW User:alice from host * READ on TOPIC LITERAL 'orders-secret': changes nothing: it is shadowed by "
        "DENY User:* from host * ALL on TOPIC LITERAL 'orders-secret'",
        "added ALLOW User:dave from host * READ on TOPIC LITERAL 'payments': changes 1 pair",
        "removed ALLOW User:bob from host * READ on TOPIC LITERAL 'orders-secret': changes nothing: it is shadowed by "
        "DENY User:* from host * ALL on TOPIC LITERAL 'orders-secret'",
    ]
    assert page.count() == 3 and page.page.inner_text("#count") == "3 of 3 changed pairs"


def test_the_report_is_one_offline_page(large):
    text = large["path"].read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "<script src" not in text  # nothing fetched
    assert re.search(r"Every answer on this page is exact", text)


def test_the_what_if_keeps_super_users_and_allow_everyone(tmp_path):
    """Bindings given as the "after" side are judged with the same super.users and
    allow.everyone.if.no.acl.found: only the added grant shows as a change."""
    reference = authorizer(ACLS, allow_everyone=True)
    after = [stored.binding for stored in reference.stored_acls()]
    after.append(AclBinding.of("TOPIC", "public", "LITERAL", "User:bob", "*", "WRITE", "ALLOW"))
    data = report_data(reference, PRINCIPALS, RESOURCES, after=after)
    assert data["whatif"]["pairs"] == 1
    assert data["whatif"]["added"] == ["ALLOW User:bob from host * WRITE on TOPIC LITERAL 'public'"]
    assert data["whatif"]["removed"] == []


def test_a_compact_grid_of_other_pairs_is_refused():
    from spark_udfs.compact import CompactGrid
    from spark_udfs.evaluator import CompiledAcls

    compact = CompactGrid.build(CompiledAcls.from_authorizer(authorizer()), PRINCIPALS, RESOURCES[:2])
    with pytest.raises(ValueError, match="other principals or resources"):
        report_data(authorizer(), PRINCIPALS, RESOURCES, compact=compact)


def test_the_example_writes_a_report(tmp_path):
    import subprocess
    import sys

    example = Path(__file__).parents[2] / "examples" / "audit_report.py"
    finished = subprocess.run([sys.executable, str(example), str(tmp_path / "estate.html")],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    page = (tmp_path / "estate.html").read_text(encoding="utf-8")
    assert "User:fraud-consumer" in page and "What-if: 1 ACL added" in page


# ---------------------------------------------------------------- the privilege numbers, as a property


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls=st.lists(strategies.bindings, max_size=20), allow_everyone=st.booleans(),
       resource_names=st.lists(st.tuples(strategies.resource_types, strategies.names), min_size=1, max_size=8, unique=True))
def test_each_principals_grants_and_what_anyone_from_its_host_has_equal_the_authorizers(acls, allow_everyone, resource_names):
    reference = StandardAuthorizer("User:admin", allow_everyone)
    reference.create_acls(acls)  # an ACL a type cannot hold is refused, as by Kafka
    principals = [(p, h) for p in ("User:alice", "User:bob", "User:carol", "Group:eng", "User:admin")
                  for h in ("10.0.0.1", "10.0.0.2", "10.0.0.3")]
    resources = [(t.name, n) for t, n in resource_names]
    summaries = audit_summaries(reference, principals, resources)
    cells = dense(reference, principals, resources)
    anyone = {h: dense(reference, [("User:nobody-named", h)], resources)[0] for _, h in principals}
    assert summaries["grant_counts"].tolist() == np.bitwise_count(cells).sum(axis=1).tolist()
    assert summaries["everyone_counts"].tolist() == [int(np.bitwise_count(anyone[h]).sum()) for _, h in principals]
    assert summaries["beyond_everyone_counts"].tolist() == [
        int(np.bitwise_count(cells[i] & ~anyone[h]).sum()) for i, (_, h) in enumerate(principals)]
