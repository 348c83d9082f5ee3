"""The audit report on a large estate: writing it, opening it in Chromium, and answering a
principal's and a resource's search, against the report of another commit side by side.

    python benchmarks/bench_report.py                  # the hard estate, this tree vs cdaaca0
    python benchmarks/bench_report.py --rev HEAD~3 --searches 20
    python benchmarks/bench_report.py --smoke --rev HEAD --searches 2   # a small estate: does it work?

The estate is bench_grid_cluster.py's hard one (20,000 principals x 50,000 resources, about
14,000 principal classes and 500,000 exceptions). For each commit a child process writes the
report (timed: the compact grid, the page's data, the file); then Debian's Chromium (Playwright)
opens each page (timed from navigation to the page's ``data-ready``) and runs the searches: a
principal's exact name, then "who may READ" one topic, each timed inside the page from setting the
view to the end of its synchronous render. The commit before issue 31 answers from a sample of
50,000 allowed pairs (its answers are counted as they show, and compared with the grid's), this
one from the whole grid (which of the two a page is, it says itself: ``window.auditReport``).
Prints a Markdown table and the machine.

``--smoke``: the hard estate's shape at bench_grid_cluster.py's smoke size (6 teams, 500
principals x 1,000 resources), to check that the script works; its numbers mean little.

``--estate part`` (issue 42): the 2,000 x 5,000 part of bench_grid_cluster.py's 10,000-ACL team
estate (the part whose dense cells it times) instead of the hard estate; ``--writes N`` writes each
commit's report N times, the commits alternating, each in a fresh process, and reports the
median, of the wall time and of the process's CPU time (on a shared machine the CPU time is the
steadier: other processes' load stretches the wall time, not this one's CPU time).

    python benchmarks/bench_report.py --estate part --rev HEAD --writes 9 --searches 5
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
import bench_report
authorizer, principals, resources = bench_report.estate_of(sys.argv[5], sys.argv[4])
import spark_udfs.report as report
started, cpu = time.perf_counter(), time.process_time()
report.html_report(authorizer, principals, resources, sys.argv[3])
print(json.dumps({"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu, "module": report.__file__}))
"""


ESTATES = ("hard", "part")


def estate_of(name: str, size_name: str):
    """The estate a report is written of (authorizer, principals, resources): ``hard``, the
    hard estate; ``part``, the part of the team estate of 10,000 ACLs (300 at the smoke size)
    whose dense cells bench_grid_cluster.py times. ``size_name``: an EstateSize's (FULL, SMOKE)."""
    import bench_grid_cluster

    size = getattr(bench_grid_cluster, size_name)
    if name == "hard":
        return bench_grid_cluster.hard_estate(size=size)
    authorizer, principals, resources = bench_grid_cluster.estate(10_000 if size_name == "FULL" else 300, size=size)
    part_principals, part_resources = size.dense_part
    return authorizer, principals[:part_principals], resources[:part_resources]


def write_report(tree: Path, path: Path, size: str, estate: str) -> dict:
    """``size``: the name of an EstateSize in bench_grid_cluster.py (FULL, SMOKE); ``estate``: one of ESTATES."""
    finished = subprocess.run([sys.executable, "-c", _WRITE, str(tree), str(ROOT / "benchmarks"), str(path), size, estate],
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


def measure(browser, path: Path, searches: list[tuple[str, str]]) -> dict:
    page = browser.new_page()
    started = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    opened = time.perf_counter() - started
    new = page.evaluate("() => 'auditReport' in window")  # this tree's page, or one from before issue 31
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
    parser.add_argument("--smoke", action="store_true", help="a small estate of the hard one's shape: does the script work?")
    parser.add_argument("--estate", choices=ESTATES, default="hard",
                        help="hard: the hard estate; part: the 2,000 x 5,000 part of the 10,000-ACL team estate")
    parser.add_argument("--writes", type=int, default=1, help="reports written per commit, alternating (the median is shown)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from compare_revisions import revision_worktree
    from playwright.sync_api import sync_playwright

    size = "SMOKE" if args.smoke else "FULL"
    authorizer, principals, resources = estate_of(args.estate, size)
    rng = random.Random(31)
    searches = [("principal", name) for name, _ in rng.sample(principals, args.searches)]
    searches += [("resource", name) for kind, name in rng.sample(resources, 4 * args.searches) if kind == "TOPIC"][: args.searches]
    truth = exact_answers(authorizer, principals, resources, searches)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as scratch, revision_worktree(args.rev) as old_tree:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=BROWSER_ARGS)
            commits = (("this tree", ROOT, "new"), (args.rev, old_tree, "old"))
            writes: dict[str, list[dict]] = {name: [] for _, _, name in commits}
            for write in range(args.writes):
                for _, tree, name in commits[::1 if write % 2 == 0 else -1]:
                    writes[name].append(write_report(tree, Path(scratch) / f"{name}.html", size, args.estate))
            for label, _, name in commits:
                path = Path(scratch) / f"{name}.html"
                seen = measure(browser, path, searches)
                seconds = [statistics.median(written[key] for written in writes[name]) for key in ("seconds", "cpu_seconds")]
                rows.append((label, *seconds, path.stat().st_size, seen))
            browser.close()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}")
    print(f"estate ({args.estate}): {len(principals):,} principals x {len(resources):,} resources, {len(authorizer.index):,} ACLs; "
          f"{args.searches} principals and {args.searches} topics searched\n")
    print(f"| report of | write (s, median of {args.writes}) | write, CPU (s) | page (MiB) | open in Chromium (s) | search, median (ms) | search, max (ms) | answers (principal searches, then READ on topics) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, seconds, cpu_seconds, size, seen in rows:
        print(f"| {label} | {seconds:.3f} | {cpu_seconds:.3f} | {size / 2**20:.2f} | {seen['open']:.2f} | {seen['median_ms']:.1f} | "
              f"{seen['max_ms']:.1f} | {', '.join(seen['answers'])} |")
    print(f"| the grid itself | | | | | | | {', '.join(f'{n:,}' for n in truth)} |")
    (_, new_write, new_cpu, new_size, new), (_, old_write, old_cpu, old_size, old) = rows
    print(f"\nratios (this tree / {args.rev}): write {new_write / old_write:.2f}x (CPU {new_cpu / old_cpu:.2f}x), "
          f"page {new_size / old_size:.3f}x, open {new['open'] / old['open']:.2f}x, "
          f"search median {new['median_ms'] / max(old['median_ms'], 1e-3):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
