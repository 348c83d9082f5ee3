"""The audit report: its summaries and cells agree with the authorizer, each grant names its ACL,
and the page works in a real headless browser (Debian's Chromium driven by Playwright)."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import operations_to_bitfield
from kafkasec.authorizer.decision import acl_text
from kafkasec.context import Action
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


def test_the_reports_data_agrees_with_the_authorizer_and_names_each_grants_acl():
    reference = authorizer()
    data = report_data(reference, PRINCIPALS, RESOURCES)
    cells = {(i, j): bits for i, j, bits in data["cells"]}
    for i, (p, h) in enumerate(PRINCIPALS):
        for j, (t, n) in enumerate(RESOURCES):
            expected = operations_to_bitfield(
                reference.authorized_operations(RequestContext(KafkaPrincipal.parse(p), h), ResourcePattern(t, n)))
            assert cells.get((i, j), 0) == expected
    stored = {acl.acl_id: acl for acl in reference.stored_acls()}
    for cell, operation, rule, acl in data["grants"]:
        i, j, _ = data["cells"][cell]
        decision = reference.explain(RequestContext(KafkaPrincipal.parse(PRINCIPALS[i][0]), PRINCIPALS[i][1]),
                                     Action(int(operation), ResourcePattern(*RESOURCES[j])))
        assert decision.allowed and rule == decision.rule.kind.value
        if acl >= 0:
            acl_id, source, text = data["acls"][acl]
            assert (acl_id, source, text) == (decision.rule.acl.acl_id, "store", acl_text(stored[acl_id].binding))
        else:
            assert rule == "super_user"
    assert not data["truncated"]
    capped = report_data(reference, PRINCIPALS, RESOURCES, max_cells=2)
    assert len(capped["cells"]) == 2 and capped["truncated"]
    # A cap exactly at the number of allowed pairs leaves nothing out, and says so.
    exact = report_data(reference, PRINCIPALS, RESOURCES, max_cells=len(data["cells"]))
    assert sorted(exact["cells"]) == sorted(data["cells"]) and not exact["truncated"]
    assert report_data(reference, PRINCIPALS, RESOURCES, max_cells=len(data["cells"]) - 1)["truncated"]


BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright (.ci/install-browser installs it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                              args=BROWSER_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def report(tmp_path):
    after = StandardAuthorizer("User:admin")
    after.create_acls(ACLS + [AclBinding.of("TOPIC", "public", "LITERAL", "User:x", "*", "WRITE", "ALLOW")])
    after.delete_acls([ACLS[0].to_filter()])
    path = tmp_path / "report.html"
    html_report(authorizer(), PRINCIPALS, RESOURCES, str(path), after=after)
    return path


def cells_shown(page):
    return [tuple(td.inner_text() for td in row.query_selector_all("td")[:4]) for row in page.query_selector_all("#cells tbody tr")]


def test_the_report_is_one_offline_page_with_its_sections(report):
    text = report.read_text(encoding="utf-8")
    for part in ("Most-privileged principals", "Topics every principal may read", "shadowed by DENY",
                 "User:admin @ 10.0.0.1", "Who can do what"):
        assert part in text, part
    assert "http://" not in text and "https://" not in text and "<script src" not in text  # nothing fetched


def test_search_filter_sort_and_pages_in_a_real_browser(browser, report):
    page = browser.new_page()
    page.goto(report.as_uri())
    page.wait_for_selector("body[data-ready=true]")
    everything = cells_shown(page)
    assert page.inner_text("#count").startswith(f"{len(everything)} of {len(everything)} allowed pairs")
    page.fill("#q", "alice")
    assert {row[0] for row in cells_shown(page)} == {"User:alice"}
    assert "q=alice" in page.url  # the view is in the address, to share
    page.fill("#q", "")
    page.select_option("#op", label="WRITE")
    assert {row[0] for row in cells_shown(page)} == {"User:admin"}  # only the super user writes
    page.select_option("#op", label="any operation")
    page.select_option("#type", "GROUP")
    assert {row[2] for row in cells_shown(page)} == {"GROUP"}
    page.select_option("#type", "")
    page.click("th[data-sort=resource]")
    page.click("th[data-sort=resource]")
    resources = [row[3] for row in cells_shown(page)]
    assert resources == sorted(resources, reverse=True) and "dir=desc" in page.url
    page.goto(report.as_uri() + "#q=User")
    assert len(cells_shown(page)) == len(everything)


def test_drill_down_names_the_acl_behind_each_grant(browser, report):
    page = browser.new_page()
    page.goto(report.as_uri())
    page.click("#cells tbody tr[data-cell] a >> text=User:alice")
    assert page.is_visible("#detail")
    grants = [[td.inner_text() for td in row.query_selector_all("td")] for row in page.query_selector_all("#grants tbody tr")]
    assert {(row[0], row[2]) for row in grants} == {("orders-eu", "READ"), ("orders-eu", "DESCRIBE"),
                                                    ("public", "READ"), ("public", "DESCRIBE")}
    # Each grant names its ACL: alice's own prefix ACL on orders-eu, User:*'s on public.
    by_resource = {row[0]: (row[3], row[5], row[6]) for row in grants}
    assert by_resource == {"orders-eu": ("allow_acl", "store", acl_text(ACLS[0])), "public": ("allow_acl", "store", acl_text(ACLS[3]))}
    assert len({row[4] for row in grants}) == 2 and all(row[4] for row in grants)  # two ACL ids, shown
    page.goto(report.as_uri() + "#resource=1")  # orders-secret: only the super user, by super.users
    rows = [[td.inner_text() for td in row.query_selector_all("td")] for row in page.query_selector_all("#grants tbody tr")]
    assert {row[0] for row in rows} == {"User:admin"} and {row[3] for row in rows} == {"super_user"}


def test_the_what_if_diff_and_the_export(browser, report, tmp_path):
    page = browser.new_page(accept_downloads=True)
    page.goto(report.as_uri() + "#q=alice")
    changes = [
        [" ".join(span.inner_text() for span in td.query_selector_all("span")) or td.inner_text() for td in row.query_selector_all("td")]
        for row in page.query_selector_all("#changes tbody tr")
    ]
    assert sorted(changes) == [
        ["User:alice", "10.0.0.1", "TOPIC orders-eu", "READ DESCRIBE", "", "", "READ DESCRIBE"],  # the prefix ACL removed
        ["User:x", "10.0.0.2", "TOPIC public", "READ DESCRIBE", "READ WRITE DESCRIBE", "WRITE", ""],
    ]
    with page.expect_download() as download:
        page.click("#export")
    exported = Path(download.value.path()).read_text().splitlines()
    assert exported[0] == "principal,host,resource_type,resource_name,operations,bitfield"
    assert {line.split(",")[0] for line in exported[1:]} == {"User:alice"}  # what the page shows
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_the_example_writes_a_report(tmp_path):
    import subprocess
    import sys

    example = Path(__file__).parents[2] / "examples" / "audit_report.py"
    finished = subprocess.run([sys.executable, str(example), str(tmp_path / "estate.html")],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    page = (tmp_path / "estate.html").read_text(encoding="utf-8")
    assert "User:fraud-consumer" in page and '"diff":[[' in page
