"""Write the audit report of a small estate, and (with --screenshot) take a picture of it.

    python examples/audit_report.py report.html
    python examples/audit_report.py report.html --screenshot docs/images/report.png

Twelve teams, each with its producers and consumers on its own topic prefix and group, a
platform team with a wildcard, a DENY on secrets, and a what-if that opens one team's topics
to another's consumer. The screenshot (Debian's Chromium through Playwright, as the report's
test drives it) shows a principal's grants, each with the ACL behind it.
"""

from __future__ import annotations

import argparse

from kafkasec import AclBinding, StandardAuthorizer
from spark_udfs.report import html_report

TEAMS = ["billing", "orders", "payments", "search", "fraud", "ads", "mobile", "web", "data", "ml", "ops", "crm"]


def estate() -> tuple[StandardAuthorizer, list, list, list[AclBinding]]:
    acls = [AclBinding.of("TOPIC", "*", "LITERAL", "User:platform", "*", "DESCRIBE", "ALLOW"),
            AclBinding.of("TOPIC", "secrets-", "PREFIXED", "User:*", "*", "ALL", "DENY")]
    principals, resources = [("User:admin", "10.0.0.1"), ("User:platform", "10.0.0.2")], []
    for team in TEAMS:
        for role, operations in (("producer", ("WRITE", "DESCRIBE")), ("consumer", ("READ", "DESCRIBE"))):
            principal = f"User:{team}-{role}"
            principals.append((principal, "10.1.0.1"))
            acls += [AclBinding.of("TOPIC", f"{team}-", "PREFIXED", principal, "*", op, "ALLOW") for op in operations]
        acls.append(AclBinding.of("GROUP", f"{team}-app", "LITERAL", f"User:{team}-consumer", "*", "READ", "ALLOW"))
        resources += [("TOPIC", f"{team}-events"), ("TOPIC", f"{team}-commands"), ("GROUP", f"{team}-app")]
    resources.append(("TOPIC", "secrets-keys"))
    authorizer = StandardAuthorizer("User:admin")
    authorizer.create_acls(acls)
    change = [AclBinding.of("TOPIC", "billing-", "PREFIXED", "User:fraud-consumer", "*", "READ", "ALLOW")]
    return authorizer, principals, resources, change


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--screenshot", metavar="PNG")
    args = parser.parse_args()
    authorizer, principals, resources, change = estate()
    # The ACLs after the change, judged with the same super users (those of `authorizer`).
    after = [stored.binding for stored in authorizer.stored_acls()] + change
    html_report(authorizer, principals, resources, args.report, after=after)
    print(f"wrote {args.report}")
    if args.screenshot:
        import pathlib

        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            fraud = sorted(principals).index(("User:fraud-consumer", "10.1.0.1"))
            page.goto(pathlib.Path(args.report).resolve().as_uri() + f"#view=principal&principal={fraud}")
            page.wait_for_selector("body[data-ready=true]")
            page.screenshot(path=args.screenshot, full_page=False)
            browser.close()
        print(f"wrote {args.screenshot}")


if __name__ == "__main__":
    main()
