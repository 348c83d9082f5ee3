"""The audit report on a large estate: writing it, opening it in Chromium, and answering a
principal's and a resource's search, against the report of another commit side by side.

    python benchmarks/bench_report.py                  # the hard estate, this tree vs cdaaca0
    python benchmarks/bench_report.py --rev HEAD~3 --searches 20

The estate is bench_grid_cluster.py's hard one (20,000 principals x 50,000 resources, about
14,000 principal classes and 500,000 exceptions). For each commit a child process writes the
report (timed: the compact grid, the page's data, the file); then Debian's Chromium (Playwright)
opens each page (timed from navigation to the page's ``data-ready``) and runs the searches: a
principal's exact name, then "who may READ" one topic, each timed inside the page from setting the
view to the end of its synchronous render. The commit before issue 31 answers from a sample of
50,000 allowed pairs (its answers are counted as they show, and compared with the grid's), this
one from the whole grid. Prints a Markdown table and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READ = 3  # AclOperation.READ's code
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]

# Run in a child with the commit's tree first on sys.path: its report module writes the page.
_WRITE = """
import json, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
from bench_grid_cluster import hard_estate
authorizer, principals, resources = hard_estate()
import spark_udfs.report as report
started = time.perf_counter()
report.html_report(authorizer, principals, resources, sys.argv[3])
print(json.dumps({"seconds": time.perf_counter() - started, "module": report.__file__}))
"""


def write_report(tree: Path, path: Path) -> dict:
    finished = subprocess.run([sys.executable, "-c", _WRITE, str(tree), str(ROOT / "benchmarks"), str(path)],
                              capture_output=True, text=True, timeout=900, cwd=tempfile.gettempdir())
    if finished.returncode != 0:
        raise SystemExit(f"writing the report of {tree} failed:\n{finished.stderr[-2000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


# One search, timed inside the page: this tree's report renders synchronously on auditReport.set;
# the older one on its search box's input event.
_TIME_NEW = """([view]) => { const t = performance.now(); window.auditReport.set(view);
  return [performance.now() - t, document.getElementById('count').innerText]; }"""
_TIME_OLD = """([needle]) => { const box = document.getElementById('q'); const t = performance.now();
  box.value = needle; box.dispatchEvent(new Event('input'));
  return [performance.now() - t, document.getElementById('count').innerText]; }"""


def measure(browser, path: Path, searches: list[tuple[str, str]], new: bool) -> dict:
    page = browser.new_page()
    started = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    opened = time.perf_counter() - started
    times, answers = [], []
    for kind, value in searches:
        if new:
            view = {"view": "grid", "p": value, "r": "", "op": "", "page": 0} if kind == "principal" else \
                {"view": "grid", "p": "", "r": value, "op": str(READ), "page": 0}
            elapsed, count = page.evaluate(_TIME_NEW, [view])
        else:
            page.select_option("#op", label="READ" if kind == "resource" else "any operation")
            elapsed, count = page.evaluate(_TIME_OLD, [value])
        times.append(elapsed)
        answers.append(count.split(" ")[0])
    page.close()
    return {"open": opened, "median_ms": statistics.median(times), "max_ms": max(times), "answers": answers}


def exact_answers(authorizer, principals, resources, searches) -> list[int]:
    """What each search should count, from the compact grid: a principal search's allowed pairs,
    a topic search's pairs allowed READ."""
    import numpy as np

    from spark_udfs.compact import CompactGrid
    from spark_udfs.evaluator import CompiledAcls

    compact = CompactGrid.build(CompiledAcls.from_authorizer(authorizer), principals, resources)
    readers = compact.principals_allowed(1 << READ)[compact.resource_class]
    answers = []
    for kind, value in searches:
        if kind == "principal":
            chosen = [i for i, (name, host) in enumerate(principals) if value.lower() in f"{name} {host}".lower()]
            answers.append(sum(int(np.count_nonzero(compact.row(i))) for i in chosen))
        else:
            answers.append(int(sum(readers[j] for j, (_, name) in enumerate(resources) if value.lower() in name.lower())))
    return answers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="cdaaca0", help="the commit to compare with (default: before issue 31)")
    parser.add_argument("--searches", type=int, default=10, help="principals and topics searched, each")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_grid_cluster import hard_estate
    from playwright.sync_api import sync_playwright

    authorizer, principals, resources = hard_estate()
    rng = random.Random(31)
    searches = [("principal", name) for name, _ in rng.sample(principals, args.searches)]
    searches += [("resource", name) for kind, name in rng.sample(resources, 4 * args.searches) if kind == "TOPIC"][: args.searches]
    truth = exact_answers(authorizer, principals, resources, searches)
    workdir = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        old_tree = workdir / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old_tree), args.rev],
                       check=True, capture_output=True)
        rows = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=BROWSER_ARGS)
            for label, tree, new in (("this tree", ROOT, True), (args.rev, old_tree, False)):
                path = workdir / f"{'new' if new else 'old'}.html"
                written = write_report(tree, path)
                seen = measure(browser, path, searches, new)
                rows.append((label, written["seconds"], path.stat().st_size / 2**20, seen))
            browser.close()
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(workdir / "old")], capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}")
    print(f"estate: {len(principals):,} principals x {len(resources):,} resources; {args.searches} principals and {args.searches} topics searched\n")
    print("| report of | write (s) | page (MiB) | open in Chromium (s) | search, median (ms) | search, max (ms) | answers (principal searches, then READ on topics) |")
    print("|---|---|---|---|---|---|---|")
    for label, seconds, size, seen in rows:
        print(f"| {label} | {seconds:.2f} | {size:.1f} | {seen['open']:.2f} | {seen['median_ms']:.1f} | {seen['max_ms']:.1f} | {', '.join(seen['answers'])} |")
    print(f"| the grid itself | | | | | | {', '.join(f'{n:,}' for n in truth)} |")
    new, old = rows[0][3], rows[1][3]
    print(f"\nratios (this tree / {args.rev}): open {new['open'] / old['open']:.2f}x, search median {new['median_ms'] / max(old['median_ms'], 1e-3):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
